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


def table(header: list[str], rows: list[list[str]]) -> str:
    """Rows under a header row, each column as wide as its widest cell (the last one as is)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
        for r in [header, *rows]
    )
