"""The human-only rules, end to end through the REST API."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import AgentRole, CredentialKind, Risk, VerifierKind
from taskgate.domain.principals import acting
from taskgate.domain.run_report import Evidence
from taskgate.service import keys, review, verification
from tests.api.support import Env
from tests.support.evidence import run_verifier
from tests.support.world import dump

CONFIG = {"checks": {"unit": {"command": "pytest", "report": {"path": "r.xml", "format": "junit"}}}}


def _status(env: Env, tid: str) -> str:
    return str(env.call("GET", f"/api/tasks/{tid}").json["task"]["status"])


# -- accepting ------------------------------------------------------------------------------


def test_medium_and_high_risk_are_never_batch_accepted(env: Env) -> None:
    pid = env.project("demo")
    low = env.submitted(pid)
    medium = env.submitted(pid, risk=Risk.MEDIUM)
    high = env.submitted(pid, risk=Risk.HIGH)
    resp = env.call("POST", f"/api/projects/{pid}/accept", body={"task_ids": [medium, low, high]})
    assert resp.status == 200
    assert [t["id"] for t in resp.json["accepted"]] == [low]
    refused = {r["task_id"]: r for r in resp.json["refused"]}
    assert set(refused) == {medium, high}
    for r in refused.values():
        assert r["code"] == "E_FORBIDDEN" and "batch" in r["message"]
    assert (_status(env, medium), _status(env, high)) == ("needs_verification", "needs_verification")
    # one by one, a human accepts any risk
    for tid in (medium, high):
        one = env.call("POST", f"/api/tasks/{tid}/accept", "jwt")
        assert one.status == 200 and one.json["status"] == "done"


def test_batch_accept_refuses_other_projects_and_bad_ids(env: Env) -> None:
    pid, other = env.project("demo"), env.project("other")
    theirs = env.submitted(other)
    resp = env.call("POST", f"/api/projects/{pid}/accept", body={"task_ids": [theirs, "junk"]})
    assert resp.status == 200 and resp.json["accepted"] == []
    assert {r["code"] for r in resp.json["refused"]} == {"E_VALIDATION"}
    assert _status(env, theirs) == "needs_verification"
    assert env.call("POST", "/api/projects/nope/accept", body={"task_ids": [theirs]}).status == 404
    assert env.call("POST", f"/api/projects/{pid}/accept", body={"task_ids": []}).status == 422


def test_a_delegated_agent_accepts_low_risk_work_but_never_its_own(env: Env) -> None:
    """Accepting from chat goes through the service (MCP's accept_tasks); the REST API itself
    is for humans, so the same key is refused there. History shows both names."""
    pid = env.project("demo")
    env.mint("helper", CredentialKind.AGENT, role=AgentRole.EXECUTOR, delegations=["human:admin"])
    helper = env.actings["helper"]
    as_admin = acting(helper.principal, on_behalf_of="human:admin")
    others = env.submitted(pid)  # submitted by agent:agent
    own = env.submitted(pid, by="helper")
    medium = env.submitted(pid, risk=Risk.MEDIUM)

    before = dump(env.ctx.store)
    assert env.call("POST", f"/api/tasks/{others}/accept", "helper").status == 403
    assert dump(env.ctx.store) == before

    review.accept(env.ctx, as_admin, others)
    detail = env.call("GET", f"/api/tasks/{others}").json
    assert detail["task"]["status"] == "done"
    last = detail["history"][-1]
    assert (last["action"], last["actor"], last["on_behalf_of"]) == ("accept", "agent:helper", "human:admin")

    with pytest.raises(TaskgateError) as err:
        review.accept(env.ctx, as_admin, own)
    assert err.value.code is ErrorCode.SELF_ACCEPT
    with pytest.raises(TaskgateError) as err:
        review.accept(env.ctx, as_admin, medium)
    assert err.value.code is ErrorCode.FORBIDDEN
    # the human accepts both on the board
    assert env.call("POST", f"/api/tasks/{own}/accept").status == 200
    assert env.call("POST", f"/api/tasks/{medium}/accept").status == 200


def test_reopen_needs_findings_and_they_reach_the_next_attempt(env: Env) -> None:
    pid = env.project("demo")
    tid = env.submitted(pid)
    assert env.call("POST", f"/api/tasks/{tid}/reopen", body={"findings": ["  "]}).status == 422
    resp = env.call("POST", f"/api/tasks/{tid}/reopen", body={"findings": ["no test for /healthz"]})
    assert resp.status == 200
    assert resp.json["status"] == "ready" and resp.json["attempts_used"] == 1
    assert resp.json["findings"][-1]["summary"] == "no test for /healthz"
    assert resp.json["findings"][-1]["by"] == "human:admin"


def test_a_done_task_can_be_reopened_and_cancel_and_resolve(env: Env) -> None:
    pid = env.project("demo")
    tid = env.submitted(pid)
    assert env.call("POST", f"/api/tasks/{tid}/accept").json["status"] == "done"
    assert env.call("POST", f"/api/tasks/{tid}/cancel").status == 409  # done cannot be cancelled
    assert (
        env.call("POST", f"/api/tasks/{tid}/reopen", body={"findings": ["regressed"]}).json["status"]
        == "ready"
    )
    assert env.call("POST", f"/api/tasks/{tid}/cancel").json["status"] == "cancelled"  # no body at all

    waiting = env.escalated(pid)
    resp = env.call("POST", f"/api/tasks/{waiting}/resolve", body={"resolution": "block"})
    assert resp.status == 422  # block needs blocked_by
    blocker = env.task(pid)
    resp = env.call(
        "POST", f"/api/tasks/{waiting}/resolve", body={"resolution": "block", "blocked_by": [blocker]}
    )
    assert resp.json["status"] == "blocked" and resp.json["blocked_by"] == [blocker]
    for resolution, status in (("requeue", "ready"), ("cancel", "cancelled")):
        t = env.escalated(pid)
        resp = env.call("POST", f"/api/tasks/{t}/resolve", body={"resolution": resolution, "note": "ok"})
        assert resp.json["status"] == status, resp
    t = env.escalated(pid)
    assert env.call("POST", f"/api/tasks/{t}/resolve", body={"resolution": "reverify"}).status == 422
    assert env.call("POST", f"/api/tasks/{t}/resolve", body={"resolution": "later"}).status == 422


def test_specs_of_any_risk_are_approved_by_a_human_and_rendered(env: Env) -> None:
    pid = env.project("demo")
    spec = env.call(
        "POST",
        f"/api/projects/{pid}/specs",
        body={
            "title": "Payments",
            "body": "Charge cards.",
            "risk": "high",
            "criteria": [{"text": "refunds work", "kind": "test", "verify_ref": "tests.Pay.refund"}],
        },
    )
    assert spec.status == 201 and spec.json["status"] == "draft"
    sid = spec.json["id"]
    task = env.call("POST", f"/api/projects/{pid}/tasks", body={"title": "Refunds", "spec_id": sid})
    assert task.json["task"]["status"] == "backlog" and task.json["task"]["risk"] == "high"
    approved = env.call("POST", f"/api/projects/{pid}/specs/{sid}/approve")
    assert approved.status == 200 and approved.json["moved"] == [task.json["task"]["id"]]
    assert approved.json["spec"]["approved_by"] == "human:admin"
    md = env.call("GET", f"/api/projects/{pid}/specs/{sid}/markdown").json
    assert md["path"] == f"specs/{sid}.md"
    assert md["markdown"].startswith(f"# {sid}: Payments") and "tests.Pay.refund" in md["markdown"]
    revised = env.call("POST", f"/api/projects/{pid}/specs/{sid}/revise", body={"body": "Charge and refund."})
    assert (revised.json["status"], revised.json["revision"]) == ("draft", 2)
    assert env.call("POST", f"/api/projects/{pid}/specs/{sid}/approve", "agent").status == 403


# -- the verification switch ----------------------------------------------------------------


def test_verification_cannot_be_switched_on_without_key_and_config(env: Env) -> None:
    for label in ("verifier", "reviewer"):  # the env's keys: revoke them so none is live
        keys.revoke(env.ctx, env.world.human, env.actings[label].credential_id)
    pid = env.project("demo")
    key_missing = "a live local verifier key that covers this project"
    config_missing = "a saved verifier config with at least one check"

    def switch_on() -> list[str]:
        before = dump(env.ctx.store)
        resp = env.call("PUT", f"/api/projects/{pid}/verification", body={"on": True})
        if resp.status == 200:
            return []
        assert (resp.status, resp.json["code"]) == (422, "E_VALIDATION")
        assert dump(env.ctx.store) == before
        state = env.call("GET", f"/api/projects/{pid}/verification").json
        assert state["on"] is False and state["missing"] == resp.json["missing"]
        return list(resp.json["missing"])

    assert switch_on() == [key_missing, config_missing]
    # a reviewer key, or a local key for another project, does not count
    keys.create(
        env.ctx, env.world.human, kind=CredentialKind.VERIFIER, name="rv", verifier_kind=VerifierKind.REVIEWER
    )
    other = env.project("other")
    keys.create(
        env.ctx,
        env.world.human,
        kind=CredentialKind.VERIFIER,
        name="ci-other",
        verifier_kind=VerifierKind.LOCAL,
        projects_=[other],
    )
    assert switch_on() == [key_missing, config_missing]
    assert env.call("PUT", f"/api/projects/{pid}/verifier-config", body={"checks": {}}).status == 200
    assert switch_on() == [key_missing, config_missing]  # a config without checks does not count
    assert env.call("PUT", f"/api/projects/{pid}/verifier-config", body=CONFIG).status == 200
    assert switch_on() == [key_missing]
    created = env.call(
        "POST",
        "/api/keys",
        body={"kind": "verifier", "name": "ci", "verifier_kind": "local", "projects": [pid]},
    )
    assert created.status == 201 and created.json["key"].startswith("tgv_")
    resp = env.call("PUT", f"/api/projects/{pid}/verification", body={"on": True})
    assert resp.status == 200
    assert resp.json == {"on": True, "missing": [], "warnings": []}
    hist = env.call("GET", f"/api/projects/{pid}/history").json["items"]
    actions = [(e["action"], e["actor"]) for e in hist]
    assert actions[0] == ("verification_on", "human:admin")
    assert ("verifier_config_changed", "human:admin") in actions and ("key_created", "human:admin") in actions


def test_a_config_change_records_the_config_it_replaced(env: Env) -> None:
    """The board shows a config change as a diff of old and new: the event carries both."""
    pid = env.project("demo")
    assert env.call("PUT", f"/api/projects/{pid}/verifier-config", body=CONFIG).status == 200
    slower = {**CONFIG, "check_timeout_minutes": 45}
    assert env.call("PUT", f"/api/projects/{pid}/verifier-config", body=slower).status == 200
    hist = env.call("GET", f"/api/projects/{pid}/history").json["items"]
    changes = [e["detail"] for e in hist if e["action"] == "verifier_config_changed"]
    assert len(changes) == 2
    assert changes[1]["previous"] == {}  # the first config replaced nothing
    assert changes[0]["previous"] == changes[1]["config"]
    assert changes[0]["config"]["check_timeout_minutes"] == 45
    assert changes[0]["previous"]["check_timeout_minutes"] != 45


def test_the_verifier_config_is_validated(env: Env) -> None:
    pid = env.project("demo")
    before = dump(env.ctx.store)
    for bad in (
        {"checks": {"unit": {"command": ""}}},
        {"checks": {"unit": {"command": "pytest", "report": {"path": "../../etc/passwd"}}}},
        {"checks": {"bad name!": {"command": "pytest"}}},
        {"checks": {"unit": {"command": "pytest", "shell": True}}},
        {"check_timeout_minutes": 0},
    ):
        resp = env.call("PUT", f"/api/projects/{pid}/verifier-config", body=bad)
        assert (resp.status, resp.json["code"]) == (422, "E_VALIDATION"), bad
    assert dump(env.ctx.store) == before
    none = env.call("GET", f"/api/projects/{pid}/verifier-config").json
    assert (none["config"], none["protect_in_force"]) == (None, [])
    env.call("PUT", f"/api/projects/{pid}/verifier-config", body=CONFIG)
    cfg = env.call("GET", f"/api/projects/{pid}/verifier-config").json["config"]
    assert cfg["checks"]["unit"]["report"] == {"path": "r.xml", "format": "junit"}
    assert cfg["check_timeout_minutes"] == 15


def test_switching_off_with_work_in_flight(env: Env) -> None:
    """Switching verification off: needs_verification becomes acceptable directly, verified stays
    acceptable, and a run in progress on a task accepted or reopened is marked superseded."""
    pid = env.project("demo", verification=True)
    local = env.actings["verifier"]
    waiting = env.submitted(pid)
    verified = env.submitted(pid, criteria=env.test_criterion())
    running_accept = env.submitted(pid)
    running_reopen = env.submitted(pid)

    run_verifier(env.ctx, local, verified, Evidence.PASS)
    assert _status(env, verified) == "verified"
    live_a = verification.start(env.ctx, local, task_id=running_accept).run.id
    live_r = verification.start(env.ctx, local, task_id=running_reopen).run.id

    # while on, submitted work waits for the verifier
    resp = env.call("POST", f"/api/tasks/{waiting}/accept")
    assert (resp.status, resp.json["code"], resp.json["current_status"]) == (
        409,
        "E_WRONG_STATE",
        "needs_verification",
    )
    work = env.call("GET", "/api/verifier/work", "verifier", query={"project": pid}).json["items"]
    assert work == [waiting]  # the other two are being verified

    off = env.call("PUT", f"/api/projects/{pid}/verification", body={"on": False})
    assert off.status == 200 and off.json["on"] is False
    assert env.call("GET", "/api/verifier/work", "verifier", query={"project": pid}).json["items"] == []

    assert env.call("POST", f"/api/tasks/{waiting}/accept").json["status"] == "done"
    assert env.call("POST", f"/api/tasks/{verified}/accept").json["status"] == "done"
    assert env.call("POST", f"/api/tasks/{running_accept}/accept").json["status"] == "done"
    reopened = env.call("POST", f"/api/tasks/{running_reopen}/reopen", body={"findings": ["wrong port"]})
    assert reopened.json["status"] == "ready"
    for tid, run_id in ((running_accept, live_a), (running_reopen, live_r)):
        runs = env.call("GET", f"/api/tasks/{tid}").json["runs"]
        assert [(r["id"], r["status"]) for r in runs] == [(run_id, "superseded")]
        late = env.call(
            "POST",
            f"/api/verifier/runs/{tid}/{run_id}/finish",
            "verifier",
            body={"checks": {"unit": {"exit_code": 0}}},
        )
        assert (late.status, late.json["code"]) == (409, "E_STALE_CLAIM")
    hist = env.call("GET", f"/api/projects/{pid}/history").json["items"]
    assert (hist[0]["action"], hist[0]["actor"]) == ("verification_off", "human:admin")


def test_revoking_the_last_local_key_while_on_warns(env: Env) -> None:
    pid = env.project("demo", verification=True)
    second = env.call(
        "POST",
        "/api/keys",
        body={"kind": "verifier", "name": "ci2", "verifier_kind": "local", "projects": [pid]},
    ).json["credential"]["id"]
    reviewer = env.actings["reviewer"].credential_id
    assert env.call("POST", f"/api/keys/{reviewer}/revoke").json["warnings"] == []
    assert env.call("POST", f"/api/keys/{second}/revoke").json["warnings"] == []  # the env's key is left
    last = env.actings["verifier"].credential_id
    resp = env.call("POST", f"/api/keys/{last}/revoke")
    assert resp.status == 200 and resp.json["credential"]["live"] is False
    assert len(resp.json["warnings"]) == 1 and pid in resp.json["warnings"][0]
    state = env.call("GET", f"/api/projects/{pid}/verification").json
    assert state["on"] is True  # stays on; submissions wait
    assert state["missing"] == ["a live local verifier key that covers this project"]
    assert state["warnings"] and "waits" in state["warnings"][0]
    assert env.call("POST", f"/api/keys/{last}/revoke").status == 409  # already revoked
    # global key changes are in the global history
    hist = env.call("GET", "/api/projects/*/history").json["items"]
    assert {"key_created", "key_revoked"} <= {e["action"] for e in hist}


def test_keys_are_minted_with_role_projects_and_delegations(env: Env) -> None:
    pid = env.project("demo")
    resp = env.call(
        "POST",
        "/api/keys",
        body={
            "kind": "agent",
            "name": "arch",
            "role": "architect",
            "projects": [pid],
            "delegations": ["human:admin"],
        },
    )
    assert resp.status == 201
    cred = resp.json["credential"]
    assert (cred["role"], cred["projects"], cred["delegations"], cred["live"]) == (
        "architect",
        [pid],
        ["human:admin"],
        True,
    )
    principal = keys.authenticate(env.ctx, resp.json["key"])
    assert principal.actor == "agent:arch" and principal.projects == (pid,)
    listed = {k["id"]: k for k in env.call("GET", "/api/keys").json["items"]}
    assert listed[cred["id"]]["name"] == "arch"
    for bad in (
        {"kind": "verifier", "name": "v"},  # no verifier_kind
        {"kind": "agent", "name": "a", "verifier_kind": "local"},
        {"kind": "agent", "name": "a", "delegations": ["agent:x"]},
        {"kind": "agent", "name": "a", "projects": ["nope"]},
        {"kind": "robot", "name": "a"},
    ):
        r = env.call("POST", "/api/keys", body=bad)
        assert r.status in (404, 422), (bad, r)
