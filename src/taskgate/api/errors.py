"""Every refusal the REST API gives, in one shape: JSON {code, message, current_status?} with the
HTTP status of `HTTP_STATUS`. Request validation by Powertools comes back the same way."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from taskgate import telemetry
from taskgate.domain.errors import HTTP_STATUS, ErrorCode, TaskgateError
from taskgate.telemetry import Metric

JSON = "application/json"
INTERNAL = "E_INTERNAL"  # a bug on our side; never a domain code, so clients cannot branch on it


class RefusedWithDetail(TaskgateError):
    """A TaskgateError plus fields the board shows as lists (e.g. what verification lacks)."""

    def __init__(self, cause: TaskgateError, **extra: Any) -> None:
        super().__init__(cause.code, cause.message, current_status=cause.current_status)
        self.extra = extra

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), **self.extra}


def headers_for(code: ErrorCode) -> dict[str, str]:
    headers = {"Content-Type": JSON}
    if code is ErrorCode.UNAUTHORIZED:
        headers["WWW-Authenticate"] = 'Bearer realm="taskgate"'
    return headers


def status_and_body(exc: TaskgateError) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Every refusal of the REST API is shaped here, so this is where refusals are counted."""
    telemetry.count(Metric.REFUSALS, code=exc.code.value)
    return HTTP_STATUS[exc.code], exc.to_dict(), headers_for(exc.code)


def proxy_response(status: int, body: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
    """An API Gateway HTTP API v2 proxy response, for refusals made before routing."""
    return {
        "statusCode": status,
        "headers": dict(headers),
        "body": json.dumps(body, separators=(",", ":")),
        "isBase64Encoded": False,
    }


def refusal(exc: TaskgateError) -> dict[str, Any]:
    status, body, headers = status_and_body(exc)
    return proxy_response(status, body, headers)


def validation_message(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic/Powertools errors as one line: 'body.name: Field required; query.limit: ...'.
    Only locations and pydantic's messages: never the input echoed back."""
    parts = []
    for e in errors[:10]:
        loc = ".".join(str(p) for p in e.get("loc", ()))
        parts.append(
            f"{loc}: {e.get('msg', e.get('type', 'invalid'))}" if loc else str(e.get("msg", "invalid"))
        )
    more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
    return ("invalid request: " + "; ".join(parts) + more) if parts else "invalid request"
