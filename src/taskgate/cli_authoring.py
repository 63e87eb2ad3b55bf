"""The CLI's first steps on a project: write a spec and tasks, set the project's verification
commands and conventions, and read a task whole. Talks to REST like every command.

None of these asks a person at the terminal: each does only what an agent key may do itself over
MCP (create_spec, create_task, set_execution_defaults, get_task), so a terminal check would stop
nothing and only make the README's steps and a human's scripts heavier. What stays human-only is
what makes a spec or a task count: approving the spec, switching verification on, the verifier
config, accepting (cli.py's `human_only` commands). A spec made here is a draft until approved.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from taskgate.client import Client
from taskgate.domain.errors import TaskgateError
from taskgate.domain.spec_markdown import parse_criteria, parse_spec_markdown


class InputError(Exception):
    """A file the command was given does not say what it must; nothing was sent."""

    code = "E_VALIDATION"


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).expanduser().read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


def _json(text: str, source: str, shape: type, wrong: str) -> Any:
    """`text` parsed as JSON of `shape` (dict or list), else InputError naming `source`."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{source}: not valid JSON: {exc}") from None
    if not isinstance(value, shape):
        raise InputError(f"{source}: {wrong}")
    return value


def spec_body(text: str, source: str) -> dict[str, Any]:
    """The REST body of a spec file: Markdown (domain/spec_markdown.py), or the JSON body
    itself (`{"title", "body", "risk", "criteria": [{"text", "kind", "verify_ref"}]}`)."""
    if text.lstrip().startswith("{"):
        body: dict[str, Any] = _json(text, source, dict, "a JSON spec is one object")
        return body
    try:
        spec = parse_spec_markdown(text)
    except TaskgateError as exc:
        raise InputError(f"{source}: {exc.message}") from None
    return {
        "title": spec.title,
        "body": spec.body,
        "risk": spec.risk.value,
        "criteria": [c.model_dump(mode="json", exclude_none=True) for c in spec.criteria],
    }


def criteria_body(text: str, source: str) -> list[dict[str, Any]]:
    """A task's own criteria: a JSON list, or Markdown `- (kind) text — \\`ref\\`` lines."""
    if text.lstrip().startswith("["):
        items: list[dict[str, Any]] = _json(text, source, list, "JSON criteria are a list")
        return items
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    try:
        return [c.model_dump(mode="json", exclude_none=True) for c in parse_criteria(lines)]
    except TaskgateError as exc:
        raise InputError(f"{source}: {exc.message}") from None


# scheme://..., user@host:path, or host.name:path (git's scp-like syntax)
_URL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|[^/@:]+@[^/:]+:|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+:)")


def checked_repo(repo: str) -> str:
    """`project create --repo`: a URL as given; a local path must be a git repository, and is
    sent as an absolute path (the verifier fetches from it, wherever it runs from)."""
    if _URL.match(repo):
        return repo
    path = Path(repo).expanduser().resolve()
    if not path.is_dir():
        raise InputError(f"--repo {repo}: no such directory (give a git repository's path or its URL)")
    done = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--git-dir"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise InputError(
            f"--repo {repo}: {path} is not a git repository (run `git init` there, or give the repository's URL)"
        )
    return str(path)


# -- commands ----------------------------------------------------------------------------------


def cmd_spec_create(args: argparse.Namespace, client: Client) -> tuple[Any, str]:
    body = spec_body(_read(args.file), args.file if args.file != "-" else "stdin")
    spec = client.call("POST", f"/api/projects/{args.project}/specs", body)
    ids = ", ".join(f"{c['id']} ({c['kind']})" for c in spec["criteria"])
    return spec, (
        f"created {spec['id']} ({spec['status']}, risk {spec['risk']}): {spec['title']}\n"
        f"  criteria: {ids}\n"
        f"  a person approves it: taskgate spec approve {spec['id']} --project {args.project}"
    )


def cmd_task_create(args: argparse.Namespace, client: Client) -> tuple[Any, str]:
    body: dict[str, Any] = {"title": args.title, "description": args.description, "priority": args.priority}
    if args.spec:
        body["spec_id"] = args.spec
    if args.criterion:
        body["spec_criteria"] = args.criterion
    if args.criteria_file:
        body["criteria"] = criteria_body(_read(args.criteria_file), args.criteria_file)
    if args.blocked_by:
        body["blocked_by"] = args.blocked_by
    if args.risk:
        body["risk"] = args.risk
    if args.command:
        body["verification_commands"] = args.command
    out = client.call("POST", f"/api/projects/{args.project}/tasks", body)
    t = out["task"]
    lines = [f"created {t['id']} ({t['status']}, priority {t['priority']}, risk {t['risk']}): {t['title']}"]
    if t["status"] == "backlog" and t.get("spec_id"):
        lines.append(f"  it becomes ready once {t['spec_id']} is approved")
    if t["status"] == "blocked":
        lines.append(f"  it becomes ready once {', '.join(t['blocked_by'])} are done")
    lines += [f"warning: {w}" for w in out.get("warnings") or []]
    return out, "\n".join(lines)


def cmd_project_defaults(args: argparse.Namespace, client: Client) -> tuple[Any, str]:
    if args.command is None and args.convention is None:
        p = client.call("GET", f"/api/projects/{args.project}")
    else:
        body = {"verification_commands": args.command, "conventions": args.convention}
        p = client.call("PUT", f"/api/projects/{args.project}/execution-defaults", body)
    d = p["execution_defaults"]
    lines = [f"project {p['name']}: what an agent's brief says to run and follow"]
    lines += [f"  command:    {c}" for c in d["verification_commands"]] or ["  (no commands)"]
    lines += [f"  convention: {c}" for c in d["conventions"]]
    lines.append(f"the verifier's checks start from these: taskgate verifier-config draft {p['name']}")
    return p, "\n".join(lines)


def _evidence_line(ev: dict[str, Any]) -> str:
    detail = (ev.get("detail") or ev.get("rationale") or "").strip().splitlines()
    return f"      {ev.get('result', '?'):9} {detail[0][:160] if detail else ''}".rstrip()


def show_text(detail: dict[str, Any], spec: dict[str, Any] | None) -> str:
    """A task as a person reads it at a terminal: criteria with the last run's evidence,
    attempts, findings, runs, notes and history."""
    t = detail["task"]
    runs = detail.get("runs") or []
    last = runs[-1] if runs else None
    held = set(t.get("spec_criteria") or [])
    criteria = [c for c in (spec or {}).get("criteria", []) if not held or c["id"] in held]
    criteria += t.get("criteria") or []
    out = [
        f"{t['id']}  {t['status']}  {t['title']}",
        f"  risk {t['risk']}, priority {t['priority']}, attempts used {t['attempts_used']}"
        + (f", spec {t['spec_id']}" if t.get("spec_id") else "")
        + (f", blocked by {', '.join(t['blocked_by'])}" if t.get("blocked_by") else ""),
    ]
    if t.get("needs_human"):
        out.append(f"  waits for a human: {t['needs_human'].get('text') or t['needs_human']}")
    if t.get("claim"):
        c = t["claim"]
        out.append(f"  held by {c['actor']} (attempt {c['attempt']}) until {c['expires_at']}")
    out.append("criteria" + (f" (evidence of run {last['id']}, {last['status']}):" if last else ":"))
    evidence = (last or {}).get("evidence") or {}
    for c in criteria:
        ref = f"  `{c['verify_ref']}`" if c.get("verify_ref") else ""
        out.append(f"  {c['id']} ({c['kind']}) {c['text']}{ref}")
        if c["id"] in evidence:
            out.append(_evidence_line(evidence[c["id"]]))
    if t.get("attempts"):
        out.append("attempts:")
        for a in t["attempts"]:
            sub = a.get("submission") or {}
            commit = f", commit {sub['commit_sha'][:12]}" if sub.get("commit_sha") else ""
            out.append(f"  #{a['number']} {a['actor']}: {a['state']}{commit}")
    if t.get("findings"):
        out.append("findings:")
        for f in t["findings"]:
            out.append(f"  attempt {f.get('attempt')}, {f['source']} {f['by']}: {f['summary']}")
            out += [f"    - {d}" for d in f.get("details") or []]
    if runs:
        out.append("verification runs:")
        for r in runs:
            checks = ", ".join(
                f"{name} exit {c.get('exit_code')}" for name, c in (r.get("checks") or {}).items()
            )
            out.append(
                f"  {r['id']} attempt {r['attempt']} {r['commit_sha'][:12]}: {r['status']}"
                + (f" ({checks})" if checks else "")
                + (f" — {r['summary']}" if r.get("summary") else "")
            )
    if detail.get("notes"):
        out.append("notes:")
        out += [f"  {n['at']}  {n['author']}: {n['body']}" for n in detail["notes"]]
    out.append("history:")
    out += [
        f"  {e['at']}  {e['action']}  {e.get('from_status') or ''} -> {e.get('to_status') or ''}  {e['actor']}"
        for e in detail.get("history", [])
    ]
    return "\n".join(out)


def cmd_task_show(args: argparse.Namespace, client: Client) -> tuple[Any, str]:
    detail = client.call("GET", f"/api/tasks/{args.id}")
    t = detail["task"]
    spec = (
        client.call("GET", f"/api/projects/{t['project']}/specs/{t['spec_id']}") if t.get("spec_id") else None
    )
    return {**detail, "spec": spec}, show_text(detail, spec)


# -- parsers -----------------------------------------------------------------------------------


def register(
    spec: Any,  # argparse's _SubParsersAction: private type
    task: Any,
    project: Any,
    common: argparse.ArgumentParser,
    run: Any,
) -> None:
    """Add the commands to the CLI's `spec`, `task` and `project` groups; `run(cmd)` wraps a
    command into the CLI's (args) -> None shape (its client and output)."""
    sc = spec.add_parser(
        "create",
        parents=[common],
        help="create a draft spec from a Markdown file (the shape `spec export` writes)",
        description="The file: a `# Title` line, `risk: low|medium|high`, the body, then "
        "`## Acceptance criteria` with one `- (test|command|review) text — `verify_ref`` item "
        "per criterion (review criteria have no ref). A JSON file with the REST body works too.",
    )
    sc.add_argument("project")
    sc.add_argument("--file", required=True, help="the spec (Markdown or JSON; - for stdin)")
    sc.set_defaults(func=run(cmd_spec_create))

    tc = task.add_parser(
        "create",
        parents=[common],
        help="create a task: from a spec's criteria, or with criteria of its own",
        description="A task holds an approved spec's criteria (--spec, all of them or the "
        "--criterion ones) and/or its own (--criteria-file: `- (kind) text — `ref`` lines or a "
        "JSON list). It is ready at once if its spec is approved and nothing blocks it.",
    )
    tc.add_argument("project")
    tc.add_argument("--title", required=True)
    tc.add_argument("--description", default="")
    tc.add_argument("--spec", default=None, help="SPEC-<n> whose criteria it holds")
    tc.add_argument(
        "--criterion", action="append", metavar="AC-n.m", help="hold only these of the spec's (repeatable)"
    )
    tc.add_argument("--criteria-file", default=None, help="criteria of its own (Markdown list or JSON)")
    tc.add_argument(
        "--blocked-by", action="append", metavar="TASK", help="ready once TASK is done (repeatable)"
    )
    tc.add_argument("--priority", type=int, default=0, help="higher is claimed first (default 0)")
    tc.add_argument("--risk", choices=["low", "medium", "high"], default=None, help="without a spec")
    tc.add_argument(
        "--command", action="append", help="verification command for this task's brief (repeatable)"
    )
    tc.set_defaults(func=run(cmd_task_create))

    pd = project.add_parser(
        "defaults",
        parents=[common],
        help="show or set the project's verification commands and conventions",
        description="Agents' briefs carry these; `taskgate verifier-config draft` starts the "
        "verifier's checks from the commands. Given flags replace the whole list they name.",
    )
    pd.add_argument("project")
    pd.add_argument("--command", action="append", help="a verification command (repeatable)")
    pd.add_argument("--convention", action="append", help="a convention agents follow (repeatable)")
    pd.set_defaults(func=run(cmd_project_defaults))
