"""In the cloud, the board is known by its token: Cognito issues an access token with the OAuth
scopes only through the hosted UI's code flow, which is how the board signs in; the CLI's ID
token (and admin password auth's access token) is a terminal or a script by what the CLI says.
Through the REST handler with the claims API Gateway's JWT authorizer passes."""

from __future__ import annotations

from typing import Any

from taskgate.domain.principals import PRESENCE_HEADER
from tests.api.support import Env, call, event, jwt_claims

BEARER = {"Authorization": "Bearer eyJhbGciOi.fake.jwt"}  # API Gateway checked it already
HOSTED_UI = {**jwt_claims("carol"), "token_use": "access", "scope": "openid email profile", "client_id": "c"}
ADMIN_AUTH = {**jwt_claims("carol"), "token_use": "access", "scope": "aws.cognito.signin.user.admin"}


def _accept(env: Env, tid: str, claims: dict[str, Any], said: str | None = None) -> int:
    headers = {**BEARER, **({PRESENCE_HEADER: said} if said is not None else {})}
    return call(event("POST", f"/api/tasks/{tid}/accept", headers=headers, claims=claims)).status


def _via(env: Env, tid: str) -> str:
    history = env.call("GET", f"/api/tasks/{tid}").json["history"]
    return str(next(e for e in history if e["action"] == "accept")["detail"]["via"])


def test_only_the_hosted_ui_token_is_the_board(env: Env) -> None:
    project = env.project()
    cases = [
        (HOSTED_UI, None, "board"),
        (HOSTED_UI, "script", "board"),  # what the token is, not what the request says
        (jwt_claims("carol"), "terminal", "terminal"),
        (jwt_claims("carol"), None, "script"),
        (ADMIN_AUTH, None, "script"),
        ({**HOSTED_UI, "scope": "email profile"}, None, "script"),
        ({**HOSTED_UI, "token_use": "id"}, None, "script"),
    ]
    for claims, said, via in cases:
        tid = env.submitted(project)
        assert _accept(env, tid, claims, said) == 200
        assert _via(env, tid) == via, (claims, said)


def test_an_id_token_cannot_say_it_is_the_board(env: Env) -> None:
    project = env.project()
    tid = env.submitted(project)
    before = env.call("GET", f"/api/tasks/{tid}").json["task"]
    assert _accept(env, tid, jwt_claims("carol"), "board") == 422
    assert env.call("GET", f"/api/tasks/{tid}").json["task"] == before
