"""The REST API as one Powertools resolver, built from the route table in `access.ROUTES`.

Validation is on: request bodies, path and query parameters are parsed into the pydantic
models of `schemas`, responses are checked against the handlers' return types, and the
OpenAPI document is generated from the same handlers (routes/docs.py serves it at
/api/openapi.json, with Swagger UI at /api/docs).
"""

from __future__ import annotations

import logging
from typing import Any, get_type_hints

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel
from pydantic_core import from_json

from taskgate import runtime
from taskgate.api import access, routes  # noqa: F401  (routes: imported for their registrations)
from taskgate.api.access import ROUTES, Access, RouteSpec
from taskgate.api.errors import (
    JSON,
    RefusedWithDetail,
    field_errors,
    status_and_body,
    validation_message,
    with_nearest_projects,
)
from taskgate.api.routes.docs import BEARER
from taskgate.api.schemas import ErrorBody
from taskgate.domain.errors import HTTP_STATUS, INTERNAL, ErrorCode, TaskgateError
from taskgate.domain.principals import PrincipalKind

log = logging.getLogger("taskgate.api")

_ERROR_TEXT = {
    401: "No credential, or one that is unknown or revoked",
    403: "The credential may not do this",
    404: "No such project, task, spec, key or run",
    409: "The record is not in a state that allows this, or changed meanwhile",
    415: "The request body is not JSON",
    422: "The request is invalid",
}


def _error_response(status: int) -> OpenAPIResponse:
    codes = ", ".join(code.value for code, answered in HTTP_STATUS.items() if answered == status)
    return {"description": f"{_ERROR_TEXT[status]} ({codes})", "content": {JSON: {"model": ErrorBody}}}


def responses_for(spec: RouteSpec) -> dict[int, OpenAPIResponse]:
    out: dict[int, OpenAPIResponse] = {spec.status: {"description": "Success"}}
    codes = [422] if spec.access is Access.PUBLIC else [401, 403, 404, 409, 422]
    if spec.has_body:
        codes.append(415)
    for code in codes:
        out[code] = _error_response(code)
    return out


def _error(status: int, body: dict[str, Any], headers: dict[str, str]) -> Response[Any]:
    return Response(status_code=status, content_type=JSON, body=body, headers=headers)


def _guard(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """The route's declared caller, re-checked on the route Powertools actually matched.

    The handler already refused before routing (so 401/403 come before any 422); this is the
    net under it, should its path matching ever disagree with Powertools'."""
    spec = access.by_key(app.request.method, app.request.route)
    principal = access.current_principal()
    if spec is not None and not access.admits(spec.access, principal):
        if principal is None:
            raise TaskgateError(ErrorCode.UNAUTHORIZED, "missing 'Authorization: Bearer <key>'")
        raise access.forbidden(spec.access, principal)
    return next_middleware(app)


def _on_taskgate_error(exc: TaskgateError) -> Response[Any]:
    principal = access.current_principal()
    if exc.code is ErrorCode.NOT_FOUND and principal is not None and principal.kind is PrincipalKind.HUMAN:
        exc = with_nearest_projects(exc, runtime.context().project_names())
    return _error(*status_and_body(exc))


def _body_model(app: APIGatewayHttpResolver) -> type[BaseModel] | None:
    """The pydantic model the matched route reads its body into, if it has one."""
    spec = access.by_key(app.request.method, app.request.route)
    if spec is None or not spec.has_body:
        return None
    try:
        body = get_type_hints(spec.func).get("body")
    except (NameError, TypeError):
        return None
    return body if isinstance(body, type) and issubclass(body, BaseModel) else None


def _on_invalid(app: APIGatewayHttpResolver, exc: RequestValidationError) -> Response[Any]:
    model = _body_model(app)
    err = TaskgateError(ErrorCode.VALIDATION, validation_message(exc.errors(), model))
    return _error(*status_and_body(RefusedWithDetail(err, errors=field_errors(exc.errors(), model))))


def _on_not_json(exc: RequestUnsupportedContentType) -> Response[Any]:
    err = TaskgateError(ErrorCode.NOT_JSON, "the request body must be JSON (Content-Type: application/json)")
    return _error(*status_and_body(err))


def _on_no_route(exc: NotFoundError) -> Response[Any]:
    err = TaskgateError(ErrorCode.NOT_FOUND, "no such endpoint; see /api/docs")
    return _error(*status_and_body(err))


def _on_bug(exc: Exception) -> Response[Any]:
    log.exception("unhandled error in the REST API", exc_info=exc)
    body = {"code": INTERNAL, "message": "internal error; the server log has the details"}
    return _error(500, body, {"Content-Type": JSON})


def parse_json(text: str) -> Any:
    """The request body's JSON, parsed strictly: RFC 8259 numbers only (no NaN, no Infinity, no
    integer too long to convert), strings that are valid Unicode (no lone surrogate escape), and
    bounded nesting. Anything else is E_VALIDATION (422), never a 500.

    Why not json.loads (Powertools' default): it recurses per nesting level, so a deep body ends
    in RecursionError; it accepts NaN; and it decodes lone surrogates into text nothing can
    serialise again. pydantic's JSON parser (jiter) refuses all of these, with a nesting limit."""
    try:
        return from_json(text, allow_inf_nan=False)
    except ValueError as exc:
        raise TaskgateError(
            ErrorCode.VALIDATION,
            f"the request body is not valid JSON ({exc}); strings must be valid Unicode, "
            "numbers finite, nesting shallow",
        ) from exc


def build() -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver(
        enable_validation=True,
        json_body_deserializer=parse_json,
        # A response that does not match its declared model is our bug: 500, never a 422 that
        # would blame the client.
        response_validation_error_http_code=500,
    )
    for spec in ROUTES:
        public = spec.access is Access.PUBLIC
        app.route(
            spec.path,
            spec.method,
            summary=spec.summary,
            responses=responses_for(spec),
            tags=list(spec.tags) or None,
            operation_id=spec.func.__name__,
            include_in_schema=spec.include_in_schema,
            security=None if public else [{BEARER: []}],
            openapi_extensions={"x-taskgate-access": spec.access.value},
            status_code=spec.status,
        )(spec.func)
    app.use(middlewares=[_guard])

    # Registered by call, not as decorators: Powertools' decorators are untyped.
    app.exception_handler(TaskgateError)(_on_taskgate_error)
    app.exception_handler(RequestValidationError)(lambda exc: _on_invalid(app, exc))
    app.exception_handler(RequestUnsupportedContentType)(_on_not_json)
    app.exception_handler(NotFoundError)(_on_no_route)
    app.exception_handler(Exception)(_on_bug)
    return app


APP = build()
