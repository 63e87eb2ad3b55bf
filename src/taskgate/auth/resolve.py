"""Who is calling, from an HTTP request: a key, the local admin token, or JWT claims.

Humans: in the cloud, API Gateway's JWT authorizer has already validated the token and passes
its claims in the request context (Cognito user -> human:<username>); locally, the admin token
written by `taskgate serve`. Agents and verifiers: a Bearer key, looked up by its hash.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.principals import Principal, Via, human
from taskgate.service import keys, secrets
from taskgate.service.context import Context

_HUMAN_NAME = re.compile(r"[^a-z0-9._-]+")


def bearer(headers: Mapping[str, str]) -> str | None:
    value = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def human_from_claims(claims: Mapping[str, Any]) -> Principal:
    raw = str(claims.get("cognito:username") or claims.get("username") or claims.get("email") or "")
    name = _HUMAN_NAME.sub("-", raw.lower()).strip("-")[:64]
    sub = str(claims.get("sub") or "")
    if not name or not sub:
        raise TaskgateError(ErrorCode.UNAUTHORIZED, "the token names no user")
    return dataclasses.replace(
        human(name, credential_id=f"jwt:{sub}"), via=Via.BOARD if from_hosted_ui(claims) else None
    )


def from_hosted_ui(claims: Mapping[str, Any]) -> bool:
    """A token the board got: an access token of the OAuth code flow, which Cognito issues only
    to a person signing in on its hosted page and marks with the OAuth scopes asked for
    (`openid`). The CLI's ID token (`token_use` id) and the access token of admin password auth
    (scope `aws.cognito.signin.user.admin` only) are not."""
    scopes = str(claims.get("scope") or "").split()
    return claims.get("token_use") == "access" and "openid" in scopes


def principal(
    ctx: Context,
    headers: Mapping[str, str],
    *,
    jwt_claims: Mapping[str, Any] | None = None,
    admin_token_hash: str | None = None,
    admin_name: str = "admin",
) -> Principal:
    if jwt_claims:
        return human_from_claims(jwt_claims)
    token = bearer(headers)
    if token is None:
        raise TaskgateError(ErrorCode.UNAUTHORIZED, "missing 'Authorization: Bearer <key>'")
    if token.startswith(secrets.ADMIN_PREFIX):
        if admin_token_hash and secrets.matches(token, admin_token_hash):
            return human(admin_name, credential_id="admin")
        raise TaskgateError(ErrorCode.UNAUTHORIZED, "invalid admin token")
    return keys.authenticate(ctx, token)
