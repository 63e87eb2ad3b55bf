"""Moving goalposts, played as the gated agent: its own MCP key, a real MCP
client over real HTTP, a real `taskgate serve`, a verifier's run through the verifier endpoints.

docs/architecture.md, "Principals": "A task's criteria and risk are fixed once work can start on them: only a
human (or an architect, while the spec is a draft) changes them." The executor whose attempt just
failed tries every neighbouring path to check less next time; a human's change is recorded.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from tests.mcp.events import MODERN
from tests.mcp.live import ADMIN, Live, agent, run, serving

VERSION = MODERN
SHA = "0123456789abcdef0123456789abcdef01234567"
CONFIG = {
    "checks": {
        "unit": {"command": "pytest --junitxml=reports/junit.xml", "report": {"path": "reports/junit.xml"}}
    }
}
CRITERIA = [
    {"text": "the fast path works", "kind": "test", "verify_ref": "tests.test_cache.test_fast"},
    {"text": "eviction works under load", "kind": "test", "verify_ref": "tests.test_cache.test_evicts"},
]
_n = itertools.count(1)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-goalposts"))


def _project(live: Live, *, verification: bool = True) -> tuple[str, str]:
    """A project of the test's own; with verification on, and the local verifier key."""
    name = live.project(f"goal{next(_n)}")
    if not verification:
        return name, ""
    vkey, _ = live.key(f"ci-{name}", kind="verifier", verifier_kind="local", projects=[name])
    live.ok("PUT", f"/api/projects/{name}/verifier-config", CONFIG)
    live.ok("PUT", f"/api/projects/{name}/verification", {"on": True})
    return name, vkey


def _spec(live: Live, project: str, *, approve: bool = True) -> str:
    spec = live.ok(
        "POST", f"/api/projects/{project}/specs", {"title": "LRU cache", "risk": "low", "criteria": CRITERIA}
    )
    if approve:
        live.ok("POST", f"/api/projects/{project}/specs/{spec['id']}/approve")
    return str(spec["id"])


def _task(live: Live, project: str, spec_id: str) -> str:
    body = {"title": "Implement the cache", "spec_id": spec_id, "spec_criteria": ["AC-1.1", "AC-1.2"]}
    return str(live.ok("POST", f"/api/projects/{project}/tasks", body)["task"]["id"])


def _verify(live: Live, vkey: str, tid: str, passing: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One verifier run as `taskgate verify` reports it: the criteria whose refs it was asked
    to check, each passed only if in `passing`. Returns (the run's work, the finish answer)."""
    r = live.rest("POST", "/api/verifier/runs", {"task_id": tid}, token=vkey)
    assert r.status_code == 201, r.text
    work: dict[str, Any] = r.json()
    results = {
        c["id"]: {
            "result": "pass" if c["id"] in passing else "fail",
            "detail": "1 passed" if c["id"] in passing else "AssertionError: evicted nothing",
            "source": {"check": "unit", "report": "reports/junit.xml", "ref": c["verify_ref"]},
        }
        for c in work["criteria"]
    }
    every = {c["id"] for c in work["criteria"]} <= passing
    body = {
        "checks": {"unit": {"exit_code": 0 if every else 1, "output_tail": "", "duration_ms": 900}},
        "results": results,
    }
    r = live.rest("POST", f"/api/verifier/runs/{tid}/{work['run_id']}/finish", body, token=vkey)
    assert r.status_code == 200, r.text
    return work, r.json()


async def _claim_and_submit(e: Any, project: str, tid: str) -> dict[str, Any]:
    claimed: dict[str, Any] = await e.ok("claim_task", project=project, task_id=tid)
    await e.ok(
        "submit_task",
        task_id=tid,
        claim_token=claimed["claim_token"],
        commit_sha=SHA,
        evidence="pytest: 2 passed",
        self_report={"AC-1.1": "pass", "AC-1.2": "pass"},
    )
    return claimed


def test_the_executor_whose_attempt_failed_cannot_drop_its_failing_criterion(live: Live) -> None:
    project, vkey = _project(live)
    spec_id = _spec(live, project)
    tid = _task(live, project, spec_id)
    exec_key, _ = live.key(f"lazy-{project}", projects=[project])

    async def first_attempt() -> None:
        async with agent(live.mcp_url, exec_key, VERSION) as e:
            await _claim_and_submit(e, project, tid)

    run(first_attempt())
    _, finished = _verify(live, vkey, tid, passing={"AC-1.1"})
    assert finished["run"]["status"] == "failed" and finished["task_status"] == "ready"

    async def move_the_goalposts() -> None:
        async with agent(live.mcp_url, exec_key, VERSION) as e:
            before = live.dump()
            attempts: list[tuple[str, dict[str, Any], str]] = [
                ("update_task", {"task_id": tid, "spec_criteria": ["AC-1.1"]}, "E_FORBIDDEN"),
                ("update_task", {"task_id": tid, "criteria": [{"text": "it compiles"}]}, "E_FORBIDDEN"),
                (
                    "update_task",
                    {"task_id": tid, "spec_criteria": ["AC-1.1"], "description": "AC-1.2 is flaky, dropped"},
                    "E_FORBIDDEN",
                ),
                # Naming the human without a delegation changes nothing either.
                (
                    "update_task",
                    {"task_id": tid, "spec_criteria": ["AC-1.1"], "on_behalf_of": f"human:{ADMIN}"},
                    "E_FORBIDDEN",
                ),
                # The spec behind the task: approved, so edited by nobody until a human revises it.
                (
                    "update_spec",
                    {"project": project, "spec_id": spec_id, "criteria": [CRITERIA[0]]},
                    "E_WRONG_STATE",
                ),
                (
                    "update_spec",
                    {
                        "project": project,
                        "spec_id": spec_id,
                        "criteria": [CRITERIA[0], {**CRITERIA[1], "kind": "command", "verify_ref": "true"}],
                    },
                    "E_WRONG_STATE",
                ),
                ("update_spec", {"project": project, "spec_id": spec_id, "risk": "high"}, "E_WRONG_STATE"),
            ]
            for tool, args, code in attempts:
                body = await e.refused(tool, **args)
                assert body["code"] == code, (tool, args, body)
                if tool == "update_task" and "on_behalf_of" not in args:
                    assert "fixed once work can start" in body["message"], body
                    assert "report_failure(kind='spec_gap'" in body["hint"], body
            # The REST edit the board uses is a human's: the agent's key is refused there too.
            r = live.rest("PATCH", f"/api/tasks/{tid}", {"spec_criteria": ["AC-1.1"]}, token=exec_key)
            assert r.status_code == 403 and r.json()["code"] == "E_FORBIDDEN", r.text
            assert live.dump() == before

    run(move_the_goalposts())

    async def second_attempt() -> dict[str, Any]:
        async with agent(live.mcp_url, exec_key, VERSION) as e:
            claimed = await _claim_and_submit(e, project, tid)
            brief: dict[str, Any] = claimed["brief"]
            return brief

    brief = run(second_attempt())
    assert [c["id"] for c in brief["criteria"]] == ["AC-1.1", "AC-1.2"]
    assert brief["criteria_changes"] == []
    assert brief["findings"], "the failed run's findings reach the next attempt"
    # The next run still checks the criterion that failed.
    work, finished = _verify(live, vkey, tid, passing={"AC-1.1"})
    assert {c["id"]: c["verify_ref"] for c in work["criteria"]}["AC-1.2"] == "tests.test_cache.test_evicts"
    assert finished["run"]["status"] == "failed"


def test_an_architect_moves_criteria_on_a_draft_only(live: Live) -> None:
    project, _ = _project(live, verification=False)
    approved = _spec(live, project)
    ready = _task(live, project, approved)
    arch_key, _ = live.key(f"arch-{project}", role="architect", projects=[project])

    async def go() -> dict[str, Any]:
        async with agent(live.mcp_url, arch_key, VERSION) as a:
            before = live.dump()
            body = await a.refused("update_task", task_id=ready, spec_criteria=["AC-1.1"])
            assert body["code"] == "E_FORBIDDEN" and "no draft spec" in body["message"], body
            assert live.dump() == before
            draft = await a.ok("create_spec", project=project, title="Next cache", criteria=CRITERIA)
            made = await a.ok(
                "create_task", project=project, title="Next cache", spec_id=draft["id"], spec_criteria=[]
            )
            assert made["task"]["status"] == "backlog"
            moved = await a.ok(
                "update_task", task_id=made["task"]["id"], spec_criteria=[f"AC-{draft['number']}.1"]
            )
            assert moved["task"]["spec_criteria"] == [f"AC-{draft['number']}.1"]
            detail: dict[str, Any] = await a.ok("get_task", task_id=made["task"]["id"])
            return detail

    detail = run(go())
    last = detail["history"][-1]
    assert last["actor"] == f"agent:arch-{project}" and last["action"] == "updated"
    assert len(last["detail"]["criteria_before"]) == 2 and len(last["detail"]["criteria_after"]) == 1


def test_a_humans_change_after_an_attempt_is_in_the_history_and_the_next_brief(live: Live) -> None:
    project, vkey = _project(live)
    tid = _task(live, project, _spec(live, project))
    exec_key, _ = live.key(f"exec-{project}", projects=[project])

    async def attempt() -> None:
        async with agent(live.mcp_url, exec_key, VERSION) as e:
            await _claim_and_submit(e, project, tid)

    run(attempt())
    _verify(live, vkey, tid, passing={"AC-1.1"})
    # The human, on the board, decides the eviction criterion belongs to another task: one step.
    edited = live.ok("PATCH", f"/api/tasks/{tid}", {"spec_criteria": ["AC-1.1"]})
    assert edited["task"]["spec_criteria"] == ["AC-1.1"]
    history = live.ok("GET", f"/api/tasks/{tid}")["history"]
    last = history[-1]
    assert (last["actor"], last["action"]) == (f"human:{ADMIN}", "updated")
    assert [c["id"] for c in last["detail"]["criteria_before"]] == ["AC-1.1", "AC-1.2"]
    assert [c["id"] for c in last["detail"]["criteria_after"]] == ["AC-1.1"]
    assert last["detail"]["criteria_changed_after_attempt"] == 1

    async def next_attempt() -> dict[str, Any]:
        async with agent(live.mcp_url, exec_key, VERSION) as e:
            claimed: dict[str, Any] = await e.ok("claim_task", project=project, task_id=tid)
            return claimed["brief"]  # type: ignore[no-any-return]

    brief = run(next_attempt())
    assert [c["id"] for c in brief["criteria"]] == ["AC-1.1"]
    assert brief["criteria_changes"] == [
        {
            "after_attempt": 1,
            "by": f"human:{ADMIN}",
            "removed": ["AC-1.2 (test): tests.test_cache.test_evicts"],
            "added": [],
        }
    ]
