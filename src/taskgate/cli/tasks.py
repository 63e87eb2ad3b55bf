"""`taskgate task ...`: create, list, show; accept, reopen, cancel, resolve (the human's)."""

from __future__ import annotations

import argparse
from typing import Any

from taskgate.cli import presence
from taskgate.cli.client import Client
from taskgate.cli.files import InputError, criteria_body, read
from taskgate.cli.human import PERSON, human_only
from taskgate.cli.output import authored, client, emit
from taskgate.cli.show import show_text
from taskgate.domain.text import plural

RESOLUTIONS = {
    "requeue": "requeue: back to ready for another attempt",
    "block": "block it on {blocked_by}: ready again once that is done",
    "revise_spec": "back to backlog: its spec becomes a draft to revise and approve again",
    "reverify": "verify its last submission again",
    "cancel": "cancel it",
}


def _moved(args: argparse.Namespace, verb: str, body: Any = None) -> None:
    """POST /api/tasks/<id>/<verb> and say where the task is now."""
    api = client(args)
    t = api.call("POST", api.path("api", "tasks", args.id, verb), body)
    emit(args, t, f"{t['id']} is {t['status']}")


def cmd_task_accept(args: argparse.Namespace) -> None:
    """Accept, and say what the acceptance said: a stale verdict is accepted with a warning
    (the project's accept_stale: false refuses it instead, on the server)."""
    api = client(args)
    t = api.call("POST", api.path("api", "tasks", args.id, "accept"))
    emit(
        args,
        t,
        "\n".join([f"{t['id']} is {t['status']}", *(f"warning: {w}" for w in t.get("warnings") or [])]),
    )


def cmd_task_reopen(args: argparse.Namespace) -> None:
    _moved(args, "reopen", {"findings": args.finding})


def cmd_task_cancel(args: argparse.Namespace) -> None:
    _moved(args, "cancel", {"reason": args.reason or ""})


def cmd_task_resolve(args: argparse.Namespace) -> None:
    _moved(args, "resolve", {"resolution": args.resolution, "blocked_by": args.blocked_by, "note": args.note})


def cmd_task_list(args: argparse.Namespace) -> None:
    api = client(args)
    out = api.call("GET", api.path("api", "projects", args.project, "tasks"), query={"status": args.status})
    lines = [f"{t['id']}\t{t['status']}\t{t['priority']}\t{t['title']}" for t in out["items"]]
    emit(args, out, "\n".join(lines) or "(no tasks)")


def cmd_task_create(args: argparse.Namespace, api: Client) -> tuple[Any, str]:
    body: dict[str, Any] = {"title": args.title, "description": args.description, "priority": args.priority}
    if args.spec:
        body["spec_id"] = args.spec
    if args.criterion:
        body["spec_criteria"] = args.criterion
    if args.criteria_file:
        body["criteria"] = criteria_body(read(args.criteria_file), args.criteria_file)
    if args.blocked_by:
        body["blocked_by"] = args.blocked_by
    if args.risk:
        body["risk"] = args.risk
    if args.command:
        body["verification_commands"] = args.command
    out = api.call("POST", api.path("api", "projects", args.project, "tasks"), body)
    t = out["task"]
    lines = [f"created {t['id']} ({t['status']}, priority {t['priority']}, risk {t['risk']}): {t['title']}"]
    if t["status"] == "backlog" and t.get("spec_id"):
        lines.append(f"  it becomes ready once {t['spec_id']} is approved")
    if t["status"] == "blocked":
        lines.append(f"  it becomes ready once {', '.join(t['blocked_by'])} are done")
    lines += [f"warning: {w}" for w in out.get("warnings") or []]
    return out, "\n".join(lines)


def cmd_task_show(args: argparse.Namespace, api: Client) -> tuple[Any, str]:
    detail = api.call("GET", api.path("api", "tasks", args.id))
    t = detail["task"]
    spec = (
        api.call("GET", api.path("api", "projects", t["project"], "specs", t["spec_id"]))
        if t.get("spec_id")
        else None
    )
    return {**detail, "spec": spec}, show_text(detail, spec)


def _check_task(args: argparse.Namespace) -> None:
    """The task must exist (and a resolve be well formed) before anyone is asked; what it is
    goes into the prompt."""
    if args.sub == "resolve" and (args.resolution == "block") != bool(args.blocked_by):
        raise InputError(
            "--block goes with --blocked-by TASK (repeatable), and --blocked-by only with --block"
        )
    api = client(args)
    args.task_record = api.call("GET", api.path("api", "tasks", args.id))["task"]


def _about(a: argparse.Namespace) -> str:
    t = getattr(a, "task_record", None)
    if not t:
        return ""
    about = f"{t['id']} is {t['status']}: {t['title']}"
    if t.get("stale"):  # said before the person confirms, as the board's accept dialog says it
        note = t.get("stale_note") or "stale: the base branch has moved since"
        about += f"\nwarning: its verdict is stale ({note}): it was verified on {t.get('verified_on')}"
    return about


def _also(a: argparse.Namespace, line: str) -> str:
    return "\n".join(x for x in (_about(a), line) if x)


def _resolve_action(a: argparse.Namespace) -> presence.Action:
    how = RESOLUTIONS[a.resolution].format(blocked_by=", ".join(a.blocked_by or []))
    return presence.Action(f"resolve {a.id} ({how})", a.id, _also(a, f"note: {a.note}" if a.note else ""))


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    task = sub.add_parser(
        "task", help=f"tasks: create, list, show; accept, reopen, cancel, resolve (each {PERSON})"
    ).add_subparsers(dest="sub", required=True)
    ta = task.add_parser("accept", parents=[common], help=f"accept submitted or verified work ({PERSON})")
    ta.add_argument("id")
    ta.set_defaults(func=cmd_task_accept)
    human_only(
        ta, lambda a: presence.Action(f"accept {a.id} (it becomes done)", a.id, _about(a)), _check_task
    )
    tr = task.add_parser("reopen", parents=[common], help=f"send work back with findings ({PERSON})")
    tr.add_argument("id")
    tr.add_argument("--finding", action="append", required=True, help="what the next attempt must fix")
    tr.set_defaults(func=cmd_task_reopen)
    human_only(
        tr,
        lambda a: presence.Action(f"reopen {a.id} with {plural(len(a.finding), 'finding')}", a.id, _about(a)),
        _check_task,
    )
    tc = task.add_parser("cancel", parents=[common], help=f"cancel a task ({PERSON})")
    tc.add_argument("id")
    tc.add_argument("--reason", default="")
    tc.set_defaults(func=cmd_task_cancel)
    human_only(
        tc,
        lambda a: presence.Action(
            f"cancel {a.id}", a.id, _also(a, f"reason: {a.reason}" if a.reason else "")
        ),
        _check_task,
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
    human_only(tv, _resolve_action, _check_task)
    tl = task.add_parser("list", parents=[common], help="list a project's tasks")
    tl.add_argument("project")
    tl.add_argument("--status", default=None)
    tl.set_defaults(func=cmd_task_list)

    ts = task.add_parser(
        "show", parents=[common], help="a task: criteria with evidence, attempts, findings, runs, history"
    )
    ts.add_argument("id")
    ts.set_defaults(func=authored(cmd_task_show))

    tn = task.add_parser(
        "create",
        parents=[common],
        help="create a task: from a spec's criteria, or with criteria of its own",
        description="A task holds an approved spec's criteria (--spec, all of them or the "
        "--criterion ones) and/or its own (--criteria-file: `- (kind) text — `ref`` lines or a "
        "JSON list). It is ready at once if its spec is approved and nothing blocks it.",
    )
    tn.add_argument("project")
    tn.add_argument("--title", required=True)
    tn.add_argument("--description", default="")
    tn.add_argument("--spec", default=None, help="SPEC-<n> whose criteria it holds")
    tn.add_argument(
        "--criterion", action="append", metavar="AC-n.m", help="hold only these of the spec's (repeatable)"
    )
    tn.add_argument("--criteria-file", default=None, help="criteria of its own (Markdown list or JSON)")
    tn.add_argument(
        "--blocked-by", action="append", metavar="TASK", help="ready once TASK is done (repeatable)"
    )
    tn.add_argument("--priority", type=int, default=0, help="higher is claimed first (default 0)")
    tn.add_argument("--risk", choices=["low", "medium", "high"], default=None, help="without a spec")
    tn.add_argument(
        "--command", action="append", help="verification command for this task's brief (repeatable)"
    )
    tn.set_defaults(func=authored(cmd_task_create))
