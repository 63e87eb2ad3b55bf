"""`taskgate verification on|off` and `taskgate verifier-config get|draft|set`: whether a
project's work is verified, and what the verifier runs (both the human's to change)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from taskgate.cli import presence
from taskgate.cli.files import parse_json, read
from taskgate.cli.human import PERSON, human_only
from taskgate.cli.output import client, emit
from taskgate.cli.text import visible
from taskgate.domain.tooling import unmade_paths


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


def cmd_verifier_config(args: argparse.Namespace) -> None:
    api = client(args)
    path = api.path("api", "projects", args.project, "verifier-config")
    if args.action == "set":
        config = parse_json(read(args.file), args.file if args.file != "-" else "stdin")
        out = api.call("PUT", path, config)
        _warn(config)
    elif args.action == "draft":
        # Start from project commands: print the draft config (pipe it to a file, review, `set` it)
        # and its notes on stderr, so stdout stays valid JSON.
        draft = api.call("GET", f"{path}/draft")
        for note in draft["notes"]:
            print(visible(f"note: {note}"), file=sys.stderr)
        _warn(draft["config"])
        print(json.dumps(draft if args.json else draft["config"], indent=2))
        return
    else:
        out = api.call("GET", path)
    emit(args, out, json.dumps(out, indent=2))


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


def register_switch(sub: Any, common: argparse.ArgumentParser) -> None:
    v = sub.add_parser("verification", parents=[common], help=f"switch verification on or off ({PERSON})")
    v.add_argument("state", choices=["on", "off"])
    v.add_argument("project")
    v.set_defaults(func=cmd_verification)
    human_only(
        v, lambda a: presence.Action(f"switch verification {a.state} for project {a.project}", a.project)
    )
