"""`taskgate verification on|off` and `taskgate verifier-config get|draft|set`: whether a
project's work is verified, and what the verifier runs (both the human's to change)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import ValidationError

from taskgate.cli import presence
from taskgate.cli.client import ApiError
from taskgate.cli.files import InputError, parse_json, read
from taskgate.cli.human import PERSON, human_only
from taskgate.cli.output import client, emit
from taskgate.cli.text import visible
from taskgate.domain.tooling import unmade_paths
from taskgate.domain.validation import explained
from taskgate.domain.verifier_config import CHECK_NAME_RE, VerifierConfig


def _warn(config: Any) -> None:
    """On stderr, so stdout stays what it was: checks that run a path no earlier check makes."""
    checks = config.get("checks") if isinstance(config, dict) else None
    if not isinstance(checks, dict):
        return
    commands = {
        n: c["command"]
        for n, c in checks.items()
        if isinstance(c, dict) and isinstance(c.get("command"), str)
    }
    for warning in unmade_paths(commands):
        print(visible(f"warning: {warning}"), file=sys.stderr)


def cmd_verification(args: argparse.Namespace) -> None:
    api = client(args)
    out = api.call(
        "PUT", api.path("api", "projects", args.project, "verification"), {"on": args.state == "on"}
    )
    if out["on"]:
        _warn(api.call("GET", api.path("api", "projects", args.project, "verifier-config")).get("config"))
    emit(args, out, f"verification is {'on' if out['on'] else 'off'} for {args.project}")


def _check_switch(args: argparse.Namespace) -> None:
    """`verification on` for a project that lacks what it needs is refused by the server: say
    so before anyone is asked (GET .../verification lists what is missing)."""
    api = client(args)
    state = api.call("GET", api.path("api", "projects", args.project, "verification"))
    missing = state.get("missing") or []
    if args.state != "on" or not missing:
        return
    todo = []
    if any("key" in m for m in missing):
        todo.append(f"taskgate key create verifier ci --kind local --project {args.project}")
    if any("config" in m for m in missing):
        todo.append(
            f"taskgate verifier-config draft {args.project} > checks.json, read it, then "
            f"taskgate verifier-config set {args.project} --file checks.json"
        )
    raise ApiError(
        422,
        {
            "code": "E_VALIDATION",
            "message": f"cannot switch verification on for {args.project}: missing "
            + "; ".join(missing)
            + " (nothing was asked or changed)",
            "hint": "first: " + "; then ".join(todo) if todo else "",
            "missing": missing,
        },
    )


def pruned(value: Any) -> Any:
    """A config as a person reads it: what is left null (the default) left out, as the board
    shows it; `taskgate verifier-config set` reads it back the same."""
    if isinstance(value, dict):
        return {k: pruned(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [pruned(v) for v in value]
    return value


def _renamed(config: dict[str, Any], renames: list[str]) -> dict[str, Any]:
    """The draft with checks renamed (`node-test=unit`), in their order."""
    checks: dict[str, Any] = config.get("checks") or {}
    wanted: dict[str, str] = {}
    for pair in renames:
        old, eq, new = pair.partition("=")
        if not eq or old not in checks:
            raise InputError(
                f"--rename {pair}: give OLD=NEW with OLD one of the drafted checks: {', '.join(checks) or '(none)'}"
            )
        if not CHECK_NAME_RE.match(new):
            raise InputError(f"--rename {pair}: a check name matches {CHECK_NAME_RE.pattern}")
        wanted[old] = new
    names = [wanted.get(n, n) for n in checks]
    if len(set(names)) != len(names):
        raise InputError(f"--rename: two checks would both be called {max(names, key=names.count)}")
    return {**config, "checks": {wanted.get(n, n): c for n, c in checks.items()}}


def _check_config(args: argparse.Namespace) -> None:
    """`set`: the file is read, parsed and checked against the config's own rules, and the
    project looked up, before anyone is asked to confirm it."""
    if args.action != "set":
        return
    source = args.file if args.file != "-" else "stdin"
    config = parse_json(read(args.file), source)
    try:
        VerifierConfig.model_validate(config)
    except ValidationError as exc:
        raise InputError(
            f"{source}: not a verifier config: {explained(exc.errors(), VerifierConfig)}"
        ) from None
    api = client(args)
    api.call("GET", api.path("api", "projects", args.project))
    args.config = config


def _saved(project: str, out: dict[str, Any]) -> str:
    """What `set` saved, in a few lines: each check and its report, and what protects paths."""
    config = out.get("config") or {}
    lines = [f"saved the verifier config of {project}:"]
    for name, check in (config.get("checks") or {}).items():
        report = check.get("report") or {}
        lines.append(
            f"  check {name}" + (f" (report {report['path']})" if report.get("path") else " (no report)")
        )
    protect = config.get("protect")
    lines.append(
        "  protected paths: "
        + ("off" if protect == [] else "the default" if protect is None else f"{len(protect)} globs")
        + f", {len(out.get('protect_in_force') or [])} in force"
    )
    lines.append(f"`taskgate verifier-config get {project}` prints it whole")
    return "\n".join(lines)


def cmd_verifier_config(args: argparse.Namespace) -> None:
    api = client(args)
    path = api.path("api", "projects", args.project, "verifier-config")
    if args.action == "set":
        out = api.call("PUT", path, args.config)
        _warn(args.config)
        emit(args, out, _saved(args.project, out))
        return
    if args.action == "draft":
        # Start from project commands: print the draft config (pipe it to a file, review, `set` it)
        # and its notes on stderr, so stdout stays valid JSON.
        draft = api.call("GET", f"{path}/draft")
        draft["config"] = _renamed(draft["config"], args.rename or [])
        for note in draft["notes"]:
            print(visible(f"note: {note}"), file=sys.stderr)
        _warn(draft["config"])
        print(json.dumps(draft if args.json else pruned(draft["config"]), indent=2))
        return
    out = api.call("GET", path)
    emit(
        args,
        out,
        json.dumps(pruned(out["config"]), indent=2) if out.get("config") else "(no verifier config)",
    )


def register_config(sub: Any, common: argparse.ArgumentParser) -> None:
    vc = sub.add_parser(
        "verifier-config",
        parents=[common],
        help=f"show, draft or set a project's verifier config (set {PERSON})",
        description="get and draft only read; set replaces the config.",
    )
    vc.add_argument("action", choices=["get", "set", "draft"], help="draft: start from project commands")
    vc.add_argument("project")
    vc.add_argument("--file", default="-", help="JSON config for 'set' (default: stdin)")
    vc.add_argument(
        "--rename",
        action="append",
        metavar="OLD=NEW",
        help="draft: call a drafted check NEW instead (repeatable), e.g. node-test=unit",
    )
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
        _check_config,
    )


def register_switch(sub: Any, common: argparse.ArgumentParser) -> None:
    v = sub.add_parser("verification", parents=[common], help=f"switch verification on or off ({PERSON})")
    v.add_argument("state", choices=["on", "off"])
    v.add_argument("project")
    v.set_defaults(func=cmd_verification)
    human_only(
        v,
        lambda a: presence.Action(f"switch verification {a.state} for project {a.project}", a.project),
        _check_switch,
    )
