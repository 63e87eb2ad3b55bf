"""The `taskgate` command. Everything but `serve` and `demo` (which runs its own serve) talks to the REST API (local or cloud)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from taskgate import __version__, presence
from taskgate import cli_authoring as authoring
from taskgate.client import DEFAULT_DATA_DIR, DEFAULT_SERVER, ApiError, Client, resolve_token
from taskgate.demo import tour as demo

Out = Callable[[Any, str], None]


def _client(args: argparse.Namespace) -> Client:
    data_dir = Path(args.data_dir) if getattr(args, "data_dir", None) else None
    return Client(args.server, resolve_token(args.token, data_dir))


def _emit(args: argparse.Namespace, payload: Any, text: str) -> None:
    if args.json:
        print(json.dumps(payload, indent=None, sort_keys=True))
    else:
        print(text)


def _authored(
    cmd: Callable[[argparse.Namespace, Client], tuple[Any, str]],
) -> Callable[[argparse.Namespace], None]:
    """A cli_authoring command (args, client) -> (payload, text), as a CLI command."""

    def run(args: argparse.Namespace) -> None:
        payload, text = cmd(args, _client(args))
        _emit(args, payload, text)

    return run


# -- commands ----------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> None:
    from taskgate.local.serve import ServeOptions, serve

    if args.store == "dynamodb" and not args.table:
        raise SystemExit("taskgate serve: --store dynamodb needs --table")
    serve(
        ServeOptions(
            data_dir=Path(args.data_dir).expanduser(),
            host=args.host,
            port=args.port,
            store=args.store,
            table=args.table or "",
            endpoint_url=args.endpoint_url,
            admin_name=args.admin_name,
            workers=max(1, args.workers),
        )
    )


def cmd_project_create(args: argparse.Namespace) -> None:
    body = {"name": args.name, "repo": args.repo, "description": args.description or ""}
    p = _client(args).call("POST", "/api/projects", body)
    _emit(args, p, f"created project {p['name']} (repo {p.get('repo') or '-'})")


def cmd_project_list(args: argparse.Namespace) -> None:
    out = _client(args).call("GET", "/api/projects")
    items = out["items"] if isinstance(out, dict) else out
    _emit(args, out, "\n".join(f"{p['name']}\t{p.get('repo', '')}" for p in items) or "(no projects)")


def cmd_key_create(args: argparse.Namespace) -> None:
    body: dict[str, Any] = {"kind": args.kind, "name": args.name, "projects": args.project or []}
    if args.kind == "agent":
        body["role"] = args.role
        body["delegations"] = args.delegate or []
    else:
        body["verifier_kind"] = args.verifier_kind
    out = _client(args).call("POST", "/api/keys", body)
    if args.key_only:  # for `export VAR=$(taskgate key create ...)`: the confirmation is on the terminal
        print(out["key"])
        return
    cred = out["credential"]
    text = (
        f"created {cred['kind']} key {cred['id']} for {cred['name']}\n"
        f"key (shown once, store it now): {out['key']}"
    )
    _emit(args, out, text)


def cmd_key_list(args: argparse.Namespace) -> None:
    out = _client(args).call("GET", "/api/keys")
    items = out["items"] if isinstance(out, dict) else out
    lines = [
        f"{k['id']}\t{k['kind']}\t{k['name']}\t{k.get('role') or k.get('verifier_kind') or ''}\t"
        f"{'revoked' if k.get('revoked_at') else 'live'}\t{','.join(k.get('projects') or []) or '*'}"
        for k in items
    ]
    _emit(args, out, "\n".join(lines) or "(no keys)")


def cmd_key_revoke(args: argparse.Namespace) -> None:
    out = _client(args).call("POST", f"/api/keys/{args.id}/revoke")
    warnings = out.get("warnings") or []
    _emit(args, out, "\n".join([f"revoked {args.id}", *[f"warning: {w}" for w in warnings]]))


MCP_401 = (
    "If the client reports 'Server returned an error response' (or HTTP 401): /mcp refused the key. "
    "It is mistyped, revoked, not an agent key, or not sent as 'Authorization: Bearer tga_...'. "
    "`taskgate key list` shows which keys are live; a human mints a new one with `taskgate key create agent`."
)


def cmd_mcp_config(args: argparse.Namespace) -> None:
    url = args.server.rstrip("/") + "/mcp"
    key = args.key or "$TASKGATE_AGENT_KEY"
    config = {
        "mcpServers": {args.name: {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {key}"}}}
    }
    claude = f'claude mcp add --transport http {args.name} {url} --header "Authorization: Bearer {key}"'
    text = (
        "# Claude Code:\n"
        f"{claude}\n\n"
        "# Any MCP client (Streamable HTTP), e.g. .mcp.json:\n"
        f"{json.dumps(config, indent=2)}\n\n"
        f"# {MCP_401}"
    )
    _emit(args, {"url": url, "claude": claude, "config": config, "unauthorized": MCP_401}, text)


def cmd_board(args: argparse.Namespace) -> None:
    """A fresh one-time sign-in link from the running local server (it reads the admin token
    from the data dir, so nobody copies it), opened in the browser with --open."""
    out = _client(args).call("POST", "/local/sign-in-link")
    if args.open:
        import webbrowser

        webbrowser.open(out["url"])
    minutes = int(out["expires_in"]) // 60
    _emit(args, out, f"{out['url']}\n(one-time sign-in link for the board, valid {minutes} min)")


def cmd_task_accept(args: argparse.Namespace) -> None:
    t = _client(args).call("POST", f"/api/tasks/{args.id}/accept")
    _emit(args, t, f"{t['id']} is {t['status']}")


def cmd_task_reopen(args: argparse.Namespace) -> None:
    t = _client(args).call("POST", f"/api/tasks/{args.id}/reopen", {"findings": args.finding})
    _emit(args, t, f"{t['id']} is {t['status']}")


def cmd_task_cancel(args: argparse.Namespace) -> None:
    t = _client(args).call("POST", f"/api/tasks/{args.id}/cancel", {"reason": args.reason or ""})
    _emit(args, t, f"{t['id']} is {t['status']}")


def cmd_task_resolve(args: argparse.Namespace) -> None:
    body = {"resolution": args.resolution, "blocked_by": args.blocked_by, "note": args.note}
    t = _client(args).call("POST", f"/api/tasks/{args.id}/resolve", body)
    _emit(args, t, f"{t['id']} is {t['status']}")


def cmd_task_list(args: argparse.Namespace) -> None:
    out = _client(args).call("GET", f"/api/projects/{args.project}/tasks", query={"status": args.status})
    lines = [f"{t['id']}\t{t['status']}\t{t['priority']}\t{t['title']}" for t in out["items"]]
    _emit(args, out, "\n".join(lines) or "(no tasks)")


def cmd_verification(args: argparse.Namespace) -> None:
    out = _client(args).call("PUT", f"/api/projects/{args.project}/verification", {"on": args.state == "on"})
    _emit(args, out, f"verification is {'on' if out['on'] else 'off'} for {args.project}")


def cmd_verifier_config(args: argparse.Namespace) -> None:
    path = f"/api/projects/{args.project}/verifier-config"
    if args.action == "set":
        config = json.loads(Path(args.file).read_text() if args.file != "-" else sys.stdin.read())
        out = _client(args).call("PUT", path, config)
    elif args.action == "draft":
        # Start from project commands: print the draft config (pipe it to a file, review, `set` it)
        # and its notes on stderr, so stdout stays valid JSON.
        draft = _client(args).call("GET", f"{path}/draft")
        for note in draft["notes"]:
            print(f"note: {note}", file=sys.stderr)
        print(json.dumps(draft if args.json else draft["config"], indent=2))
        return
    else:
        out = _client(args).call("GET", path)
    _emit(args, out, json.dumps(out, indent=2))


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 3600, got {value!r}")
    return seconds


def cmd_verify(args: argparse.Namespace) -> int:
    import signal

    from taskgate.domain.verifier_config import IMAGE_VAR
    from taskgate.verifier.hardening import HardeningError, isolate
    from taskgate.verifier.sandbox import SandboxError
    from taskgate.verifier.worker import Worker, options_from_env

    if args.task and (args.once or args.project):
        raise SystemExit("taskgate verify: --task verifies one task; it goes without --once and --project")
    if args.drain and (args.task or args.once):
        raise SystemExit(
            "taskgate verify: --drain verifies until the queue stays empty; it goes without --task and --once"
        )
    if args.idle_exit is not None and not args.drain:
        raise SystemExit("taskgate verify: --idle-exit goes with --drain")

    def stop(*_: object) -> None:
        raise KeyboardInterrupt  # SIGTERM (a container stopping) ends a run like Ctrl-C does

    # Started with `&` from a script or under nohup, SIGINT arrives ignored and Python keeps it
    # so: Ctrl-C (or `kill -INT`) must still stop a run.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)
    opts = options_from_env(
        server=args.server,
        once=args.once,
        task=args.task,
        project=args.project,
        interval_s=args.interval,
        json_lines=args.json,
        drain=args.drain,
        idle_exit_s=args.idle_exit if args.idle_exit is not None else 30.0,
    )
    # A cloud verifier task's slot among its project's verifiers: its lease is renewed through
    # the table, with the task role's credentials, which are resolved here before they leave
    # the environment with the keys.
    slot = None
    if args.drain and os.environ.get("TASKGATE_DRAIN_LEASE"):
        from taskgate.cloud.drain_lease import lease_from_env

        slot = lease_from_env(os.environ)
    # The image this verifier runs in (the task definition sets it) is no secret, but it shares
    # the TASKGATE_ prefix that isolate() clears from the environment: keep it for the worker.
    image = os.environ.get(IMAGE_VAR)
    try:  # the keys are read: they leave the environment, and root is left
        sandbox = isolate(check_user=args.check_user, worker_user=args.worker_user)
    except (HardeningError, SandboxError) as exc:
        raise SystemExit(f"taskgate verify: {exc}") from None
    env = {**os.environ, **({IMAGE_VAR: image} if image else {})}
    return Worker(dataclasses.replace(opts, sandbox=sandbox, slot=slot), env=env).main()


def cmd_spec_approve(args: argparse.Namespace) -> None:
    out = _client(args).call("POST", f"/api/projects/{args.project}/specs/{args.spec}/approve")
    moved = out.get("moved") or []
    _emit(args, out, f"approved {args.spec}" + (f"; ready now: {', '.join(moved)}" if moved else ""))


def cmd_spec_export(args: argparse.Namespace) -> None:
    out = _client(args).call("GET", f"/api/projects/{args.project}/specs/{args.spec}/markdown")
    target = Path(args.repo) / out["path"]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(out["markdown"])
    _emit(args, {**out, "written": str(target)}, f"wrote {target}")


# -- human presence (presence.py) -------------------------------------------------------------

PERSON = "asks a person at the terminal"
PERSON_NOTE = (
    "This command changes something as the human, so it asks a person at the controlling terminal "
    "to confirm it; without a terminal it is refused (E_HUMAN_PRESENCE, exit 3). The board "
    "(`taskgate board`) does the same without a terminal."
)
YES_HELP = (
    "for a script of your own: do not ask. Counts only with a token given explicitly (--token or "
    "TASKGATE_TOKEN), never with the admin token read from the data dir"
)
KEY_ONLY = "print only the key, e.g. for `export TASKGATE_VERIFIER_KEY=$(taskgate key create ...)`"
RESOLUTIONS = {
    "requeue": "requeue: back to ready for another attempt",
    "block": "block it on {blocked_by}: ready again once that is done",
    "revise_spec": "back to backlog: its spec becomes a draft to revise and approve again",
    "reverify": "verify its last submission again",
    "cancel": "cancel it",
}
Describe = Callable[[argparse.Namespace], "presence.Action | None"]


def human_only(parser: argparse.ArgumentParser, describe: Describe) -> argparse.ArgumentParser:
    """Mark a command that writes as the human: before anything is sent, main() has a person at
    the terminal confirm what `describe` says it will do (None: this use of it only reads)."""
    parser.add_argument("--yes", action="store_true", help=YES_HELP)
    parser.set_defaults(presence=describe)
    parser.description = f"{parser.description}\n\n{PERSON_NOTE}" if parser.description else PERSON_NOTE
    return parser


def _scope(projects: list[str] | None) -> str:
    return f"project{'s' if len(projects) > 1 else ''} {', '.join(projects)}" if projects else "every project"


def _project_create_action(a: argparse.Namespace) -> presence.Action:
    a.repo = authoring.checked_repo(a.repo)  # before anyone is asked anything
    return presence.Action(f"create project {a.name} (repo {a.repo})", a.name)


def _key_action(a: argparse.Namespace) -> presence.Action:
    if a.kind == "agent":
        what = f"mint agent key {a.name} ({a.role}) for {_scope(a.project)}"
        detail = f"it may act on behalf of {', '.join(a.delegate)}" if a.delegate else ""
    else:
        what = f"mint {a.verifier_kind} verifier key {a.name} for {_scope(a.project)}"
        detail = (
            "a local verifier key records the evidence that makes work verified"
            if a.verifier_kind == "local"
            else "a reviewer key judges review criteria"
        )
    return presence.Action(what, a.name, detail)


def _resolve_action(parser: argparse.ArgumentParser) -> Describe:
    def describe(a: argparse.Namespace) -> presence.Action:
        if (a.resolution == "block") != bool(a.blocked_by):
            parser.error(
                "--block goes with --blocked-by TASK (repeatable), and --blocked-by only with --block"
            )
        how = RESOLUTIONS[a.resolution].format(blocked_by=", ".join(a.blocked_by or []))
        return presence.Action(f"resolve {a.id} ({how})", a.id, f"note: {a.note}" if a.note else "")

    return describe


# -- parser ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--server",
        default=os.environ.get("TASKGATE_SERVER", DEFAULT_SERVER),
        help="taskgate URL (env TASKGATE_SERVER; default %(default)s)",
    )
    common.add_argument(
        "--token", default=None, help="bearer token (env TASKGATE_TOKEN; default: the local admin token)"
    )
    common.add_argument(
        "--data-dir", default=None, help="local data dir holding admin-token (default ~/.taskgate)"
    )
    common.add_argument("--json", action="store_true", help="print one JSON object")

    p = argparse.ArgumentParser(
        prog="taskgate",
        description="Task board and verification gate for AI coding agents.",
        epilog="Commands that change something as the human (project create, key create and revoke, "
        "task accept, reopen, cancel and resolve, verification on/off, verifier-config set, spec "
        "approve) ask a person at the controlling terminal to confirm; without one they are refused "
        "with E_HUMAN_PRESENCE (exit 3), so an agent in your shell cannot do them. Do them on the "
        "board (`taskgate board`) or at your terminal. Reading (list, show, get, draft, board, "
        "mcp-config) works anywhere. Your own scripts: see the README's Security model.",
    )
    p.add_argument("--version", action="version", version=f"taskgate {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run MCP, REST API, board and sweeper in one process")
    s.add_argument("--data-dir", default=os.environ.get("TASKGATE_DATA_DIR", str(DEFAULT_DATA_DIR)))
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8765)
    s.add_argument("--store", choices=["sqlite", "dynamodb"], default="sqlite")
    s.add_argument("--table", default=None, help="DynamoDB table (with --store dynamodb)")
    s.add_argument("--endpoint-url", default=None, help="DynamoDB endpoint URL (e.g. DynamoDB Local)")
    s.add_argument(
        "--admin-name",
        default=os.environ.get("USER") or "admin",
        help="the human the admin token stands for (default: $USER)",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=2,
        help="worker threads for REST calls and for MCP tool calls that may wait (lists, batches; "
        "with SQLite the agent's claim/heartbeat/submit calls run on the event loop) (default %(default)s)",
    )
    s.set_defaults(func=cmd_serve)

    demo.register(sub)

    b = sub.add_parser("board", parents=[common], help="print a one-time sign-in link for the local board")
    b.add_argument("--open", action="store_true", help="open it in the default browser")
    b.set_defaults(func=cmd_board)

    proj = sub.add_parser("project", help=f"projects: create ({PERSON}), list, defaults").add_subparsers(
        dest="sub", required=True
    )
    c = proj.add_parser("create", parents=[common], help=f"create a project ({PERSON})")
    c.add_argument("name")
    c.add_argument("--repo", required=True, help="path or URL of the git repository")
    c.add_argument("--description", default="")
    c.set_defaults(func=cmd_project_create)
    human_only(c, _project_create_action)
    proj.add_parser("list", parents=[common], help="list projects").set_defaults(func=cmd_project_list)

    key = sub.add_parser(
        "key", help=f"agent and verifier keys (create, revoke: each {PERSON})"
    ).add_subparsers(dest="sub", required=True)
    kc = key.add_parser("create", help=f"mint a key, shown once ({PERSON})").add_subparsers(
        dest="kind", required=True
    )
    ka = kc.add_parser("agent", parents=[common], help=f"an agent key ({PERSON})")
    ka.add_argument("name")
    ka.add_argument("--role", choices=["executor", "architect"], default="executor")
    ka.add_argument("--project", action="append", help="limit to a project (repeatable; default all)")
    ka.add_argument("--delegate", action="append", help="human:<name> this key may act for (repeatable)")
    ka.add_argument("--key-only", action="store_true", help=KEY_ONLY)
    ka.set_defaults(func=cmd_key_create)
    human_only(ka, _key_action)
    kv = kc.add_parser("verifier", parents=[common], help=f"a verifier key ({PERSON})")
    kv.add_argument("name", nargs="?", default="verifier")
    kv.add_argument("--kind", dest="verifier_kind", choices=["local", "reviewer"], required=True)
    kv.add_argument("--project", action="append", help="limit to a project (repeatable; default all)")
    kv.add_argument("--key-only", action="store_true", help=KEY_ONLY)
    kv.set_defaults(func=cmd_key_create)
    human_only(kv, _key_action)
    key.add_parser("list", parents=[common], help="list keys").set_defaults(func=cmd_key_list)
    kr = key.add_parser("revoke", parents=[common], help=f"revoke a key ({PERSON})")
    kr.add_argument("id")
    kr.set_defaults(func=cmd_key_revoke)
    human_only(kr, lambda a: presence.Action(f"revoke key {a.id}", a.id))

    m = sub.add_parser("mcp-config", parents=[common], help="print MCP client configuration")
    m.add_argument("--name", default="taskgate")
    m.add_argument(
        "--key", default=None, help="agent key to embed (default: $TASKGATE_AGENT_KEY placeholder)"
    )
    m.set_defaults(func=cmd_mcp_config)

    task = sub.add_parser(
        "task", help=f"tasks: create, list, show; accept, reopen, cancel, resolve (each {PERSON})"
    ).add_subparsers(dest="sub", required=True)
    ta = task.add_parser("accept", parents=[common], help=f"accept submitted or verified work ({PERSON})")
    ta.add_argument("id")
    ta.set_defaults(func=cmd_task_accept)
    human_only(ta, lambda a: presence.Action(f"accept {a.id} (it becomes done)", a.id))
    tr = task.add_parser("reopen", parents=[common], help=f"send work back with findings ({PERSON})")
    tr.add_argument("id")
    tr.add_argument("--finding", action="append", required=True, help="what the next attempt must fix")
    tr.set_defaults(func=cmd_task_reopen)
    human_only(
        tr,
        lambda a: presence.Action(
            f"reopen {a.id} with {len(a.finding)} finding{'s' if len(a.finding) > 1 else ''}", a.id
        ),
    )
    tc = task.add_parser("cancel", parents=[common], help=f"cancel a task ({PERSON})")
    tc.add_argument("id")
    tc.add_argument("--reason", default="")
    tc.set_defaults(func=cmd_task_cancel)
    human_only(
        tc, lambda a: presence.Action(f"cancel {a.id}", a.id, f"reason: {a.reason}" if a.reason else "")
    )
    tv = task.add_parser(
        "resolve",
        parents=[common],
        help=f"answer a task in needs_human ({PERSON})",
        description="Answer a task that waits for a human (needs_human).",
    )
    tv.add_argument("id")
    how = tv.add_mutually_exclusive_group(required=True)
    for flag, resolution, text in [
        ("--requeue", "requeue", "back to ready for another attempt"),
        ("--block", "block", "blocked until the --blocked-by tasks are done"),
        ("--backlog", "revise_spec", "back to backlog: its spec becomes a draft to revise and approve again"),
        ("--reverify", "reverify", "back to needs_verification: the verifier runs its last submission again"),
        ("--cancel", "cancel", "cancel it"),
    ]:
        how.add_argument(flag, dest="resolution", action="store_const", const=resolution, help=text)
    tv.add_argument("--blocked-by", action="append", metavar="TASK", help="with --block (repeatable)")
    tv.add_argument("--note", default="", help="why (kept in the task's history)")
    tv.set_defaults(func=cmd_task_resolve)
    human_only(tv, _resolve_action(tv))
    tl = task.add_parser("list", parents=[common], help="list a project's tasks")
    tl.add_argument("project")
    tl.add_argument("--status", default=None)
    tl.set_defaults(func=cmd_task_list)

    ts = task.add_parser(
        "show", parents=[common], help="a task: criteria with evidence, attempts, findings, runs, history"
    )
    ts.add_argument("id")
    ts.set_defaults(func=_authored(authoring.cmd_task_show))

    vc = sub.add_parser(
        "verifier-config",
        parents=[common],
        help=f"show, draft or set a project's verifier config (set {PERSON})",
        description="get and draft only read; set replaces the config.",
    )
    vc.add_argument("action", choices=["get", "set", "draft"], help="draft: start from project commands")
    vc.add_argument("project")
    vc.add_argument("--file", default="-", help="JSON config for 'set' (default: stdin)")
    vc.set_defaults(func=cmd_verifier_config)
    human_only(
        vc,
        lambda a: (
            presence.Action(
                f"replace the verifier config of project {a.project} with "
                f"{'stdin' if a.file == '-' else a.file} (the commands the verifier runs)",
                a.project,
            )
            if a.action == "set"
            else None
        ),
    )

    vf = sub.add_parser(
        "verify",
        help="run the verifier: re-run submitted work's checks from a clean checkout",
        description="Keys come from the environment: TASKGATE_VERIFIER_KEY (local verifier key), "
        "TASKGATE_REVIEWER_KEY (optional, for review criteria), TASKGATE_GIT_TOKEN (optional, "
        "HTTPS token for a private repository). Default: poll for work until interrupted. "
        "The keys leave the verifier's environment once read and it makes itself non-dumpable; "
        "started as root it never runs a check as root (see --check-user).",
    )
    vf.add_argument(
        "--server",
        default=os.environ.get("TASKGATE_SERVER", DEFAULT_SERVER),
        help="taskgate URL (env TASKGATE_SERVER; default %(default)s)",
    )
    vf.add_argument("--once", action="store_true", help="verify everything waiting, then exit")
    vf.add_argument("--task", default=None, help="verify this one task, then exit")
    vf.add_argument(
        "--project", default=None, help="only this project (default: every project the key covers)"
    )
    vf.add_argument(
        "--interval", type=float, default=30.0, help="seconds between polls (default %(default)s)"
    )
    vf.add_argument(
        "--drain",
        action="store_true",
        help="verify waiting work and what arrives meanwhile; exit once nothing arrived for --idle-exit seconds",
    )
    vf.add_argument(
        "--idle-exit",
        type=_positive_seconds,
        default=None,
        metavar="S",
        help="with --drain: seconds without work before it exits (default 30)",
    )
    vf.add_argument("--json", action="store_true", help="print one JSON line per finished run")
    vf.add_argument(
        "--check-user",
        default=os.environ.get("TASKGATE_CHECK_USER") or None,
        help="started as root: the user every check, command criterion and the reviewer run as "
        "(env TASKGATE_CHECK_USER; default taskgate-check if that user exists, else nobody)",
    )
    vf.add_argument(
        "--worker-user",
        default=os.environ.get("TASKGATE_WORKER_USER") or None,
        help="started as root: the user the verifier itself switches to once it read its keys, "
        "keeping only what it needs to run checks as the check user (env TASKGATE_WORKER_USER; "
        "default: it stays root)",
    )
    vf.set_defaults(func=cmd_verify)

    v = sub.add_parser("verification", parents=[common], help=f"switch verification on or off ({PERSON})")
    v.add_argument("state", choices=["on", "off"])
    v.add_argument("project")
    v.set_defaults(func=cmd_verification)
    human_only(
        v, lambda a: presence.Action(f"switch verification {a.state} for project {a.project}", a.project)
    )

    spec = sub.add_parser("spec", help=f"specs: create, export; approve ({PERSON})").add_subparsers(
        dest="sub", required=True
    )
    sa = spec.add_parser("approve", parents=[common], help=f"approve a draft spec ({PERSON})")
    sa.add_argument("spec")
    sa.add_argument("--project", required=True)
    sa.set_defaults(func=cmd_spec_approve)
    human_only(sa, lambda a: presence.Action(f"approve {a.spec} of project {a.project}", a.spec))
    se = spec.add_parser("export", parents=[common], help="write specs/SPEC-n.md into a repository")
    se.add_argument("spec")
    se.add_argument("--project", required=True)
    se.add_argument("--repo", required=True)
    se.set_defaults(func=cmd_spec_export)
    authoring.register(spec, task, proj, common, _authored)

    from taskgate import cli_attest  # proof of verification: attest key/export/verify, audit verify

    cli_attest.register(sub, common)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # inside the try: a closed pipe shows up here, not at exit
        return code
    except BrokenPipeError:
        # `taskgate board | head -1`: the reader left, which is no error of ours. Point stdout at
        # /dev/null so the interpreter's last flush at exit has nothing to complain about.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a pipeline cut short


def _hint_of(exc: ApiError, args: argparse.Namespace) -> str:
    """What to do next: the server's hint, or ours when the server never answered or no token
    was found to send."""
    code = exc.body.get("code")
    if code == "E_UNREACHABLE":
        return (
            f"is `taskgate serve` running at {args.server}? Start it, or point the CLI elsewhere "
            "with --server URL or TASKGATE_SERVER."
        )
    if code == "E_UNAUTHORIZED" and not (getattr(args, "token", None) or os.environ.get("TASKGATE_TOKEN")):
        where = Path(
            getattr(args, "data_dir", None) or os.environ.get("TASKGATE_DATA_DIR") or DEFAULT_DATA_DIR
        )
        return (
            f"the CLI sends TASKGATE_TOKEN, else the admin token in {where / 'admin-token'}: that file "
            "belongs to the `taskgate serve` you reach (--data-dir, TASKGATE_DATA_DIR)"
        )
    return str(exc.body.get("hint") or "")


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        describe: Describe | None = getattr(args, "presence", None)
        action = describe(args) if describe is not None else None
        if action is not None:
            explicit = bool(args.token or os.environ.get("TASKGATE_TOKEN"))
            presence.require(action, scripted=args.yes, explicit_token=explicit)
        code = args.func(args)
    except presence.Refused as refused:
        if getattr(args, "json", False):
            print(json.dumps({"error": refused.body()}))
        else:
            print(f"error {refused.code}: {refused.message}\nhint: {refused.hint}", file=sys.stderr)
        return presence.EXIT_CODE
    except authoring.InputError as exc:
        if getattr(args, "json", False):
            print(json.dumps({"error": {"code": exc.code, "message": str(exc)}}))
        else:
            print(f"error {exc.code}: {exc}\nnothing was sent", file=sys.stderr)
        return 2
    except ApiError as exc:
        if getattr(args, "json", False):
            print(json.dumps({"error": exc.body, "status": exc.status}))
        else:
            print(f"error {exc.body.get('code', exc.status)}: {exc.body.get('message', '')}", file=sys.stderr)
            hint = _hint_of(exc, args)
            if hint:
                print(f"hint: {hint}", file=sys.stderr)
        return 1
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
