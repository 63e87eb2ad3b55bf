"""Translate a local HTTP request into an API Gateway HTTP API v2 event, and a v2 proxy
response back into HTTP, so `taskgate serve` runs exactly the code Lambda runs."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl


def to_event(
    *,
    method: str,
    path: str,
    query: bytes,
    headers: Iterable[tuple[bytes, bytes]],
    body: bytes,
    client: tuple[str, int] | None,
) -> dict[str, Any]:
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for raw_name, raw_value in headers:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        if name == "cookie":
            cookies += [c.strip() for c in value.split(";") if c.strip()]
            continue
        # API Gateway joins repeated headers with commas
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    raw_qs = query.decode("latin-1")
    params: dict[str, str] = {}
    for k, v in parse_qsl(raw_qs, keep_blank_values=True):
        params[k] = f"{params[k]},{v}" if k in params else v
    try:
        text, is_b64 = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, is_b64 = base64.b64encode(body).decode(), True
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": raw_qs,
        "headers": joined,
        "requestContext": {
            "accountId": "local",
            "apiId": "local",
            "domainName": joined.get("host", "localhost"),
            "domainPrefix": joined.get("host", "localhost").split(".")[0],
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": client[0] if client else "127.0.0.1",
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": is_b64,
    }
    if cookies:
        event["cookies"] = cookies
    if params:
        event["queryStringParameters"] = params
    if body:
        event["body"] = text
    return event


def from_response(response: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    status = int(response.get("statusCode", 200))
    headers = [
        (k.lower().encode("latin-1"), str(v).encode("latin-1"))
        for k, v in (response.get("headers") or {}).items()
    ]
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers += [(name.lower().encode("latin-1"), str(v).encode("latin-1")) for v in values]
    headers += [(b"set-cookie", c.encode("latin-1")) for c in response.get("cookies") or []]
    raw = response.get("body") or ""
    body = base64.b64decode(raw) if response.get("isBase64Encoded") else raw.encode("utf-8")
    return status, headers, body
