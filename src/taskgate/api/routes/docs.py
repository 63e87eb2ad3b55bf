"""The OpenAPI document (generated from the handlers) and Swagger UI, both public.

Built on first request and kept: schema generation and Powertools' OpenAPI models are the
slowest part of the API to import, and a cold Lambda answering the board should not pay for
them. (Powertools' own `enable_swagger` would import them at start.)
"""

from __future__ import annotations

import functools
from pathlib import Path

from aws_lambda_powertools.event_handler import Response

import taskgate
from taskgate.api.access import Access, route

DOCS_PATH = "/api/docs"
OPENAPI_PATH = "/api/openapi.json"
BEARER = "bearer"

DESCRIPTION = (
    "taskgate's REST API, for humans (the board and the CLI) and verifiers. Agents use MCP. "
    "Every endpoint but /api/health and this document needs 'Authorization: Bearer <credential>': "
    "the local admin token or a signed-in user (cloud) on human endpoints, a verifier key on "
    "/api/verifier/*. Each operation's x-taskgate-access says which. Errors are JSON "
    "{code, message, current_status?}; clients branch on code."
)


@route("GET", OPENAPI_PATH, Access.PUBLIC, summary="This API's OpenAPI document", include_in_schema=False)
def openapi_document() -> Response[str]:
    return Response(status_code=200, content_type="application/json", body=openapi_json())


@route("GET", DOCS_PATH, Access.PUBLIC, summary="Swagger UI", include_in_schema=False)
def swagger_ui() -> Response[str]:
    return Response(status_code=200, content_type="text/html", body=_swagger_html())


@functools.cache
def openapi_json() -> str:
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    from taskgate.api.app import APP  # the resolver imports this module: import it late

    APP.configure_openapi(
        title="taskgate",
        version=taskgate.__version__,
        description=DESCRIPTION,
        security_schemes={BEARER: HTTPBearer(description="admin token, user JWT, or verifier key")},
    )
    return APP.get_openapi_json_schema()


@functools.cache
def _swagger_html() -> str:
    from aws_lambda_powertools.event_handler.openapi import swagger_ui as ui

    assets = Path(ui.__file__).parent
    js = (assets / "swagger-ui-bundle.min.js").read_text(encoding="utf-8")
    css = (assets / "swagger-ui.min.css").read_text(encoding="utf-8")
    # As Powertools does: keep a '</script>' inside the spec from closing the page's script tag.
    spec = openapi_json().replace("</", "<\\/")
    return ui.generate_swagger_html(spec, js, css, "", None)
