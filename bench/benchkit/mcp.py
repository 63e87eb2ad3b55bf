"""MCP clients for the benches.

`Connection`: JSON-RPC tools/call over one keep-alive HTTP connection (stdlib http.client), as
a lean agent sends them. The benches that measure the server use it rather than the SDK's
Client: on two cores the SDK client spends more CPU per call than the server does, so figures
taken through it would measure the client.

`sdk_agent`: the MCP SDK's own Client over Streamable HTTP, for benches that play whole agents
(the protocol's handshake and session as a real agent runs them).
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

LEGACY, MODERN = "2025-11-25", "2026-07-28"
VERSIONS = (LEGACY, MODERN)
SHA = "0123456789abcdef0123456789abcdef01234567"  # the commit every bench submission names


class Refused(Exception):
    """A tool call the server answered with an error result (isError): its code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def envelope(method: str, params: dict[str, Any], version: str, rid: int) -> dict[str, Any]:
    """A JSON-RPC request; at 2026-07-28 every request carries the protocol's envelope in _meta."""
    p = dict(params)
    if version == MODERN:
        p["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        }
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}


def headers(tool: str, version: str, key: str | None) -> dict[str, str]:
    """The headers of a tools/call request at `version`."""
    out = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
    }
    if version == MODERN:
        out |= {"mcp-method": "tools/call", "mcp-name": tool}
    if key:
        out["authorization"] = f"Bearer {key}"
    return out


class Connection:
    """tools/call requests over one keep-alive connection; each call's seconds go to `latencies`."""

    def __init__(
        self,
        port: int,
        key: str | None,
        version: str,
        *,
        latencies: list[float] | None = None,
        path: str = "/mcp",
    ) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.key, self.version, self.path = key, version, path
        self.latencies = latencies if latencies is not None else []
        self.calls = 0

    def result(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The call's result; Refused if the server answered it with an error result."""
        self.calls += 1
        msg = envelope("tools/call", {"name": tool, "arguments": arguments}, self.version, self.calls)
        started = time.perf_counter()
        self.http.request("POST", self.path, json.dumps(msg), headers(tool, self.version, self.key))
        response = self.http.getresponse()
        raw = response.read()
        self.latencies.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"{tool}: HTTP {response.status} {raw[:300]!r}")
        result: dict[str, Any] = json.loads(raw)["result"]
        if result.get("isError"):
            text = result["content"][0]["text"]
            try:
                error = json.loads(text)
                raise Refused(error["code"], error["message"])
            except (ValueError, KeyError, TypeError):
                raise Refused("E_UNKNOWN", text[:300]) from None
        return result

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The call's structured content (what taskgate's tools answer)."""
        structured: dict[str, Any] = self.result(tool, **arguments)["structuredContent"]
        return structured

    def close(self) -> None:
        self.http.close()


class SdkAgent:
    """One agent's session through the SDK's Client."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The call's structured content; RuntimeError if the server refused it."""
        result = await self.client.call_tool(tool, arguments)
        if result.is_error or result.structured_content is None:
            raise RuntimeError(f"{tool} failed: {result.content}")
        return dict(result.structured_content)

    async def refused(self, tool: str, **arguments: Any) -> dict[str, Any] | None:
        """The error body of a refused call, or None if the call succeeded."""
        result = await self.client.call_tool(tool, arguments)
        if not result.is_error:
            return None
        body: dict[str, Any] = json.loads(result.content[0].text)
        return body


@asynccontextmanager
async def sdk_agent(url: str, key: str, version: str = MODERN) -> AsyncIterator[SdkAgent]:
    """An MCP session for `key` at `version` (2025-11-25 runs the initialize handshake)."""
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    mode = "legacy" if version == LEGACY else version
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        if client.protocol_version != version:
            raise RuntimeError(f"the session speaks {client.protocol_version}, not {version}")
        yield SdkAgent(client)
