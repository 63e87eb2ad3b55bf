"""A WSGI face on the Lambda handler, for tools that speak WSGI (schemathesis): each request
becomes the API Gateway HTTP API v2 event API Gateway would send, and the proxy response goes
back as it is. Nothing is handled here that the handler would not see in the cloud."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from taskgate.api.handler import handler
from tests.api.support import event

# Characters a client sends unescaped in a path segment (RFC 3986 pchar); the rest travel as %XX,
# as they do to API Gateway's rawPath.
_PCHAR = "/:@!$&'()*+,;=-._~"


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    path = quote(environ.get("PATH_INFO", "/").encode("latin-1"), safe=_PCHAR)
    headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
    if environ.get("CONTENT_TYPE"):
        headers["content-type"] = environ["CONTENT_TYPE"]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else None
    ev = event(
        environ["REQUEST_METHOD"],
        path,
        query=environ.get("QUERY_STRING", ""),
        headers=headers,
        raw_body=body,
    )
    out = handler(ev, None)
    status = int(out["statusCode"])
    payload = out.get("body") or ""
    data = base64.b64decode(payload) if out.get("isBase64Encoded") else payload.encode()
    reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
    start_response(f"{status} {reason}", list(out.get("headers", {}).items()))
    return [data]
