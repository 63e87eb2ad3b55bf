"""The `taskgate` parser, assembled from the command groups, and what every command shares when
it runs: the person at the terminal first, then one clear line for any failure. Everything but
`serve` and `demo` (which runs its own serve) talks to the REST API (local or cloud)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from taskgate import __version__
from taskgate.cli import (
    attest,
    board,
    keys,
    presence,
    projects,
    queue,
    serving,
    specs,
    tasks,
    verification,
    verify,
)
from taskgate.cli.client import DEFAULT_DATA_DIR, DEFAULT_SERVER, ApiError, resolve_token
from taskgate.cli.files import InputError
from taskgate.cli.human import Check, Describe
from taskgate.cli.text import visible
from taskgate.demo import tour as demo

UNEXPECTED = "E_CLI"  # a failure of the CLI itself (a bug, a file it cannot write), not a refusal


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
    # The order here is the order `taskgate --help` lists the commands in.
    serving.register(sub)
    demo.register(sub)
    board.register_board(sub, common)
    projects.register(sub, common)
    keys.register(sub, common)
    board.register_mcp_config(sub, common)
    tasks.register(sub, common)
    queue.register(sub, common)
    verification.register_config(sub, common)
    verify.register(sub)
    verification.register_switch(sub, common)
    specs.register(sub, common)
    attest.register(sub, common)
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
        return _run(args)
    except KeyboardInterrupt:
        print("taskgate: interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT, as a shell reports it
    except BrokenPipeError:
        raise  # main() ends a pipeline cut short quietly
    except Exception as exc:  # one line and an exit code, never a traceback
        if os.environ.get("TASKGATE_DEBUG"):
            raise
        said = f"taskgate {args.command} failed: {type(exc).__name__}: {exc}"
        if getattr(args, "json", False):
            print(json.dumps({"error": {"code": UNEXPECTED, "message": said}}))
        else:
            print(visible(f"error {UNEXPECTED}: {said}"), file=sys.stderr)
            print("hint: TASKGATE_DEBUG=1 shows where", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    try:
        describe: Describe | None = getattr(args, "presence", None)
        check: Check | None = getattr(args, "precheck", None)
        if describe is not None and check is not None:
            check(args)  # read-only: check first, ask second
        action = describe(args) if describe is not None else None
        if action is not None:
            # What the prompt shows may quote what an agent wrote (a spec's commands, a title):
            # shown with every control character escaped, never obeyed by the terminal.
            action = dataclasses.replace(action, what=visible(action.what), detail=visible(action.detail))
            # A token that cannot be read fails before the person is asked anything.
            resolve_token(args.token, Path(args.data_dir) if args.data_dir else None)
            explicit = bool(args.token or os.environ.get("TASKGATE_TOKEN"))
            args.via = presence.require(action, scripted=args.yes, explicit_token=explicit)
        code = args.func(args)
    except presence.Refused as refused:
        if getattr(args, "json", False):
            print(json.dumps({"error": refused.body()}))
        else:
            print(visible(f"error {refused.code}: {refused.message}\nhint: {refused.hint}"), file=sys.stderr)
        return presence.EXIT_CODE
    except InputError as exc:
        if getattr(args, "json", False):
            print(json.dumps({"error": {"code": exc.code, "message": str(exc)}}))
        else:
            print(visible(f"error {exc.code}: {exc}\nnothing was sent"), file=sys.stderr)
        return 2
    except ApiError as exc:
        if getattr(args, "json", False):
            print(json.dumps({"error": exc.body, "status": exc.status}))
        else:
            said = f"error {exc.body.get('code', exc.status)}: {exc.body.get('message', '')}"
            print(visible(said), file=sys.stderr)  # the message may quote what an agent wrote
            hint = _hint_of(exc, args)
            if hint:
                print(visible(f"hint: {hint}"), file=sys.stderr)
        return 1
    return code if isinstance(code, int) else 0
