"""The ASGI app serving /mcp: agent authentication in front of the SDK's Streamable HTTP app.

Stateless, JSON responses (no SSE, no sessions): every POST stands alone, which is what a
Lambda behind API Gateway can serve. Built per request: the SDK's session manager may run
only once, and Mangum runs the lifespan on every invocation. Building costs microseconds
(measured in the tests); the MCPServer and its tool schemas are built once per process.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from taskgate import runtime, telemetry
from taskgate.auth import resolve
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.principals import PrincipalKind
from taskgate.mcp import identity
from taskgate.mcp.server import get_server
from taskgate.telemetry import Metric

PATH = "/mcp"
MAX_BODY_BYTES = 1024 * 1024


@lru_cache(maxsize=8)
def _security(hosts: tuple[str, ...], origins: tuple[str, ...]) -> TransportSecuritySettings:
    # DNS-rebinding protection: Host not allowed -> 421, Origin not allowed -> 403 (SDK checks).
    # "host:*" entries allow any port of that host.
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=list(hosts), allowed_origins=list(origins)
    )


def _error(exc: TaskgateError, status: int, headers: Mapping[str, str] | None = None) -> JSONResponse:
    telemetry.count(Metric.REFUSALS, code=exc.code.value)
    return JSONResponse({**exc.to_dict(), "hint": exc.hint}, status_code=status, headers=headers)


def _jwt_claims(scope: Scope) -> Mapping[str, Any] | None:
    """Claims API Gateway's JWT authorizer validated (a Cognito human), from the Lambda event."""
    event = scope.get("aws.event")
    if not isinstance(event, dict):
        return None
    claims = event.get("requestContext", {}).get("authorizer", {}).get("jwt", {}).get("claims")
    return claims if isinstance(claims, dict) else None


class AgentAuth:
    """Authenticate the Bearer agent key before any MCP processing; bind it for the tools.

    Missing, unknown or revoked key: 401 with WWW-Authenticate. A human or verifier
    credential: 403 (MCP is the agents' interface). Stateless MCP has no GET stream and no
    session to DELETE: those get 405, as the transport spec allows, instead of a stream that
    would never end inside a Lambda.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            refusal = TaskgateError(ErrorCode.VALIDATION, "this MCP endpoint is stateless: POST only")
            await _error(refusal, 405, {"Allow": "POST"})(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        ctx = runtime.context()
        settings = runtime.settings()
        try:
            principal = resolve.principal(
                ctx,
                headers,
                jwt_claims=_jwt_claims(scope),
                admin_token_hash=settings.admin_token_hash,
                admin_name=settings.admin_name,
            )
        except TaskgateError as exc:
            if exc.code is not ErrorCode.UNAUTHORIZED:
                raise
            challenge = 'Bearer error="invalid_token"' if resolve.bearer(headers) else "Bearer"
            await _error(exc, 401, {"WWW-Authenticate": challenge})(scope, receive, send)
            return
        if principal.kind is not PrincipalKind.AGENT:
            refusal = TaskgateError(
                ErrorCode.FORBIDDEN,
                f"MCP is for agent keys; {principal.actor} uses the board or the REST API under /api",
            )
            await _error(refusal, 403)(scope, receive, send)
            return
        token = identity.bind(principal)
        try:
            await self.app(scope, receive, send)
        finally:
            identity.unbind(token)


def build_app() -> AgentAuth:
    """A fresh ASGI app for one request (or one server lifetime), over the process's one server."""
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
