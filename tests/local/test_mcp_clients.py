"""`taskgate mcp-config` for the clients people use, each read the way that client reads it and
then used: Codex's TOML parsed with tomllib and its key taken from the variable it names, Cursor's
JSON with its `${env:NAME}` headers filled in from the environment; both then talk to a real
`taskgate serve` over Streamable HTTP with the MCP SDK's Client."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.events import MODERN
from tests.mcp.live import Live, run, serving
from tests.support.server import TASKGATE

# The fields Codex reads on a Streamable HTTP server's table (its config's mcp_types), and the
# one it refuses there: a bearer token written in the file.
CODEX_HTTP = {"url", "bearer_token_env_var", "http_headers", "env_http_headers", "enabled"}
CURSOR_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("mcp-clients"))


def _printed(live: Live, *args: str) -> dict[str, str]:
    """What `taskgate mcp-config` prints, by section: the text after each `# <client>` header's
    comment lines, up to the next blank line before a header."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    done = subprocess.run(
        [TASKGATE, "mcp-config", "--server", live.base, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    sections: dict[str, str] = {"raw": done.stdout}
    for block in re.split(r"\n\n(?=# )", done.stdout):
        head = block.split("\n", 1)[0]
        body = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
        sections[head.split(":", 1)[0].removeprefix("# ")] = body
    return sections


async def _tools(url: str, headers: dict[str, str]) -> list[str]:
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http), mode=MODERN) as c:
        return [t.name for t in (await c.list_tools()).tools]


def test_codex_reads_its_table_and_the_key_from_the_variable_it_names(live: Live) -> None:
    key, _ = live.key("codex")
    codex = tomllib.loads(_printed(live)["Codex"])
    server: dict[str, Any] = codex["mcp_servers"]["taskgate"]
    assert set(server) <= CODEX_HTTP and "bearer_token" not in server and "command" not in server
    assert server["url"] == f"{live.base}/mcp"
    environment = {server["bearer_token_env_var"]: key}  # what Codex starts with
    headers = {"Authorization": f"Bearer {environment[server['bearer_token_env_var']]}"}
    assert "claim_task" in run(_tools(server["url"], headers))
    # A name of one's own is a table of its own, quoted where TOML needs it.
    named = tomllib.loads(_printed(live, "--name", "task gate")["Codex"])
    assert set(named["mcp_servers"]) == {"task gate"}


def test_cursor_reads_its_json_and_fills_the_key_in_from_the_environment(live: Live) -> None:
    key, _ = live.key("cursor")
    printed = _printed(live, "--key", key)
    cursor = json.loads(printed["Cursor"])
    entry: dict[str, Any] = cursor["mcpServers"]["taskgate"]
    assert "command" not in entry and entry["url"] == f"{live.base}/mcp"  # a url: a remote server
    assert key not in printed["Cursor"]  # the key stays out of a file that may sit in a repository
    environment = {"TASKGATE_AGENT_KEY": key}
    headers = {k: CURSOR_ENV.sub(lambda m: environment[m.group(1)], v) for k, v in entry["headers"].items()}
    assert "claim_task" in run(_tools(entry["url"], headers))
    # Its header says where the key comes from, with the key given.
    assert f"export TASKGATE_AGENT_KEY={key}" in printed["raw"]
