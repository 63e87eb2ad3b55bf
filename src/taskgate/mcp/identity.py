"""Who is calling a tool: the principal the HTTP layer authenticated, held in a contextvar.

The ASGI middleware (app.py) resolves the Bearer key before the MCP layer runs and sets
`_principal` for the request; the SDK runs the tool in a task spawned from that request, so
the value is inherited. Tools never take identity from their arguments: an `agent_id` or
`on_behalf_of` argument is only checked against it (domain.principals.acting).
"""

from __future__ import annotations

from contextvars import ContextVar, Token

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.principals import Acting, Principal, acting

_principal: ContextVar[Principal | None] = ContextVar("taskgate_mcp_principal", default=None)


def bind(principal: Principal) -> Token[Principal | None]:
    return _principal.set(principal)


def unbind(token: Token[Principal | None]) -> None:
    _principal.reset(token)


def current() -> Principal:
    principal = _principal.get()
    if principal is None:
        # Only reachable if the server is served without the auth middleware: refuse, never guess.
        raise TaskgateError(ErrorCode.UNAUTHORIZED, "no authenticated agent for this request")
    return principal


def who(agent_id: str | None = None, on_behalf_of: str | None = None) -> Acting:
    """The caller, checked against any actor id an argument named (E_IDENTITY_MISMATCH; names
    match without regard to case, a bare name is an agent's)."""
    obo = on_behalf_of if on_behalf_of and on_behalf_of.strip() else None
    named = agent_id if agent_id and agent_id.strip() else None
    return acting(current(), on_behalf_of=obo, claimed_actor=named)
