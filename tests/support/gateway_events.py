"""The events API Gateway (HTTP API, payload 2.0) sends the cloud's functions: the key
authorizer's REQUEST event, a request passed on behind that authorizer, and a board request
behind the JWT authorizer (a Cognito human)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.mcp.events import HOST, v2_event

ROUTE_ARN = f"arn:aws:execute-api:us-east-1:123456789012:{HOST.split('.')[0]}/$default/POST/mcp"


def authorizer_event(key: str | None, *, route: str = "POST /mcp") -> dict[str, Any]:
    """API Gateway's REQUEST authorizer event, payload format 2.0, identity source Authorization."""
    method, path = route.split(" ", 1)
    headers = {"host": HOST, "content-type": "application/json", "user-agent": "agent/1.0"}
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    return {
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": ROUTE_ARN.replace("POST/mcp", f"{method}{path}"),
        "identitySource": [headers["authorization"]] if key is not None else [],
        "routeKey": f"ANY {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": HOST.split(".")[0],
            "domainName": HOST,
            "domainPrefix": HOST.split(".")[0],
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "agent/1.0",
            },
            "requestId": f"auth-{uuid.uuid4().hex[:12]}",
            "routeKey": f"ANY {path}",
            "stage": "$default",
            "time": "10/Mar/2026:00:00:00 +0000",
            "timeEpoch": 1773100800000,
        },
        "pathParameters": {},
        "stageVariables": {},
    }


def behind_authorizer(event: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The event API Gateway sends on after the key authorizer said yes: its context attached."""
    assert answer["isAuthorized"] is True
    event["requestContext"]["authorizer"] = {"lambda": answer["context"]}
    event["requestContext"]["requestId"] = f"req-{uuid.uuid4().hex[:12]}"
    return event


def jwt_event(method: str, path: str, body: Any = None) -> dict[str, Any]:
    """A REST request from the board: API Gateway's JWT authorizer validated a Cognito ID token."""
    event = v2_event(
        body, method=method, path=path, headers={"authorization": "Bearer eyJraWQiOi.payload.sig"}
    )
    event["requestContext"]["requestId"] = f"req-{uuid.uuid4().hex[:12]}"
    event["requestContext"]["authorizer"] = {
        "jwt": {
            "claims": {
                "sub": "4a7c-11",
                "cognito:username": "carol",
                "email": "carol@example.com",
                "iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_test",
                "token_use": "id",
                "aud": "client123",
            },
            "scopes": None,
        }
    }
    if body is None:
        event["headers"].pop("content-type", None)
    return event
