"""Delegation: "An agent that a human explicitly asks to make such a
change passes its own id with on_behalf_of: "human:<name>": it gets the human's permissions,
history records both, and it is refused on work the agent claimed or submitted itself."

Played over a real MCP client, real HTTP and a real `taskgate serve`: a delegated key makes each
of the lifecycle table's human moves with update_task(status=...); a key without the grant, the
delegated key on its own work, and medium/high risk acceptance are refused, changing nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from tests.mcp.events import MODERN
from tests.mcp.live import ADMIN, Agent, Live, agent, run, serving

VERSION = MODERN
SHA = "0123456789abcdef0123456789abcdef01234567"
BOSS = f"human:{ADMIN}"
_n = itertools.count(1)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-delegation"))


def _task(live: Live, project: str, **kw: Any) -> str:
    body = {"title": "a task", "criteria": [{"text": "it works"}], **kw}
    return str(live.ok("POST", f"/api/projects/{project}/tasks", body)["task"]["id"])


async def _claim(a: Agent, project: str, tid: str) -> str:
    return str((await a.ok("claim_task", project=project, task_id=tid))["claim_token"])


async def _submit(a: Agent, project: str, tid: str) -> None:
    token = await _claim(a, project, tid)
    await a.ok("submit_task", task_id=tid, claim_token=token, commit_sha=SHA, evidence="pytest: 3 passed")


async def _escalate(a: Agent, project: str, tid: str) -> None:
    token = await _claim(a, project, tid)
    await a.ok("escalate", task_id=tid, claim_token=token, question="Which storage API?")


def _keys(live: Live, project: str) -> dict[str, tuple[str, str]]:
    """A worker, a key the human delegated to, and one without the grant: (secret, key id)."""
    return {
        "worker": live.key(f"worker-{project}", projects=[project]),
        "delegate": live.key(f"aide-{project}", projects=[project], delegations=[BOSS]),
        "plain": live.key(f"plain-{project}", projects=[project]),
    }


MOVES = ["cancel", "reopen", "requeue", "block", "backlog"]


@pytest.mark.parametrize("move", MOVES)
def test_a_delegated_key_makes_the_humans_move_by_status(live: Live, move: str) -> None:
    project = live.project(f"dlg{next(_n)}")
    keys = _keys(live, project)
    spec = live.ok(
        "POST", f"/api/projects/{project}/specs", {"title": "Storage", "criteria": [{"text": "stores bytes"}]}
    )
    live.ok("POST", f"/api/projects/{project}/specs/{spec['id']}/approve")
    blocker = _task(live, project, title="the storage layer")
    tid = _task(live, project, spec_id=spec["id"]) if move == "backlog" else _task(live, project)

    async def prepare() -> None:
        async with agent(live.mcp_url, keys["worker"][0], VERSION) as w:
            if move == "reopen":
                await _submit(w, project, tid)
            elif move == "backlog":
                token = await _claim(w, project, tid)
                await w.ok(
                    "report_failure",
                    task_id=tid,
                    claim_token=token,
                    kind="spec_gap",
                    findings=["the spec does not say which byte order"],
                )
            elif move in ("requeue", "block"):
                await _escalate(w, project, tid)

    run(prepare())
    args: dict[str, Any] = {
        "cancel": {"status": "cancelled", "note": "duplicate of the storage task"},
        "reopen": {"status": "ready", "findings": ["no test covers an empty payload"]},
        "requeue": {"status": "ready", "note": "answered: use the blob API"},
        "block": {"status": "blocked", "blocked_by": [blocker]},
        "backlog": {"status": "backlog", "note": "byte order goes in the spec"},
    }[move]
    landed = {"cancel": "cancelled", "reopen": "ready", "requeue": "ready", "block": "blocked"}.get(
        move, "backlog"
    )
    action = {"cancel": "cancel", "reopen": "reopen", "requeue": "requeue", "block": "block"}.get(
        move, "revise_spec"
    )

    async def delegated() -> dict[str, Any]:
        async with agent(live.mcp_url, keys["delegate"][0], VERSION) as d:
            out = await d.ok("update_task", task_id=tid, on_behalf_of=BOSS, **args)
            assert out["task"]["status"] == landed, out
            detail: dict[str, Any] = await d.ok("get_task", task_id=tid)
            return detail

    detail = run(delegated())
    last = detail["history"][-1]
    assert (last["actor"], last["on_behalf_of"], last["action"]) == (f"agent:aide-{project}", BOSS, action)
    assert (last["to_status"]) == landed
    # The human's view of the same event also names the credential that made it.
    rest_last = live.ok("GET", f"/api/tasks/{tid}")["history"][-1]
    assert rest_last["credential_id"] == keys["delegate"][1]
    assert rest_last["on_behalf_of"] == BOSS
    if move == "reopen":
        assert detail["task"]["attempts_used"] == 1
        assert detail["task"]["findings"][-1]["summary"] == "no test covers an empty payload"
        assert detail["task"]["findings"][-1]["by"] == BOSS
    if move == "block":
        assert detail["task"]["blocked_by"] == [blocker]
    if move == "backlog":
        assert live.ok("GET", f"/api/projects/{project}/specs/{spec['id']}")["status"] == "draft"


def test_status_is_refused_without_a_grant(live: Live) -> None:
    project = live.project(f"dlg{next(_n)}")
    keys = _keys(live, project)
    ready = _task(live, project)

    async def go() -> None:
        async with agent(live.mcp_url, keys["plain"][0], VERSION) as p:
            before = live.dump()
            own = await p.refused("update_task", task_id=ready, status="cancelled")
            assert own["code"] == "E_FORBIDDEN" and "on_behalf_of" in own["hint"], own
            named = await p.refused("update_task", task_id=ready, status="cancelled", on_behalf_of=BOSS)
            assert named["code"] == "E_FORBIDDEN" and "has not delegated" in named["message"], named
            mixed = await p.refused("update_task", task_id=ready, status="cancelled", title="gone")
            assert mixed["code"] == "E_FORBIDDEN", mixed
            assert live.dump() == before
            assert (await p.ok("get_task", task_id=ready))["task"]["status"] == "ready"

    run(go())


def test_a_delegated_key_is_refused_on_work_it_claimed_or_submitted(live: Live) -> None:
    project = live.project(f"dlg{next(_n)}")
    keys = _keys(live, project)
    escalated, submitted, held = _task(live, project), _task(live, project), _task(live, project)

    async def go() -> None:
        async with agent(live.mcp_url, keys["delegate"][0], VERSION) as d:
            # The same key works on tasks as an agent, then is asked to act for the human.
            await _escalate(d, project, escalated)
            await _submit(d, project, submitted)
            await _claim(d, project, held)
            before = live.dump()
            for tid, args in [
                (escalated, {"status": "ready"}),
                (escalated, {"status": "cancelled"}),
                (submitted, {"status": "ready", "findings": ["redo it"]}),
                (submitted, {"status": "done"}),
                (held, {"status": "cancelled"}),
            ]:
                body = await d.refused("update_task", task_id=tid, on_behalf_of=BOSS, **args)
                assert body["code"] == "E_SELF_ACCEPT", (tid, args, body)
            accepted = await d.ok("accept_tasks", project=project, task_ids=[submitted], on_behalf_of=BOSS)
            assert accepted["accepted"] == [] and accepted["refused"][0]["code"] == "E_SELF_ACCEPT"
            assert live.dump() == before

    run(go())
    # Another principal moves the same work: the human on the board, in one step each.
    assert live.ok("POST", f"/api/tasks/{submitted}/accept")["status"] == "done"
    assert live.ok("POST", f"/api/tasks/{escalated}/resolve", {"resolution": "requeue"})["status"] == "ready"


def test_medium_and_high_risk_acceptance_stays_on_the_board(live: Live) -> None:
    project = live.project(f"dlg{next(_n)}")
    keys = _keys(live, project)
    medium, high, low = (_task(live, project, risk=r) for r in ("medium", "high", "low"))

    async def work() -> None:
        async with agent(live.mcp_url, keys["worker"][0], VERSION) as w:
            for tid in (medium, high, low):
                await _submit(w, project, tid)

    run(work())

    async def go() -> None:
        async with agent(live.mcp_url, keys["delegate"][0], VERSION) as d:
            before = live.dump()
            for tid in (medium, high):
                body = await d.refused("update_task", task_id=tid, status="done", on_behalf_of=BOSS)
                assert body["code"] == "E_FORBIDDEN" and "on the board" in body["message"], body
            batch = await d.ok("accept_tasks", project=project, task_ids=[medium, high], on_behalf_of=BOSS)
            assert batch["accepted"] == [] and {r["code"] for r in batch["refused"]} == {"E_FORBIDDEN"}
            assert live.dump() == before
            done = await d.ok("update_task", task_id=low, status="done", on_behalf_of=BOSS)
            assert done["task"]["status"] == "done"

    run(go())
    for tid in (medium, high):
        assert live.ok("POST", f"/api/tasks/{tid}/accept")["status"] == "done"
