"""`taskgate project ...`: create (the human's), list, and the project's execution defaults."""

from __future__ import annotations

import argparse
from typing import Any

from taskgate.cli import presence
from taskgate.cli.client import ApiError, Client
from taskgate.cli.files import InputError, checked_repo
from taskgate.cli.human import PERSON, human_only
from taskgate.cli.output import authored, client, emit
from taskgate.domain.models import PROJECT_NAME_RE


def cmd_project_create(args: argparse.Namespace) -> None:
    body = {"name": args.name, "repo": args.repo, "description": args.description or ""}
    p = client(args).call("POST", "/api/projects", body)
    emit(args, p, f"created project {p['name']} (repo {p.get('repo') or '-'})")


def cmd_project_list(args: argparse.Namespace) -> None:
    out = client(args).call("GET", "/api/projects")
    items = out["items"] if isinstance(out, dict) else out
    emit(args, out, "\n".join(f"{p['name']}\t{p.get('repo', '')}" for p in items) or "(no projects)")


def cmd_project_defaults(args: argparse.Namespace, api: Client) -> tuple[Any, str]:
    if args.command is None and args.convention is None:
        p = api.call("GET", api.path("api", "projects", args.project))
    else:
        body = {"verification_commands": args.command, "conventions": args.convention}
        p = api.call("PUT", api.path("api", "projects", args.project, "execution-defaults"), body)
    d = p["execution_defaults"]
    lines = [f"project {p['name']}: what an agent's brief says to run and follow"]
    lines += [f"  command:    {c}" for c in d["verification_commands"]] or ["  (no commands)"]
    lines += [f"  convention: {c}" for c in d["conventions"]]
    lines.append(f"the verifier's checks start from these: taskgate verifier-config draft {p['name']}")
    return p, "\n".join(lines)


def _check_create(args: argparse.Namespace) -> None:
    """A name the server refuses, or one taken already, is said before anyone is asked."""
    if not PROJECT_NAME_RE.match(args.name):
        raise InputError(
            f"project name {args.name!r}: lowercase letters, digits and '-', 1-40 characters, "
            "starting with a letter or digit"
        )
    args.repo = checked_repo(args.repo)
    api = client(args)
    try:
        api.call("GET", api.path("api", "projects", args.name))
    except ApiError as exc:
        if exc.body.get("code") == "E_NOT_FOUND":
            return
        raise
    raise ApiError(
        409,
        {
            "code": "E_CONFLICT",
            "message": f"project {args.name} already exists (nothing was asked or changed)",
            "hint": f"`taskgate project defaults {args.name}` shows it; choose another name for a new one",
        },
    )


def _create_action(a: argparse.Namespace) -> presence.Action:
    return presence.Action(f"create project {a.name} (repo {a.repo})", a.name)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    proj = sub.add_parser("project", help=f"projects: create ({PERSON}), list, defaults").add_subparsers(
        dest="sub", required=True
    )
    c = proj.add_parser("create", parents=[common], help=f"create a project ({PERSON})")
    c.add_argument("name")
    c.add_argument("--repo", required=True, help="path or URL of the git repository")
    c.add_argument("--description", default="")
    c.set_defaults(func=cmd_project_create)
    human_only(c, _create_action, _check_create)
    proj.add_parser("list", parents=[common], help="list projects").set_defaults(func=cmd_project_list)

    pd = proj.add_parser(
        "defaults",
        parents=[common],
        help="show or set the project's verification commands and conventions",
        description="Agents' briefs carry these; `taskgate verifier-config draft` starts the "
        "verifier's checks from the commands. Given flags replace the whole list they name.",
    )
    pd.add_argument("project")
    pd.add_argument("--command", action="append", help="a verification command (repeatable)")
    pd.add_argument("--convention", action="append", help="a convention agents follow (repeatable)")
    pd.set_defaults(func=authored(cmd_project_defaults))
