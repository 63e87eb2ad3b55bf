"""What every command shares: the client it calls the API with, and how it prints its answer."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from taskgate.cli.client import Client, resolve_token
from taskgate.cli.text import visible

Command = Callable[[argparse.Namespace], "int | None"]


def client(args: argparse.Namespace) -> Client:
    data_dir = Path(args.data_dir) if getattr(args, "data_dir", None) else None
    # A human-only command says how its person was present (main.py asked); others say nothing.
    return Client(args.server, resolve_token(args.token, data_dir), via=getattr(args, "via", None))


def emit(args: argparse.Namespace, payload: Any, text: str) -> None:
    """One JSON object with --json (JSON escapes control characters), else the text with any
    control character in it (stored text an agent wrote) made visible."""
    if args.json:
        print(json.dumps(payload, indent=None, sort_keys=True))
    else:
        print(visible(text))


def authored(cmd: Callable[[argparse.Namespace, Client], tuple[Any, str]]) -> Command:
    """A command written as (args, client) -> (payload, text), as the parser runs it."""

    def run(args: argparse.Namespace) -> None:
        payload, text = cmd(args, client(args))
        emit(args, payload, text)

    return run
