"""`taskgate board` (a sign-in link for the local board) and `taskgate mcp-config`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from taskgate.cli.output import client, emit

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
    emit(args, {"url": url, "claude": claude, "config": config, "unauthorized": MCP_401}, text)


def cmd_board(args: argparse.Namespace) -> None:
    """A fresh one-time sign-in link from the running local server (it reads the admin token
    from the data dir, so nobody copies it), opened in the browser with --open."""
    out = client(args).call("POST", "/local/sign-in-link")
    if args.open:
        import webbrowser

        webbrowser.open(out["url"])
    minutes = int(out["expires_in"]) // 60
    emit(args, out, f"{out['url']}\n(one-time sign-in link for the board, valid {minutes} min)")


def register_board(sub: Any, common: argparse.ArgumentParser) -> None:
    b = sub.add_parser("board", parents=[common], help="print a one-time sign-in link for the local board")
    b.add_argument("--open", action="store_true", help="open it in the default browser")
    b.set_defaults(func=cmd_board)


def register_mcp_config(sub: Any, common: argparse.ArgumentParser) -> None:
    m = sub.add_parser("mcp-config", parents=[common], help="print MCP client configuration")
    m.add_argument("--name", default="taskgate")
    m.add_argument(
        "--key", default=None, help="agent key to embed (default: $TASKGATE_AGENT_KEY placeholder)"
    )
    m.set_defaults(func=cmd_mcp_config)
