"""The REST API on DynamoDB (moto), configured as on Lambda (TASKGATE_STORE=dynamodb): a human
signed in through Cognito (JWT claims) runs a project from keys to accepted work, and a
verifier key runs verification, all through v2 events into the handler."""

from __future__ import annotations

from taskgate.domain.principals import acting
from taskgate.service import claims, keys
from tests.api.support import Env, call, event
from tests.support.world import SHA


def test_a_cognito_user_runs_a_verified_project_on_dynamodb(dynamo_env: Env) -> None:
    env = dynamo_env
    assert (
        env.call("POST", "/api/projects", body={"name": "shop", "repo": "git@x:shop"}, caller="jwt").status
        == 201
    )
    minted = env.call(
        "POST", "/api/keys", body={"kind": "agent", "name": "builder", "projects": ["shop"]}, caller="jwt"
    ).json
    verifier_key = env.call(
        "POST",
        "/api/keys",
        body={"kind": "verifier", "name": "ci", "verifier_kind": "local", "projects": ["shop"]},
        caller="jwt",
    ).json["key"]
    config = {"checks": {"unit": {"command": "pytest", "report": {"path": "r.xml", "format": "junit"}}}}
    assert env.call("PUT", "/api/projects/shop/verifier-config", body=config, caller="jwt").status == 200
    on = env.call("PUT", "/api/projects/shop/verification", body={"on": True}, caller="jwt")
    assert on.status == 200 and on.json["on"] is True

    created = env.call(
        "POST",
        "/api/projects/shop/tasks",
        body={
            "title": "Cart",
            "criteria": [{"text": "cart test", "kind": "test", "verify_ref": "tests.cart"}],
        },
        caller="jwt",
    )
    assert created.status == 201 and created.json["task"]["created_by"] == "human:carol"
    tid = created.json["task"]["id"]
    builder = acting(keys.authenticate(env.ctx, minted["key"]))
    token = claims.claim(env.ctx, builder, "shop", task_id=tid).token
    claims.submit(env.ctx, builder, tid, token, commit_sha=SHA, evidence="added the cart")

    vhead = {"Authorization": f"Bearer {verifier_key}"}
    work = call(event("GET", "/api/verifier/work", query={"project": "shop"}, headers=vhead))
    assert work.status == 200 and work.json["items"] == [tid]
    started = call(event("POST", "/api/verifier/runs", body={"task_id": tid}, headers=vhead))
    assert started.status == 201, started
    assert (
        started.json["commit_sha"] == SHA and started.json["config"]["checks"]["unit"]["command"] == "pytest"
    )
    run_id, cid = started.json["run_id"], started.json["criteria"][0]["id"]
    again = call(event("POST", "/api/verifier/runs", body={"task_id": tid}, headers=vhead))
    assert (again.status, again.json["code"]) == (409, "E_WRONG_STATE")  # one live run per task
    finished = call(
        event(
            "POST",
            f"/api/verifier/runs/{tid}/{run_id}/finish",
            body={
                "checks": {"unit": {"exit_code": 0}},
                "results": {
                    cid: {
                        "result": "pass",
                        "detail": "ok",
                        "source": {"check": "unit", "report": "r.xml", "ref": "tests.cart"},
                    }
                },
            },
            headers=vhead,
        )
    )
    assert finished.status == 200 and finished.json["task_status"] == "verified"
    assert finished.json["run"]["status"] == "passed"

    assert env.call("POST", f"/api/tasks/{tid}/accept", "agent").status == 403
    accepted = env.call("POST", f"/api/tasks/{tid}/accept", caller="jwt")
    assert accepted.status == 200 and accepted.json["status"] == "done"
    detail = env.call("GET", f"/api/tasks/{tid}", caller="jwt").json
    assert [h["action"] for h in detail["history"]][-3:] == ["verification_started", "verify_pass", "accept"]
    assert detail["history"][-1]["actor"] == "human:carol"
    assert [r["status"] for r in detail["runs"]] == ["passed"]
    hist = env.call("GET", "/api/projects/shop/history", caller="jwt").json["items"]
    assert {"verification_on", "verifier_config_changed", "key_created"} <= {h["action"] for h in hist}
    m = env.call("GET", "/api/projects/shop/metrics", caller="jwt").json
    assert m["done"] == 1 and m["first_pass_verification"]["rate"] == 1.0


def test_paging_batch_accept_and_refusals_on_dynamodb(dynamo_env: Env) -> None:
    env = dynamo_env
    pid = env.project("shop")
    ids = [env.submitted(pid) for _ in range(3)]
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(5):
        query = {"status": "needs_verification", "limit": "2", **({"cursor": cursor} if cursor else {})}
        page = env.call("GET", f"/api/projects/{pid}/tasks", "jwt", query=query).json
        seen += [t["id"] for t in page["items"]]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids)
    assert env.call("GET", f"/api/projects/{pid}/tasks", "jwt", query={"cursor": "garbage"}).status == 422

    resp = env.call("POST", f"/api/projects/{pid}/accept", "admin", body={"task_ids": ids})
    assert resp.status == 200 and len(resp.json["accepted"]) == 3 and resp.json["refused"] == []
    assert env.call("GET", "/api/projects", "none").status == 401
    assert env.call("GET", "/api/projects", "verifier").status == 403
    assert env.call("POST", "/api/verifier/runs", "jwt", body={"task_id": ids[0]}).status == 403
