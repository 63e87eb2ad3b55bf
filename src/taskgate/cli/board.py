"""`taskgate board` (a sign-in link for the local board) and `taskgate mcp-config`."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from taskgate.cli.output import client, emit

MCP_401 = (
    "If the client reports 'Server returned an error response' (or HTTP 401): /mcp refused the key. "
    "It is mistyped, revoked, not an agent key, or not sent as 'Authorization: Bearer tga_...'. "
    "`taskgate key list` shows which keys are live; a human mints a new one with `taskgate key create agent`."
)


KEY_VAR = "TASKGATE_AGENT_KEY"  # where Codex and Cursor read the key from: not in their files
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's (\\uXXXX included)."""
    return json.dumps(value)


def codex_toml(name: str, url: str) -> str:
    """Codex's table for a Streamable HTTP server (~/.codex/config.toml). Codex refuses a bearer
    token written in the file: it reads it from the variable `bearer_token_env_var` names."""
    table = name if _BARE_KEY.match(name) else _toml_string(name)
    return (
        f"[mcp_servers.{table}]\nurl = {_toml_string(url)}\nbearer_token_env_var = {_toml_string(KEY_VAR)}\n"
    )


def cursor_json(name: str, url: str) -> dict[str, Any]:
    """Cursor's .cursor/mcp.json: a server with a `url` is a remote one, and `${env:NAME}` in a
    header is read from the environment Cursor starts in, so the key stays out of the file (and
    out of a repository the file may sit in)."""
    return {"mcpServers": {name: {"url": url, "headers": {"Authorization": f"Bearer ${{env:{KEY_VAR}}}"}}}}


def cmd_mcp_config(args: argparse.Namespace) -> None:
    url = args.server.rstrip("/") + "/mcp"
    key = args.key or f"${KEY_VAR}"
    config = {
        "mcpServers": {args.name: {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {key}"}}}
    }
    claude = f'claude mcp add --transport http {args.name} {url} --header "Authorization: Bearer {key}"'
    codex = codex_toml(args.name, url)
    cursor = cursor_json(args.name, url)
    export = f"export {KEY_VAR}={args.key or 'tga_...'}"
    text = (
        "# Claude Code:\n"
        f"{claude}\n\n"
        f"# Codex: add to ~/.codex/config.toml; Codex reads the key from ${KEY_VAR} where it starts\n"
        f"# ({export}), or run: codex mcp add {args.name} --url {url} --bearer-token-env-var {KEY_VAR}\n"
        f"{codex}\n"
        f"# Cursor: .cursor/mcp.json (or ~/.cursor/mcp.json); Cursor reads the key from ${KEY_VAR}\n"
        f"# where it starts ({export})\n"
        f"{json.dumps(cursor, indent=2)}\n\n"
        "# Any MCP client (Streamable HTTP), e.g. .mcp.json:\n"
        f"{json.dumps(config, indent=2)}\n\n"
        f"# {MCP_401}"
    )
    emit(
        args,
        {
            "url": url,
            "claude": claude,
            "codex": codex,
            "cursor": cursor,
            "config": config,
            "key_variable": KEY_VAR,
            "unauthorized": MCP_401,
        },
        text,
    )


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
