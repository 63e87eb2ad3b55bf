"""Authentication and the error shape, through real v2 events into the handler."""

from __future__ import annotations

import json

import pytest

from taskgate.api import access
from taskgate.api.access import ROUTES, Access
from taskgate.domain.models import CredentialKind, VerifierKind
from taskgate.service import claims, keys
from tests.api.support import ADMIN_TOKEN, Env, call, event, jwt_claims
from tests.support.world import dump


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer"},
        {"Authorization": f"Basic {ADMIN_TOKEN}"},
        _bearer("tgh_not-the-admin-token"),
        _bearer("tga_unknown-key-000000000000000000"),
        _bearer("tgv_unknown-key-000000000000000000"),
        _bearer("something-else"),
    ],
    ids=["none", "empty", "no-token", "basic", "wrong-admin", "unknown-agent", "unknown-verifier", "junk"],
)
def test_no_valid_credential_is_401_with_a_challenge(env: Env, headers: dict[str, str]) -> None:
    resp = call(event("GET", "/api/projects", headers=headers))
    assert resp.status == 401
    assert resp.json["code"] == "E_UNAUTHORIZED"
    assert resp.headers["www-authenticate"].startswith("Bearer")
    assert resp.headers["content-type"] == "application/json"


def test_a_revoked_key_stops_working_at_once(env: Env) -> None:
    minted = keys.create(
        env.ctx, env.world.human, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL
    )
    ok = call(
        event("GET", "/api/verifier/work", query={"project": env.project()}, headers=_bearer(minted.secret))
    )
    assert ok.status == 200
    assert env.call("POST", f"/api/keys/{minted.credential.id}/revoke").status == 200
    resp = call(event("GET", "/api/verifier/work", query={"project": "x"}, headers=_bearer(minted.secret)))
    assert resp.status == 401 and "revoked" in resp.json["message"]


def test_jwt_claims_make_a_cognito_user_a_human(env: Env) -> None:
    resp = call(event("POST", "/api/projects", body={"name": "web"}, claims=jwt_claims("Dana.Smith")))
    assert resp.status == 201
    assert resp.json["created_by"] == "human:dana.smith"
    hist = env.call("GET", "/api/projects/web/history").json["items"]
    # (the env's keys for every project are in this history too: older, so last)
    (created,) = [e for e in hist if e["action"] == "project_created"]
    assert created["actor"] == "human:dana.smith"
    assert created["credential_id"] == "jwt:sub-Dana.Smith"


def test_jwt_claims_without_a_subject_are_refused(env: Env) -> None:
    resp = call(event("GET", "/api/projects", claims={"cognito:username": "eve"}))
    assert resp.status == 401


def test_credentials_are_checked_before_the_request_shape(env: Env) -> None:
    """A caller who may not call a route learns nothing about what it accepts."""
    before = dump(env.ctx.store)
    bad = {"nonsense": True}
    assert env.call("POST", "/api/projects", "none", body=bad).status == 401
    assert env.call("POST", "/api/projects", "agent", body=bad).status == 403
    assert env.call("POST", "/api/verifier/runs", "admin", body=bad).status == 403
    assert env.call("GET", "/api/projects/x/tasks", "verifier", query={"limit": "0"}).status == 403
    assert dump(env.ctx.store) == before


def test_unknown_paths_need_a_credential_too(env: Env) -> None:
    assert env.call("GET", "/api/nothing-here", "none").status == 401
    resp = env.call("GET", "/api/nothing-here")
    assert resp.status == 404 and resp.json["code"] == "E_NOT_FOUND"
    assert env.call("DELETE", "/api/projects", "none").status == 401
    assert env.call("DELETE", "/api/projects").status == 404


def test_the_guard_holds_even_if_routing_disagrees(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The net under the pre-routing check: the route Powertools matched is checked again."""
    env.project("demo")
    monkeypatch.setattr(access, "match", lambda method, path: None)
    resp = env.call("GET", "/api/projects/demo", "agent")
    assert resp.status == 403 and resp.json["code"] == "E_FORBIDDEN"
    resp = env.call("GET", "/api/verifier/work", "admin", query={"project": "demo"})
    assert resp.status == 403
    assert env.call("GET", "/api/projects/demo", "admin").status == 200


def test_validation_errors_come_back_in_the_error_shape_and_write_nothing(env: Env) -> None:
    before = dump(env.ctx.store)
    resp = env.call("POST", "/api/projects", body={"nam": "typo"})
    assert resp.status == 422
    assert resp.json["code"] == "E_VALIDATION"
    assert "body.name" in resp.json["message"] and "body.nam" in resp.json["message"]
    assert set(resp.json) == {"code", "message", "hint", "errors"}
    assert {e["loc"] for e in resp.json["errors"]} == {"body.name", "body.nam"}
    assert "typo" not in resp.text  # the input is never echoed back
    resp = call(event("POST", "/api/projects", headers=_bearer(ADMIN_TOKEN), raw_body=b"{not json"))
    assert resp.status == 422 and resp.json["code"] == "E_VALIDATION"
    resp = call(
        event(
            "POST",
            "/api/projects",
            headers={**_bearer(ADMIN_TOKEN), "content-type": "text/plain"},
            raw_body=b"name=x",
        )
    )
    assert resp.status == 415 and resp.json["code"] == "E_NOT_JSON"
    resp = env.call("GET", "/api/projects/x/tasks", query={"limit": "0"})
    assert resp.status == 422 and "query.limit" in resp.json["message"]
    resp = env.call("GET", "/api/projects/x/tasks", query={"status": "finished"})
    assert resp.status == 422
    assert dump(env.ctx.store) == before


def test_domain_errors_map_to_their_status(env: Env) -> None:
    env.project("demo")
    assert env.call("GET", "/api/projects/none").json["code"] == "E_NOT_FOUND"
    assert env.call("GET", "/api/projects/none").status == 404
    resp = env.call("POST", "/api/projects", body={"name": "demo"})
    assert (resp.status, resp.json["code"]) == (409, "E_CONFLICT")
    resp = env.call("POST", "/api/projects/demo/tasks", body={"title": "x", "criteria": []})
    assert (resp.status, resp.json["code"]) == (422, "E_EMPTY_CRITERIA")
    tid = env.task("demo")
    resp = env.call("POST", f"/api/tasks/{tid}/accept")
    assert (resp.status, resp.json["code"], resp.json["current_status"]) == (409, "E_WRONG_STATE", "ready")
    resp = env.call("GET", "/api/tasks/not-a-task-id!")
    assert resp.status in (404, 422)


def test_secrets_never_leave_the_server(env: Env) -> None:
    pid = env.project("demo")
    created = env.call("POST", "/api/keys", body={"kind": "agent", "name": "bob", "projects": [pid]})
    assert created.status == 201 and created.json["key"].startswith("tga_")
    listed = env.call("GET", "/api/keys").text
    assert created.json["key"] not in listed and "key_hash" not in listed
    tid = env.task(pid)
    claims.claim(env.ctx, env.actings["agent"], pid, task_id=tid)
    detail = env.call("GET", f"/api/tasks/{tid}").json
    assert detail["task"]["claim"]["actor"] == "agent:agent"
    assert "token_hash" not in json.dumps(detail)


def test_percent_encoded_path_segments_are_decoded(env: Env) -> None:
    pid = env.project("demo")
    assert env.call("GET", "/api/projects/de%6Do").json["name"] == pid
    assert env.call("GET", "/api/projects/demo%2Ftasks").status == 404


def test_health_and_docs_are_public(env: Env) -> None:
    health = env.call("GET", "/api/health", "none")
    assert health.status == 200 and health.json["status"] == "ok"
    docs = env.call("GET", "/api/docs", "none")
    assert docs.status == 200 and "swagger" in docs.text.lower()
    doc = env.call("GET", "/api/openapi.json", "none").json
    assert doc["openapi"].startswith("3.1")
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert documented == {r.key for r in ROUTES if r.include_in_schema}
    for r in ROUTES:
        if not r.include_in_schema:
            continue
        op = doc["paths"][r.openapi_path][r.method.lower()]
        assert op["x-taskgate-access"] == r.access.value
        assert ("security" in op) == (r.access is not Access.PUBLIC)
        assert str(r.status) in op["responses"]


def test_concurrent_requests_from_worker_threads_do_not_mix(env: Env) -> None:
    """`taskgate serve` calls the handler from worker threads; each answer is its own."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    pid = env.project("demo")
    ids = [env.task(pid) for _ in range(8)]

    def read(tid: str) -> str:
        return str(env.call("GET", f"/api/tasks/{tid}").json["task"]["id"])

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to meet any shared state
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            got = list(pool.map(read, ids * 10))
    finally:
        sys.setswitchinterval(interval)
    assert got == ids * 10


def test_the_lambda_entry_point_is_the_handler() -> None:
    import importlib.util
    import inspect
    from pathlib import Path

    from taskgate.api.handler import handler

    path = Path(__file__).resolve().parents[2] / "functions" / "api" / "app.py"
    spec = importlib.util.spec_from_file_location("api_entry", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # The cloud entry point is this handler with Powertools logging, metrics and tracing around it.
    from taskgate.cloud.api import handler as instrumented

    assert module.handler is instrumented
    assert inspect.unwrap(module.handler) is handler
