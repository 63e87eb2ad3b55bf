"""A real taskgate server in a subprocess, and real MCP clients talking to it over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import time
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from tests.mcp.events import LEGACY
from tests.support.server import await_port, port_file, serve_args

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]


ADMIN = "alice"  # the human the admin token stands for


def serve_command(data_dir: Path) -> list[str]:
    return [*serve_args(data_dir), "--host", "127.0.0.1", "--admin-name", ADMIN]


@dataclass
class Live:
    """One `taskgate serve` process on a temp data dir, and a human's REST access to it."""

    base: str
    data_dir: Path
    proc: subprocess.Popen[bytes]
    admin_token: str = field(init=False)

    def __post_init__(self) -> None:
        self.admin_token = (self.data_dir / "admin-token").read_text().strip()

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def db_path(self) -> Path:
        found = sorted(self.data_dir.glob("*.db"))
        assert len(found) == 1, f"expected one SQLite file in {self.data_dir}: {found}"
        return found[0]

    # -- the human side, through the REST API ------------------------------------------------

    def rest(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> httpx2.Response:
        return httpx2.request(
            method,
            f"{self.base}{path}",
            json=body,
            headers={"Authorization": f"Bearer {token or self.admin_token}"},
            timeout=30,
        )

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        r = self.rest(method, path, body)
        assert r.status_code in (200, 201), (r.status_code, r.text)
        return r.json()

    def project(self, name: str) -> str:
        self.ok("POST", "/api/projects", {"name": name, "repo": f"https://example.com/{name}.git"})
        return name

    def key(
        self,
        name: str,
        *,
        role: str = "executor",
        projects: list[str] | None = None,
        delegations: list[str] | None = None,
        kind: str = "agent",
        verifier_kind: str | None = None,
    ) -> tuple[str, str]:
        """Mint a key as the admin: (secret, key id)."""
        body: dict[str, Any] = {"kind": kind, "name": name}
        if kind == "agent":
            body |= {"role": role, "projects": projects or [], "delegations": delegations or []}
        else:
            body |= {"verifier_kind": verifier_kind, "projects": projects or []}
        out = self.ok("POST", "/api/keys", body)
        return out["key"], out["credential"]["id"]

    def dump(self) -> list[tuple[Any, ...]]:
        """Every stored item: compared before and after a refused request, to prove nothing was written."""
        db = sqlite3.connect(self.db_path)
        try:
            return db.execute("SELECT pk, sk, version, data FROM items ORDER BY pk, sk").fetchall()
        finally:
            db.close()


def start(data_dir: Path, *, env: dict[str, str] | None = None) -> Live:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")} | (env or {})
    port_file(data_dir).unlink(missing_ok=True)
    proc = subprocess.Popen(
        serve_command(data_dir), cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 30
    base = f"http://127.0.0.1:{await_port(proc, data_dir, None, deadline)}"
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"taskgate serve exited with {proc.returncode}: {err[-2000:]}")
        try:
            if httpx2.get(f"{base}/api/health", timeout=1).status_code == 200:
                break
        except httpx2.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("taskgate serve did not answer /api/health within 30 s")
        time.sleep(0.05)
    return Live(base, data_dir, proc)


def stop(live: Live) -> None:
    live.proc.terminate()
    try:
        live.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        live.proc.kill()
        live.proc.wait()


def serving(data_dir: Path, *, env: dict[str, str] | None = None) -> Iterator[Live]:
    """A real server on `data_dir` for as long as the fixture that yields from this lives."""
    server = start(data_dir, env=env)
    try:
        yield server
    finally:
        stop(server)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


# -- the agents' side: the SDK's Client over Streamable HTTP ----------------------------------


class Agent:
    """An MCP client session for one agent key at one protocol version."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def call(self, tool: str, **arguments: Any) -> CallToolResult:
        return await self.client.call_tool(tool, arguments)

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.call(tool, **arguments)
        assert not result.is_error, f"{tool} failed: {result.content}"
        assert result.structured_content is not None
        return result.structured_content

    async def refused(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The error body of a refused call (isError result, JSON text)."""
        result = await self.call(tool, **arguments)
        assert result.is_error, f"{tool} was not refused: {result.structured_content}"
        assert result.structured_content is None
        text = result.content[0]
        assert text.type == "text"
        body: dict[str, Any] = json.loads(text.text)
        assert set(body) <= {"code", "message", "current_status", "hint"}
        assert body["hint"]
        return body


def client_mode(version: str) -> str:
    # 'legacy' runs the initialize handshake (2025-11-25); a modern version is adopted directly.
    return "legacy" if version == LEGACY else version


@asynccontextmanager
async def agent(url: str, key: str, version: str) -> AsyncIterator[Agent]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http), mode=client_mode(version)) as c:
        assert c.protocol_version == version
        yield Agent(c)
