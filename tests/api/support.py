"""Drive the REST API the way API Gateway does: HTTP API v2 events into the Lambda handler.

`event(...)` builds the event API Gateway would send (version 2.0, rawPath, rawQueryString and
queryStringParameters, lowercased headers, requestContext.http, the JWT authorizer's claims
for cloud humans, the body as a JSON string). `Api` sends them and parses the proxy response.
`Env` is a project world on the same store and clock as the handler, with one credential of
every kind, to prepare state through the services and call the API as anyone.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from taskgate import runtime
from taskgate.api.handler import handler
from taskgate.domain.clock import ManualClock
from taskgate.domain.models import AgentRole, CredentialKind, CriterionInput, CriterionKind, VerifierKind
from taskgate.domain.principals import Acting, acting
from taskgate.service import claims, keys, projects
from taskgate.service.context import Context
from tests.support import evidence
from tests.support.world import SHA, World

ADMIN_TOKEN = "tgh_test-admin-token-0123456789"
ADMIN_HASH = hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest()
NO_BODY: Any = object()


def event(
    method: str,
    path: str,
    *,
    query: dict[str, str] | str | None = None,
    headers: dict[str, str] | None = None,
    body: Any = NO_BODY,
    raw_body: bytes | None = None,
    claims: dict[str, Any] | None = None,
) -> dict[str, Any]:
    raw_query = query if isinstance(query, str) else urlencode(query or {})
    params: dict[str, str] = {}
    for k, v in parse_qsl(raw_query, keep_blank_values=True):
        params[k] = f"{params[k]},{v}" if k in params else v  # API Gateway joins repeats with commas
    hdrs = {k.lower(): v for k, v in (headers or {}).items()}
    ev: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": hdrs,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api",
            "domainName": "api.example.test",
            "domainPrefix": "api",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": hdrs.get("user-agent", "tests"),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": 1767225600000,
        },
        "isBase64Encoded": False,
    }
    if params:
        ev["queryStringParameters"] = params
    if claims is not None:
        ev["requestContext"]["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    if raw_body is not None:
        try:
            ev["body"] = raw_body.decode("utf-8")
        except UnicodeDecodeError:
            ev["body"] = base64.b64encode(raw_body).decode()
            ev["isBase64Encoded"] = True
    elif body is not NO_BODY:
        ev["body"] = json.dumps(body)
        hdrs.setdefault("content-type", "application/json")
    return ev


@dataclass
class Resp:
    status: int
    headers: dict[str, str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)

    def __repr__(self) -> str:
        return f"<{self.status} {self.text[:400]}>"


def call(ev: dict[str, Any]) -> Resp:
    out = handler(ev, None)
    assert set(out) >= {"statusCode", "headers", "body"}, out
    body = out["body"]
    if out.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    return Resp(out["statusCode"], {k.lower(): v for k, v in out["headers"].items()}, body)


def jwt_claims(username: str = "carol") -> dict[str, Any]:
    """Claims as API Gateway's JWT authorizer passes them for a Cognito user."""
    return {
        "sub": f"sub-{username}",
        "cognito:username": username,
        "iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_test",
        "token_use": "id",
        "exp": "1893456000",
    }


CALLERS = ("none", "agent", "architect", "verifier", "reviewer", "admin", "jwt")


@dataclass
class Env:
    """A world on the handler's own store and clock, and a credential of every kind."""

    world: World
    secrets: dict[str, str] = field(default_factory=dict)
    actings: dict[str, Acting] = field(default_factory=dict)

    @property
    def ctx(self) -> Context:
        return self.world.ctx

    @property
    def clock(self) -> ManualClock:
        return self.world.clock

    @classmethod
    def start(cls) -> Env:
        ctx = runtime.context()
        world = World(ctx.store)
        ctx.clock = world.clock  # the handler and the test's services share one manual clock
        env = cls(world)
        env.mint("agent", CredentialKind.AGENT, role=AgentRole.EXECUTOR)
        env.mint("architect", CredentialKind.AGENT, role=AgentRole.ARCHITECT)
        env.mint("verifier", CredentialKind.VERIFIER, verifier_kind=VerifierKind.LOCAL)
        env.mint("reviewer", CredentialKind.VERIFIER, verifier_kind=VerifierKind.REVIEWER)
        return env

    def mint(self, label: str, kind: CredentialKind, **kw: Any) -> str:
        minted = keys.create(self.ctx, self.world.human, kind=kind, name=label, **kw)
        self.secrets[label] = minted.secret
        self.actings[label] = acting(keys.authenticate(self.ctx, minted.secret))
        return minted.secret

    def headers(self, caller: str) -> dict[str, str]:
        if caller == "none":
            return {}
        if caller == "admin":
            return {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        if caller == "jwt":
            return {"Authorization": "Bearer eyJhbGciOi.fake.jwt"}  # API Gateway checked it already
        return {"Authorization": f"Bearer {self.secrets[caller]}"}

    def call(
        self,
        method: str,
        path: str,
        caller: str = "admin",
        *,
        body: Any = NO_BODY,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Resp:
        claims = jwt_claims() if caller == "jwt" else None
        hdrs = {**self.headers(caller), **(headers or {})}
        return call(event(method, path, query=query, headers=hdrs, body=body, claims=claims))

    # -- preparing state through the services ----------------------------------------------

    def project(self, name: str | None = None, *, verification: bool = False) -> str:
        name = name or f"p{uuid.uuid4().hex[:8]}"
        projects.create(self.ctx, self.world.human, name, repo="/tmp/repo")
        if verification:
            projects.set_verifier_config(self.ctx, self.world.human, name, evidence.CONFIG)
            projects.set_verification(self.ctx, self.world.human, name, True)
        return name

    def task(self, project: str, *, criteria: list[CriterionInput] | None = None, **kw: Any) -> str:
        crit = criteria or [CriterionInput(text="it works")]
        return self.world.task(project, criteria=crit, **kw).id

    def test_criterion(self, ref: str = "tests.test_x") -> list[CriterionInput]:
        return [CriterionInput(text="unit test passes", kind=CriterionKind.TEST, verify_ref=ref)]

    def submitted(self, project: str, *, by: str = "agent", **kw: Any) -> str:
        tid = self.task(project, **kw)
        who = self.actings[by]
        token = claims.claim(self.ctx, who, project, task_id=tid).token
        claims.submit(self.ctx, who, tid, token, commit_sha=SHA, evidence="done")
        return tid

    def escalated(self, project: str) -> str:
        tid = self.task(project)
        who = self.actings["agent"]
        token = claims.claim(self.ctx, who, project, task_id=tid).token
        claims.escalate(self.ctx, who, tid, token, question="which API?")
        return tid
