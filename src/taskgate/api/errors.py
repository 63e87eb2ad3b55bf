"""Every refusal the REST API gives, in one shape: JSON {code, message, hint, current_status?}
with the HTTP status of `HTTP_STATUS` (domain/errors.py), never one written beside a code. Request validation by Powertools comes back the same
way, with each failing field also listed in `errors` so the board can show it in place."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from taskgate import telemetry
from taskgate.domain.errors import HTTP_STATUS, ErrorCode, TaskgateError
from taskgate.domain.validation import explain, explained
from taskgate.telemetry import Metric

JSON = "application/json"

# What to do next, for the people and programs on the REST API (the board shows it under the
# message). The MCP hints (domain/errors.HINTS) name agent tools; these do not.
HINTS: dict[ErrorCode, str] = {
    ErrorCode.NOT_FOUND: "Check the id: it may be misspelt or belong to another project.",
    ErrorCode.WRONG_STATE: "Reload, and act on the record's current status.",
    ErrorCode.STALE_CLAIM: "That claim has ended; reload the task.",
    ErrorCode.SELF_ACCEPT: "Work is accepted or resolved by someone other than the credential that "
    "claimed or submitted it.",
    ErrorCode.SELF_VERIFY: "A verifier may not verify work submitted under its own credential.",
    ErrorCode.FORBIDDEN: "This credential may not do it; the message says who may.",
    ErrorCode.IDENTITY_MISMATCH: "Identity comes from the credential; do not name another one.",
    ErrorCode.VALIDATION: "Fix what the message names and send it again; nothing was changed.",
    ErrorCode.EMPTY_CRITERIA: "Give at least one acceptance criterion, or link an approved spec.",
    ErrorCode.CONFLICT: "Someone changed this at the same time; reload and try again.",
    ErrorCode.NOTHING_READY: "No task is ready right now.",
    ErrorCode.UNAUTHORIZED: "Sign in again: the credential is missing, unknown or revoked.",
    ErrorCode.UNAVAILABLE: "Nothing was changed; try again in a minute.",
    ErrorCode.TOO_LARGE: "Nothing was changed. Send less: the message says the limit.",
    ErrorCode.TIMEOUT: "Nothing was changed. The body arrived too slowly; send the request again, whole.",
    ErrorCode.METHOD_NOT_ALLOWED: "Use the method the message names.",
    ErrorCode.NOT_JSON: "Send the body as JSON, with 'Content-Type: application/json'.",
    ErrorCode.NOT_ACCEPTABLE: "Accept what the server answers in: 'Accept: application/json, "
    "text/event-stream' for MCP.",
    ErrorCode.WRONG_HOST: "Call the server at the address it serves on; it answers only for its own hosts.",
}


class RefusedWithDetail(TaskgateError):
    """A TaskgateError plus fields the board shows as lists (e.g. what verification lacks)."""

    def __init__(self, cause: TaskgateError, **extra: Any) -> None:
        super().__init__(cause.code, cause.message, current_status=cause.current_status)
        self.extra = extra

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), **self.extra}


_PROJECT_NOT_FOUND = re.compile(r"^project (?P<name>.+) not found$")


def with_nearest_projects(exc: TaskgateError, names: Sequence[str]) -> TaskgateError:
    """A refusal for a project that does not exist, saying the nearest names that do (for a
    human caller, who may see every project): a typo is fixed from the message itself."""
    m = _PROJECT_NOT_FOUND.match(exc.message) if exc.code is ErrorCode.NOT_FOUND else None
    if m is None or not names:
        return exc
    near = difflib.get_close_matches(m.group("name"), names, n=3, cutoff=0.5)
    if near:
        said = f"; the nearest: {', '.join(near)}"
    elif len(names) <= 5:
        said = f"; the projects are {', '.join(sorted(names))}"
    else:
        said = f"; none of the {len(names)} projects is near it (`taskgate project list` names them)"
    return TaskgateError(exc.code, exc.message + said, current_status=exc.current_status)


def headers_for(code: ErrorCode) -> dict[str, str]:
    headers = {"Content-Type": JSON}
    if code is ErrorCode.UNAUTHORIZED:
        headers["WWW-Authenticate"] = 'Bearer realm="taskgate"'
    return headers


def body_of(exc: TaskgateError) -> dict[str, Any]:
    return {**exc.to_dict(), "hint": HINTS[exc.code]}


def status_and_body(exc: TaskgateError) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Every refusal of the REST API is shaped here, so this is where refusals are counted."""
    telemetry.count(Metric.REFUSALS, code=exc.code.value)
    return HTTP_STATUS[exc.code], body_of(exc), headers_for(exc.code)


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


def field_errors(
    errors: Sequence[Mapping[str, Any]], body: type[BaseModel] | None = None
) -> list[dict[str, str]]:
    """Each failing field as {loc, msg} (never the input), for the board to show in place."""
    return [
        {"loc": ".".join(str(p) for p in e.get("loc", ())), "msg": explain(e, body, root="body")}
        for e in errors[:50]
    ]


def validation_message(errors: Sequence[Mapping[str, Any]], body: type[BaseModel] | None = None) -> str:
    """Pydantic/Powertools errors as one line: 'body.name: Field required; query.limit: ...'.
    Only locations, pydantic's messages and the names the body model knows: never the input
    echoed back. `body`: the route's body model, which names the keys an unknown one could be."""
    said = explained(errors, body, root="body")
    return f"invalid request: {said}" if said else "invalid request"
