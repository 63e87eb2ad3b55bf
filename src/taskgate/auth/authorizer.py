"""API Gateway REQUEST authorizer (simple responses) for agent and verifier keys.

A cheap front gate in the cloud: garbage and revoked keys are refused before the MCP or
verifier function starts, and API Gateway caches the answer per Authorization header. The
functions still authenticate every request themselves, so a cached "yes" for a key revoked
since only lasts until the function looks the key up.
"""

from __future__ import annotations

from typing import Any

from taskgate import runtime
from taskgate.auth.resolve import principal
from taskgate.domain.errors import TaskgateError


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    try:
        who = principal(runtime.context(), headers)
    except TaskgateError:
        return {"isAuthorized": False}
    return {
        "isAuthorized": True,
        "context": {"actor": who.actor, "credential_id": who.credential_id, "kind": who.kind.value},
    }
