"""Marking a command as one that changes something as the human: before anything is sent,
main() has a person at the terminal confirm what the command says it will do (presence.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from taskgate.cli import presence

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
Describe = Callable[[argparse.Namespace], "presence.Action | None"]
Check = Callable[[argparse.Namespace], None]


def human_only(
    parser: argparse.ArgumentParser, describe: Describe, check: Check | None = None
) -> argparse.ArgumentParser:
    """Mark a command that writes as the human: `describe` says what it will do (None: this use
    of it only reads). `check` runs first, with read-only calls and the files it was given: what
    the server would refuse anyway (a project that does not exist, a file that is not JSON) is
    refused before anyone is asked to confirm it."""
    parser.add_argument("--yes", action="store_true", help=YES_HELP)
    parser.set_defaults(presence=describe, precheck=check)
    parser.description = f"{parser.description}\n\n{PERSON_NOTE}" if parser.description else PERSON_NOTE
    return parser


def scope(projects: list[str] | None) -> str:
    return f"project{'s' if len(projects) > 1 else ''} {', '.join(projects)}" if projects else "every project"
