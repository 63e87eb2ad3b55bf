"""A refused body says which key is unknown and the nearest one the route knows, at any depth
and on any route: the message a person reads at the CLI and the field errors the board shows."""

from __future__ import annotations

from tests.api.support import Env
from tests.support.world import dump


def test_an_unknown_top_level_key_names_the_nearest_known_one(env: Env) -> None:
    pid = env.project("demo")
    before = dump(env.ctx.store)
    resp = env.call("PUT", f"/api/projects/{pid}/verifier-config", body={"check": {}})
    assert resp.status == 422
    assert "body.check: unknown key 'check'; did you mean 'checks'?" in resp.json["message"]
    assert {"loc": "body.check", "msg": "unknown key 'check'; did you mean 'checks'?"} in resp.json["errors"]
    assert dump(env.ctx.store) == before


def test_an_unknown_key_inside_a_check_names_the_checks_keys(env: Env) -> None:
    pid = env.project("demo")
    body = {"checks": {"unit": {"command": "pytest", "reprot": {"path": "r.xml"}}}}
    resp = env.call("PUT", f"/api/projects/{pid}/verifier-config", body=body)
    assert resp.status == 422
    assert "body.checks.unit.reprot: unknown key 'reprot'; did you mean 'report'?" in resp.json["message"]
    nothing_near = {"checks": {"unit": {"command": "pytest", "zzz": 1}}}
    said = env.call("PUT", f"/api/projects/{pid}/verifier-config", body=nothing_near).json["message"]
    assert "unknown key 'zzz'; the keys here are cache, command, report, timeout_minutes" in said


def test_an_unknown_key_in_a_list_item_of_another_route(env: Env) -> None:
    pid = env.project("demo")
    body = {
        "title": "t",
        "body": "b",
        "criteria": [{"text": "x", "kind": "test", "verfy_ref": "a.b"}],
    }
    resp = env.call("POST", f"/api/projects/{pid}/specs", body=body)
    assert resp.status == 422
    assert (
        "body.criteria.0.verfy_ref: unknown key 'verfy_ref'; did you mean 'verify_ref'?"
        in resp.json["message"]
    )


def test_a_wrong_project_name_gets_the_nearest_names_a_human_may_see(env: Env) -> None:
    env.project("my-app")
    env.project("my-lib")
    env.project("other")
    resp = env.call("GET", "/api/projects/my-ap")
    assert resp.status == 404 and resp.json["code"] == "E_NOT_FOUND"
    assert resp.json["message"].startswith("project my-ap not found; the nearest: my-app")
    far = env.call("GET", "/api/projects/zzzz/tasks").json["message"]
    assert far == "project zzzz not found; the projects are my-app, my-lib, other"
    # An agent key learns no project names from a typo.
    agent = env.call("GET", "/api/projects/my-ap", "agent")
    assert "my-app" not in agent.text
