"""`taskgate spec ...`: create a draft, export it into a repository, approve it (the human's).

`spec create`, like `task create` and `project defaults`, asks no person at the terminal: it
does only what an agent key may do itself over MCP, so a terminal check would stop nothing. What
makes a spec count, approving it, is the human's (human.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from taskgate.cli import presence
from taskgate.cli.client import Client
from taskgate.cli.files import read, spec_body
from taskgate.cli.human import PERSON, human_only
from taskgate.cli.output import authored, client, emit


def _commands(spec: dict[str, Any]) -> list[str]:
    """The command criteria a spec holds: approving it lets the verifier run each of them."""
    return [f"{c['id']}: {c['verify_ref']}" for c in spec.get("criteria") or [] if c.get("kind") == "command"]


def cmd_spec_approve(args: argparse.Namespace) -> None:
    api = client(args)
    out = api.call("POST", api.path("api", "projects", args.project, "specs", args.spec, "approve"))
    moved = out.get("moved") or []
    lines = [f"approved {args.spec}" + (f"; ready now: {', '.join(moved)}" if moved else "")]
    commands = _commands(out.get("spec") or getattr(args, "spec_record", None) or {})
    if commands:
        lines.append("the verifier may now run its command criteria:")
        lines += [f"  {c}" for c in commands]
    emit(args, out, "\n".join(lines))


def _check_approve(args: argparse.Namespace) -> None:
    """The spec must exist, and what approving it authorises goes into the prompt."""
    api = client(args)
    args.spec_record = api.call("GET", api.path("api", "projects", args.project, "specs", args.spec))


def _approve_action(a: argparse.Namespace) -> presence.Action:
    spec = getattr(a, "spec_record", None) or {}
    commands = _commands(spec)
    detail = (
        [f"{spec.get('title', '')} (risk {spec.get('risk', '?')}, {spec.get('status', '?')})"] if spec else []
    )
    if commands:
        detail.append("approving it lets the verifier run these commands, as written:")
        detail += [f"  {c}" for c in commands]
    elif spec:
        detail.append("it holds no command criterion: approving it authorises no command")
    return presence.Action(f"approve {a.spec} of project {a.project}", a.spec, "\n".join(detail))


def cmd_spec_export(args: argparse.Namespace) -> None:
    api = client(args)
    out = api.call("GET", api.path("api", "projects", args.project, "specs", args.spec, "markdown"))
    target = Path(args.repo) / out["path"]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(out["markdown"])
    emit(args, {**out, "written": str(target)}, f"wrote {target}")


def cmd_spec_create(args: argparse.Namespace, api: Client) -> tuple[Any, str]:
    body = spec_body(read(args.file), args.file if args.file != "-" else "stdin")
    spec = api.call("POST", api.path("api", "projects", args.project, "specs"), body)
    ids = ", ".join(f"{c['id']} ({c['kind']}{', guard' if c.get('guard') else ''})" for c in spec["criteria"])
    return spec, (
        f"created {spec['id']} ({spec['status']}, risk {spec['risk']}): {spec['title']}\n"
        f"  criteria: {ids}\n"
        f"  a person approves it: taskgate spec approve {spec['id']} --project {args.project}"
    )


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    spec = sub.add_parser("spec", help=f"specs: create, export; approve ({PERSON})").add_subparsers(
        dest="sub", required=True
    )
    sa = spec.add_parser("approve", parents=[common], help=f"approve a draft spec ({PERSON})")
    sa.add_argument("spec")
    sa.add_argument("--project", required=True)
    sa.set_defaults(func=cmd_spec_approve)
    human_only(sa, _approve_action, _check_approve)
    se = spec.add_parser("export", parents=[common], help="write specs/SPEC-n.md into a repository")
    se.add_argument("spec")
    se.add_argument("--project", required=True)
    se.add_argument("--repo", required=True)
    se.set_defaults(func=cmd_spec_export)
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
    sc.set_defaults(func=authored(cmd_spec_create))
