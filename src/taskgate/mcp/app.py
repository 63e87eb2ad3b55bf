"""The ASGI app serving /mcp: agent authentication in front of the SDK's Streamable HTTP app.

Stateless, JSON responses (no SSE, no sessions): every POST stands alone, which is what a
Lambda behind API Gateway can serve. On Lambda it is built per invocation: the SDK's session
manager may run only once, and Mangum runs the lifespan on every invocation (building it is
cheap). `taskgate serve` builds it once and serves it directly
as one long-lived app. The MCPServer and its tool schemas are built once per process.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic_core import from_json
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from taskgate import runtime, telemetry
from taskgate.asgi import replaying
from taskgate.auth import resolve
from taskgate.domain.errors import INTERNAL, ErrorCode, TaskgateError
from taskgate.domain.principals import PrincipalKind
from taskgate.mcp import identity, workers
from taskgate.mcp.server import get_server
from taskgate.telemetry import Metric

PATH = "/mcp"
MAX_BODY_BYTES = 1024 * 1024
LEGACY_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = (LEGACY_VERSION, "2026-07-28")
# Handshake versions the SDK would still negotiate, older than this server speaks: refused here.
OLDER_VERSIONS = frozenset(HANDSHAKE_PROTOCOL_VERSIONS) - set(SUPPORTED_VERSIONS)
VERSION_HEADER = "mcp-protocol-version"
_VERSION_KEY = VERSION_HEADER.encode()
INVALID_REQUEST = -32600
_SHOWN_VERSION = 40  # characters of an unsupported version echoed back (one may be 10 KB)


@lru_cache(maxsize=8)
def _security(hosts: tuple[str, ...], origins: tuple[str, ...]) -> TransportSecuritySettings:
    # DNS-rebinding protection: Host not allowed -> 421, Origin not allowed -> 403 (SDK checks).
    # "host:*" entries allow any port of that host.
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=list(hosts), allowed_origins=list(origins)
    )


def _error(exc: TaskgateError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A refusal in taskgate's shape, with the status the error table gives its code."""
    telemetry.count(Metric.REFUSALS, code=exc.code.value)
    return JSONResponse({**exc.to_dict(), "hint": exc.hint}, status_code=exc.status, headers=headers)


def _rpc_error(message: str, status: int = 400, **data: Any) -> JSONResponse:
    body: dict[str, Any] = {"code": INVALID_REQUEST, "message": message}
    if data:
        body["data"] = data
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": body}, status_code=status)


def _valid_id(value: Any) -> bool:
    """MCP request ids are strings or integers (never null, unlike plain JSON-RPC)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def check_request(
    headers: Mapping[str, str], body: bytes, versions_sent: int = 1
) -> tuple[JSONResponse | None, bytes]:
    """What the SDK would let through that this server refuses, before it runs: a request id
    that is not a string or integer (the SDK took such a message for a notification, answered
    202 and dropped it), and protocol versions older than 2025-11-25, or no version at all.

    Versions: the MCP spec says a server without an MCP-Protocol-Version header, and no other
    way to know the version, should assume 2025-03-26; this server is stateless (no session
    remembers what initialize negotiated) and does not speak 2025-03-26, so a request without
    the header is refused with 400, as an unsupported version must be. `initialize` carries
    its version in the body instead: an older one is answered with 2025-11-25 (the spec's
    negotiation: the server offers a version it supports, and the client decides), by handing
    the SDK the request as if it had asked for that. A version this server does not speak (an
    older one, a future one, garbage, empty) is refused the same way, and so is the header sent
    more than once (`versions_sent`): which copy counts would otherwise depend on their order.
    Returns a refusal, or the body to serve."""
    try:
        message = from_json(body) if body else None
    except ValueError:
        return None, body  # the SDK answers a parse error (-32700)
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None, body  # a batch (refused by the SDK), a response, or not JSON-RPC at all
    if "id" in message and not _valid_id(message["id"]):
        return _rpc_error("the request id must be a string or an integer"), body
    version = headers.get(VERSION_HEADER)
    supported = ", ".join(SUPPORTED_VERSIONS)
    if message["method"] == "initialize":
        params = message.get("params")
        if isinstance(params, dict) and params.get("protocolVersion") in OLDER_VERSIONS:
            params["protocolVersion"] = LEGACY_VERSION
            body = json.dumps(message).encode()
        return None, body
    if version is None:
        return _rpc_error(
            f"missing the MCP-Protocol-Version header; this server speaks {supported}",
            supported=list(SUPPORTED_VERSIONS),
        ), body
    if versions_sent > 1:
        return _rpc_error(
            f"the MCP-Protocol-Version header was sent {versions_sent} times; send it once ({supported})",
            supported=list(SUPPORTED_VERSIONS),
        ), body
    if version not in SUPPORTED_VERSIONS:
        shown = version if len(version) <= _SHOWN_VERSION else version[:_SHOWN_VERSION] + "…"
        return _rpc_error(
            f"unsupported MCP-Protocol-Version {shown!r}; this server speaks {supported}",
            supported=list(SUPPORTED_VERSIONS),
            requested=shown,
        ), body
    return None, body


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None once it is over `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # the client went away; the app will see the disconnect
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


# The SDK transport's plain-text refusals, by their status: what each means in the error table.
# Its one plain 400 is "Invalid Content-Type header" (its JSON-RPC refusals are JSON already).
_CODE_BY_STATUS = {
    400: ErrorCode.NOT_JSON,
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    406: ErrorCode.NOT_ACCEPTABLE,
    413: ErrorCode.TOO_LARGE,
    415: ErrorCode.NOT_JSON,
    421: ErrorCode.WRONG_HOST,
}


def coded_errors(send: Send) -> Send:
    """Answer the SDK transport's plain-text refusals (bad Content-Type, Host or Origin, body too
    large) in taskgate's JSON shape {code, message, hint}; everything else passes unchanged."""
    held: Message | None = None
    text = b""

    async def wrapped(message: Message) -> None:
        nonlocal held, text
        if message["type"] == "http.response.start" and message["status"] >= 400:
            types = [v for k, v in message.get("headers", []) if k.lower() == b"content-type"]
            if not any(t.startswith(b"application/json") for t in types):
                held = message
                return
        if held is None or message["type"] != "http.response.body":
            await send(message)
            return
        text += message.get("body", b"")
        if message.get("more_body", False):
            return
        status = held["status"]
        said = text.decode("utf-8", "replace").strip() or f"HTTP {status}"
        if status >= 500:  # a failure on our side, not a refusal: no code a client acts on
            response = JSONResponse({"code": INTERNAL, "message": said}, status_code=status)
        else:
            response = _error(TaskgateError(_CODE_BY_STATUS.get(status, ErrorCode.VALIDATION), said))
        start = {"type": "http.response.start", "status": response.status_code}
        await send({**start, "headers": response.raw_headers})
        await send({"type": "http.response.body", "body": response.body})

    return wrapped


def _jwt_claims(scope: Scope) -> Mapping[str, Any] | None:
    """Claims API Gateway's JWT authorizer validated (a Cognito human), from the Lambda event."""
    event = scope.get("aws.event")
    if not isinstance(event, dict):
        return None
    claims = event.get("requestContext", {}).get("authorizer", {}).get("jwt", {}).get("claims")
    return claims if isinstance(claims, dict) else None


class AgentAuth:
    """The MCP front door, the same on Lambda (through Mangum) and in `taskgate serve` (served
    directly): authenticate the Bearer agent key before any MCP processing, bound the body, and
    bind the caller for the tools. Identity, errors and limits are this code's on both paths.

    Missing, unknown or revoked key: 401 with WWW-Authenticate. A human or verifier
    credential: 403 (MCP is the agents' interface). A body over MAX_BODY_BYTES: 413. Stateless
    MCP has no GET stream and no session to DELETE: those get 405, as the transport spec allows,
    instead of a stream that would never end inside a Lambda.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            refusal = TaskgateError(ErrorCode.METHOD_NOT_ALLOWED, "this MCP endpoint is stateless: POST only")
            await _error(refusal, {"Allow": "POST"})(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        ctx = runtime.context()
        settings = runtime.settings()
        lookup = functools.partial(
            resolve.principal,
            ctx,
            headers,
            jwt_claims=_jwt_claims(scope),
            admin_token_hash=settings.admin_token_hash,
            admin_name=settings.admin_name,
        )
        try:
            # A key lookup is one read by key. Where reads never wait (SQLite in WAL) it runs
            # inline: cheaper than the hop to a worker thread. Elsewhere (DynamoDB, over the
            # network) it leaves the event loop, so a slow store stalls no one else.
            principal = lookup() if ctx.store.local_reads else await workers.run(lookup)
        except TaskgateError as exc:
            if exc.code is not ErrorCode.UNAUTHORIZED:
                raise
            challenge = 'Bearer error="invalid_token"' if resolve.bearer(headers) else "Bearer"
            await _error(exc, {"WWW-Authenticate": challenge})(scope, receive, send)
            return
        if principal.kind is not PrincipalKind.AGENT:
            refusal = TaskgateError(
                ErrorCode.FORBIDDEN,
                f"MCP is for agent keys; {principal.actor} uses the board or the REST API under /api",
            )
            await _error(refusal)(scope, receive, send)
            return
        body = await _read_body(receive, MAX_BODY_BYTES)
        if body is None:
            refusal = TaskgateError(ErrorCode.TOO_LARGE, f"request body over {MAX_BODY_BYTES} bytes")
            await _error(refusal)(scope, receive, send)
            return
        sent = sum(1 for k, _ in scope["headers"] if k.lower() == _VERSION_KEY)
        refused, body = check_request(headers, body, sent)
        if refused is not None:
            await refused(scope, receive, send)
            return
        token = identity.bind(principal)
        try:
            await self.app(scope, replaying(body, receive), coded_errors(send))
        finally:
            identity.unbind(token)


def build_app() -> AgentAuth:
    """A fresh ASGI app over the process's one server: per invocation on Lambda, once per process
    in `taskgate serve` (whose host runs its lifespan, the SDK's session manager, once)."""
    runtime.context()  # settings follow the environment; read them after the context is current
    settings = runtime.settings()
    inner = get_server().streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=MAX_BODY_BYTES,
        transport_security=_security(settings.allowed_hosts, settings.allowed_origins),
    )
    return AgentAuth(inner)
