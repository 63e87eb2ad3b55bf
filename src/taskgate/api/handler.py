"""The REST API's Lambda entry point; `taskgate serve` calls the same function with the same
API Gateway HTTP API v2 events, so a local run exercises the cloud path.

Order of business for every request: find the route, authenticate, check the route's declared
caller (401 / 403), and only then let Powertools validate and run the handler. So nothing is
reachable without a credential, and a refused caller learns nothing about request shapes.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from taskgate import runtime
from taskgate.api import access, serial
from taskgate.api.app import APP
from taskgate.api.errors import JSON, proxy_response, refusal
from taskgate.auth.resolve import principal
from taskgate.domain.errors import INTERNAL, ErrorCode, TaskgateError
from taskgate.domain.principals import PRESENCE_HEADER, Principal, PrincipalKind, Via, via_claimed

log = logging.getLogger("taskgate.api")


def _jwt_claims(event: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Claims API Gateway's JWT authorizer validated (cloud humans). Only API Gateway sets this
    part of the event; the local server never copies it from a request."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    claims = (authorizer.get("jwt") or {}).get("claims")
    return claims if isinstance(claims, Mapping) and claims else None


def _path_decoded(event: Mapping[str, Any]) -> dict[str, Any]:
    """Percent-escapes in the path decoded (e.g. a run id's ':' sent as %3A), but never an
    escaped '/', which would change which route matches."""
    out = dict(event)
    raw = str(out.get("rawPath") or "")
    if "%" in raw and "%2f" not in raw.lower():
        out["rawPath"] = unquote(raw)
    return out


def _body_decoded(event: dict[str, Any]) -> None:
    """API Gateway base64-encodes any body that is not plainly text; JSON is UTF-8 text, so
    decode it here (Powertools would fail on anything else with a 500)."""
    if event.get("isBase64Encoded") and event.get("body"):
        try:
            event["body"] = base64.b64decode(str(event["body"])).decode("utf-8")
        except (ValueError, UnicodeDecodeError) as exc:
            raise TaskgateError(ErrorCode.VALIDATION, "the request body must be UTF-8 JSON") from exc
        event["isBase64Encoded"] = False


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media in ("", "application/json")


def _board_session(event: Mapping[str, Any]) -> bool:
    """`taskgate serve`'s mark of a request made with a token its board sign-in issued
    (local/gateway.py sets it; it builds this part of the event itself, from no request field)."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    local = authorizer.get("local") if isinstance(authorizer, Mapping) else None
    return isinstance(local, Mapping) and local.get("board") is True


def _authenticate(event: Mapping[str, Any]) -> Principal:
    ctx = runtime.context()  # first: it (re)reads the settings that runtime.settings() returns
    settings = runtime.settings()
    headers: Mapping[str, str] = event.get("headers") or {}
    who = principal(
        ctx,
        headers,
        jwt_claims=_jwt_claims(event),
        admin_token_hash=settings.admin_token_hash,
        admin_name=settings.admin_name,
    )
    if who.kind is not PrincipalKind.HUMAN:
        return who
    # How a human's request came: the board's sign-in says so itself (its session locally, the
    # hosted UI's token in the cloud); any other human token is a script unless the CLI says
    # its person confirmed at the terminal.
    if _board_session(event) or who.via is Via.BOARD:
        return dataclasses.replace(who, via=Via.BOARD)
    said = next((v for k, v in headers.items() if k.lower() == PRESENCE_HEADER.lower()), None)
    return dataclasses.replace(who, via=via_claimed(said))


def _handle(raw_event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    event = _path_decoded(raw_event)
    proxy = APIGatewayProxyEventV2(event)
    spec = access.match(proxy.http_method.upper(), proxy.path)
    who: Principal | None = None
    try:
        if spec is None or spec.access is not access.Access.PUBLIC:
            who = _authenticate(event)
            if spec is not None and not access.admits(spec.access, who):
                raise access.forbidden(spec.access, who)
        if spec is not None and spec.has_body:
            if not _is_json(proxy.headers.get("content-type")):
                # JSON only: Powertools would also parse forms and multipart (and fail on bad ones).
                raise TaskgateError(
                    ErrorCode.NOT_JSON, "the request body must be JSON (Content-Type: application/json)"
                )
            _body_decoded(event)
    except TaskgateError as exc:
        return refusal(exc)
    access.set_caller(who)
    try:
        return APP.resolve(event, context)
    finally:
        access.set_caller(None)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    with serial.LOCK:  # one request at a time (api/serial.py)
        try:
            return _handle(event, context)
        except Exception:
            # Outside the resolver (e.g. the store cannot be opened): still answer in our shape.
            log.exception("unhandled error before routing")
            return proxy_response(
                500, {"code": INTERNAL, "message": "internal error"}, {"Content-Type": JSON}
            )
