"""API Gateway HTTP API (payload format 2.0) events, built the way API Gateway sends them."""

from __future__ import annotations

import base64
import json
from typing import Any

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
VERSIONS = [LEGACY, MODERN]

HOST = "abc123.execute-api.us-east-1.amazonaws.com"


def v2_event(
    body: Any = None,
    *,
    method: str = "POST",
    path: str = "/mcp",
    headers: dict[str, str] | None = None,
    base64_body: bool = False,
    jwt_claims: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One request as API Gateway hands it to Lambda: lowercased headers, a raw path, the
    method under requestContext.http, the body as a string (base64 when isBase64Encoded)."""
    raw = body if isinstance(body, str | bytes) or body is None else json.dumps(body)
    if isinstance(raw, str):
        raw = raw.encode()
    hdrs = {
        "host": HOST,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "user-agent": "test-client/1.0",
        "x-forwarded-proto": "https",
        "x-forwarded-port": "443",
    }
    if raw is not None:
        hdrs["content-length"] = str(len(raw))
    hdrs.update({k.lower(): v for k, v in (headers or {}).items()})
    hdrs = {k: v for k, v in hdrs.items() if v is not None}
    request_context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "abc123",
        "domainName": HOST,
        "domainPrefix": "abc123",
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": "203.0.113.7",
            "userAgent": hdrs["user-agent"],
        },
        "requestId": "JKJaXmPLvHcESHA=",
        "routeKey": "$default",
        "stage": "$default",
        "time": "10/Mar/2026:00:00:00 +0000",
        "timeEpoch": 1773100800000,
    }
    if jwt_claims is not None:
        request_context["authorizer"] = {"jwt": {"claims": jwt_claims, "scopes": None}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": hdrs,
        "requestContext": request_context,
        "isBase64Encoded": base64_body,
    }
    if raw is not None:
        event["body"] = base64.b64encode(raw).decode() if base64_body else raw.decode()
    return event


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test-client", "version": "1.0"},
    }


def rpc(method: str, params: dict[str, Any] | None = None, *, version: str, id_: int = 1) -> dict[str, Any]:
    """A JSON-RPC request body; at 2026-07-28 every request carries its envelope in _meta."""
    p = dict(params or {})
    if version == MODERN:
        p["_meta"] = modern_meta()
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if p:
        msg["params"] = p
    return msg


def initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "test-client", "version": "1.0"},
        },
    }


def mcp_headers(key: str | None, version: str, body: dict[str, Any] | None = None) -> dict[str, str]:
    """The headers an MCP client sends with a request at `version`."""
    h: dict[str, str] = {}
    if key is not None:
        h["authorization"] = f"Bearer {key}"
    if body is not None and body.get("method") == "initialize":
        return h
    h["mcp-protocol-version"] = version
    if version == MODERN and body is not None:
        h["mcp-method"] = body["method"]
        name = (body.get("params") or {}).get("name")
        if name is not None:
            h["mcp-name"] = name
    return h


def response_json(response: dict[str, Any]) -> Any:
    body = response.get("body") or ""
    if response.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    return json.loads(body)
