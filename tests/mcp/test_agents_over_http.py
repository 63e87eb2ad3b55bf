"""Agents on a real server: the SDK's Client over Streamable HTTP against `taskgate serve`,
at both protocol versions. Humans act through the REST API with the admin token."""

from __future__ import annotations

import itertools
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.events import MODERN, VERSIONS
from tests.mcp.live import ADMIN, Live, agent, run

SHA = "0123456789abcdef0123456789abcdef01234567"
_n = itertools.count(1)


def fresh(live: Live, version: str) -> str:
    """A project of this test's own, so tests on the shared server never see each other's tasks."""
    return live.project(f"p{next(_n)}-{version.replace('-', '')}")


def new_task(live: Live, project: str) -> dict[str, Any]:
    """A ready task, created by the human through the REST API."""
    out = live.ok(
        "POST", f"/api/projects/{project}/tasks", {"title": "a task", "criteria": [{"text": "it works"}]}
    )
    task: dict[str, Any] = out["task"]
    assert task["status"] == "ready"
    return task


def criteria() -> list[dict[str, str]]:
    return [
        {"text": "GET /healthz returns 200", "kind": "test", "verify_ref": "tests.test_health.test_ok"},
        {"text": "the handler is documented"},
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_two_agents_and_a_human_take_a_task_from_spec_to_done(live: Live, version: str) -> None:
    project = fresh(live, version)
    arch_key, _ = live.key(f"arch-{version}", role="architect", projects=[project])
    exec_key, exec_id = live.key(f"exec-{version}", projects=[project])

    async def architect() -> str:
        async with agent(live.mcp_url, arch_key, version) as a:
            listed = await a.ok("list_projects")
            assert [p["name"] for p in listed["projects"]] == [project]
            spec = await a.ok(
                "create_spec",
                project=project,
                title="Health endpoint",
                body="Add /healthz.",
                criteria=criteria(),
                risk="low",
            )
            assert spec["status"] == "draft"
            assert [c["id"] for c in spec["criteria"]] == ["AC-1.1", "AC-1.2"]
            made = await a.ok(
                "create_task",
                project=project,
                title="Implement /healthz",
                spec_id=spec["id"],
                spec_criteria=["AC-1.1", "AC-1.2"],
                priority=5,
            )
            task_id: str = made["task"]["id"]
            assert made["task"]["status"] == "backlog"
            await a.ok(
                "log_decision",
                project=project,
                title="Health checks answer JSON",
                body="Always {status: ok}.",
                spec_id=spec["id"],
            )
            approved = await a.ok("approve_spec", project=project, spec_id=spec["id"])
            assert approved["spec"]["status"] == "approved"
            assert approved["tasks_moved"] == [task_id]
            return task_id

    async def executor(task_id: str) -> None:
        async with agent(live.mcp_url, exec_key, version) as e:
            nxt = await e.ok("get_next_tasks", project=project)
            assert [t["id"] for t in nxt["tasks"]] == [task_id]
            claimed = await e.ok("claim_task", project=project, task_id=task_id)
            token = claimed["claim_token"]
            brief = claimed["brief"]
            assert brief["task"]["id"] == task_id
            assert [c["id"] for c in brief["criteria"]] == ["AC-1.1", "AC-1.2"]
            assert [d["title"] for d in brief["decisions"]] == ["Health checks answer JSON"]
            assert "heartbeat" in claimed["next"]
            beat = await e.ok("heartbeat", task_id=task_id, claim_token=token, phase="testing")
            assert beat["phase"] == "testing"
            await e.ok("add_note", task_id=task_id, body="Used the existing router.")
            done = await e.ok(
                "submit_task",
                task_id=task_id,
                claim_token=token,
                commit_sha=SHA,
                evidence="pytest tests/test_health.py: 1 passed",
                self_report={"AC-1.1": "pass", "AC-1.2": "pass"},
            )
            assert done["task"]["status"] == "needs_verification"
            assert "Stop" in done["next"]
            # The token died with the submission.
            stale = await e.refused("heartbeat", task_id=task_id, claim_token=token)
            assert stale["code"] == "E_STALE_CLAIM"
            assert stale["current_status"] == "needs_verification"

    task_id = run(architect())
    run(executor(task_id))

    accepted = live.ok("POST", f"/api/tasks/{task_id}/accept")
    assert accepted["status"] == "done"

    async def check() -> None:
        async with agent(live.mcp_url, arch_key, version) as a:
            detail = await a.ok("get_task", task_id=task_id)
            assert detail["task"]["status"] == "done"
            attempt = detail["task"]["attempts"][0]
            assert attempt["actor"] == f"agent:exec-{version}"
            assert attempt["credential_id"] == exec_id
            assert attempt["submission"]["commit_sha"] == SHA
            assert [n["body"] for n in detail["notes"]] == ["Used the existing router."]
            actions = [h["action"] for h in detail["history"]]
            assert actions[0] == "create_draft"
            accept = next(h for h in detail["history"] if h["action"] == "accept")
            assert accept["actor"] == f"human:{ADMIN}" and accept["to_status"] == "done"
            assert "claim_token" not in str(detail) and "token_hash" not in str(detail)

    run(check())


@pytest.mark.parametrize("version", VERSIONS)
def test_naming_another_agent_is_an_identity_mismatch(live: Live, version: str) -> None:
    project = fresh(live, version)
    key, _ = live.key(f"ident-{version}")
    task = new_task(live, project)

    async def go() -> None:
        async with agent(live.mcp_url, key, version) as e:
            before = live.dump()
            for tool, args in [
                ("claim_task", {"project": project, "agent_id": "agent:someone-else"}),
                (
                    "create_task",
                    {
                        "project": project,
                        "title": "x",
                        "criteria": [{"text": "y"}],
                        "agent_id": "agent:someone-else",
                    },
                ),
                ("add_note", {"task_id": task["id"], "body": "hi", "agent_id": f"human:{ADMIN}"}),
            ]:
                body = await e.refused(tool, **args)
                assert body["code"] == "E_IDENTITY_MISMATCH", body
                assert f"agent:ident-{version}" in body["message"]
            assert live.dump() == before
            # Naming yourself is fine.
            claimed = await e.ok("claim_task", project=project, agent_id=f"agent:ident-{version}")
            assert claimed["task_id"] == task["id"]

    run(go())


@pytest.mark.parametrize("version", VERSIONS)
def test_a_released_claim_token_is_stale(live: Live, version: str) -> None:
    project = fresh(live, version)
    key, _ = live.key(f"rel-{version}")
    task = new_task(live, project)

    async def go() -> None:
        async with agent(live.mcp_url, key, version) as e:
            token = (await e.ok("claim_task", project=project, task_id=task["id"]))["claim_token"]
            released = await e.ok("release_task", task_id=task["id"], claim_token=token, reason="wrong task")
            assert released["task"]["status"] == "ready"
            before = live.dump()
            for tool, args in [
                ("heartbeat", {}),
                ("submit_task", {"commit_sha": SHA, "evidence": "done"}),
                ("report_failure", {"kind": "other", "findings": ["broken"]}),
                ("escalate", {"question": "?"}),
                ("release_task", {}),
            ]:
                body = await e.refused(tool, task_id=task["id"], claim_token=token, **args)
                assert body["code"] == "E_STALE_CLAIM", (tool, body)
                assert body["current_status"] == "ready"
            assert live.dump() == before
            # A new claim gets a new token; the old one stays dead.
            fresh_token = (await e.ok("claim_task", project=project, task_id=task["id"]))["claim_token"]
            assert fresh_token != token
            assert (await e.refused("heartbeat", task_id=task["id"], claim_token=token))[
                "code"
            ] == "E_STALE_CLAIM"

    run(go())


@pytest.mark.parametrize("version", VERSIONS)
def test_an_agent_never_accepts_its_own_work_even_with_a_delegation(live: Live, version: str) -> None:
    project = fresh(live, version)
    doer, _ = live.key(f"doer-{version}", delegations=[f"human:{ADMIN}"])
    other, _ = live.key(f"other-{version}", delegations=[f"human:{ADMIN}"])
    tasks = [new_task(live, project)["id"] for i in range(2)]

    async def go() -> None:
        async with agent(live.mcp_url, doer, version) as d:
            for tid in tasks:
                token = (await d.ok("claim_task", project=project, task_id=tid))["claim_token"]
                await d.ok("submit_task", task_id=tid, claim_token=token, commit_sha=SHA, evidence="done")
            before = live.dump()
            result = await d.ok(
                "accept_tasks", project=project, task_ids=tasks, on_behalf_of=f"human:{ADMIN}"
            )
            assert result["accepted"] == []
            assert {r["task_id"]: r["code"] for r in result["refused"]} == dict.fromkeys(
                tasks, "E_SELF_ACCEPT"
            )
            assert live.dump() == before
        # Another agent the human delegated to may accept low-risk work in a batch, for them.
        async with agent(live.mcp_url, other, version) as o:
            result = await o.ok(
                "accept_tasks", project=project, task_ids=tasks, on_behalf_of=f"human:{ADMIN}"
            )
            assert [t["status"] for t in result["accepted"]] == ["done", "done"]
            assert result["refused"] == []
            history = (await o.ok("get_task", task_id=tasks[0]))["history"]
            accept = next(h for h in history if h["action"] == "accept")
            assert (accept["actor"], accept["on_behalf_of"]) == (f"agent:other-{version}", f"human:{ADMIN}")

    run(go())


@pytest.mark.parametrize("version", VERSIONS)
def test_an_architect_may_not_approve_a_medium_risk_spec(live: Live, version: str) -> None:
    project = fresh(live, version)
    arch, _ = live.key(f"arch-med-{version}", role="architect")

    async def go() -> None:
        async with agent(live.mcp_url, arch, version) as a:
            spec = await a.ok(
                "create_spec", project=project, title="Payments", criteria=criteria(), risk="medium"
            )
            await a.ok(
                "create_task",
                project=project,
                title="Charge cards",
                spec_id=spec["id"],
                spec_criteria=["AC-1.1"],
            )
            before = live.dump()
            body = await a.refused("approve_spec", project=project, spec_id=spec["id"])
            assert body["code"] == "E_FORBIDDEN"
            assert "low-risk" in body["message"]
            assert live.dump() == before
            got = await a.ok("get_spec", project=project, spec_id=spec["id"])
            assert got["status"] == "draft"

    run(go())


@pytest.mark.parametrize("version", VERSIONS)
def test_human_only_actions_are_refused_to_agents(live: Live, version: str) -> None:
    project = fresh(live, version)
    worker, _ = live.key(f"worker-{version}")
    other, _ = live.key(f"nodelegation-{version}")
    task = new_task(live, project)

    async def go() -> None:
        async with agent(live.mcp_url, worker, version) as w:
            token = (await w.ok("claim_task", project=project, task_id=task["id"]))["claim_token"]
            await w.ok("submit_task", task_id=task["id"], claim_token=token, commit_sha=SHA, evidence="done")
            spec = await w.ok("create_spec", project=project, title="S", criteria=criteria())
        async with agent(live.mcp_url, other, version) as o:
            before = live.dump()
            # Accepting work is a human's call; without a delegation an agent may not.
            body = await o.refused("accept_tasks", project=project, task_ids=[task["id"]])
            assert body["code"] == "E_FORBIDDEN"
            # Approving a spec needs the architect role (or a human).
            body = await o.refused("approve_spec", project=project, spec_id=spec["id"])
            assert body["code"] == "E_FORBIDDEN"
            # A delegation the human never granted.
            body = await o.refused(
                "accept_tasks", project=project, task_ids=[task["id"]], on_behalf_of=f"human:{ADMIN}"
            )
            assert body["code"] == "E_FORBIDDEN"
            assert live.dump() == before

    run(go())


@pytest.mark.parametrize("version", VERSIONS)
def test_the_planning_and_failure_tools(live: Live, version: str) -> None:
    project = fresh(live, version)
    arch, _ = live.key(f"planner-{version}", role="architect")
    worker, _ = live.key(f"unlucky-{version}")

    async def plan() -> tuple[str, str, str]:
        async with agent(live.mcp_url, arch, version) as a:
            defaults = await a.ok(
                "set_execution_defaults",
                project=project,
                verification_commands=["pytest -q"],
                conventions=["type hints everywhere"],
            )
            assert defaults["execution_defaults"]["conventions"] == ["type hints everywhere"]
            assert (await a.ok("get_project", project=project))["execution_defaults"] == defaults[
                "execution_defaults"
            ]
            spec = await a.ok("create_spec", project=project, title="Cache", criteria=criteria())
            spec = await a.ok(
                "update_spec",
                project=project,
                spec_id=spec["id"],
                body="An LRU cache.",
                criteria=[{"text": "evicts the oldest entry"}],
            )
            assert [c["id"] for c in spec["criteria"]] == ["AC-1.1"]
            assert [s["id"] for s in (await a.ok("list_specs", project=project))["specs"]] == [spec["id"]]
            await a.ok("approve_spec", project=project, spec_id=spec["id"])
            blocker = (
                await a.ok(
                    "create_task", project=project, title="Storage layer", criteria=[{"text": "stores bytes"}]
                )
            )["task"]["id"]
            cache = (
                await a.ok(
                    "create_task",
                    project=project,
                    title="LRU cache",
                    spec_id=spec["id"],
                    spec_criteria=["AC-1.1"],
                )
            )["task"]["id"]
            updated = await a.ok(
                "update_task", task_id=cache, description="Bounded by entry count.", priority=9
            )
            assert updated["task"]["priority"] == 9
            ready = await a.ok("list_tasks", project=project, status="ready")
            assert [t["id"] for t in ready["tasks"]] == [cache, blocker]  # priority first
            first = await a.ok("log_decision", project=project, title="Cache keys are strings")
            await a.ok("log_decision", project=project, title="Cache keys are bytes", supersedes=first["id"])
            current = await a.ok("list_decisions", project=project)
            assert [d["title"] for d in current["decisions"]] == ["Cache keys are bytes"]
            hits = await a.ok("search", project=project, query="LRU cache")
            assert {(h["kind"], h["id"]) for h in hits["results"]} >= {("spec", spec["id"]), ("task", cache)}
            return spec["id"], cache, blocker

    async def fail(cache: str, blocker: str) -> None:
        async with agent(live.mcp_url, worker, version) as w:
            token = (await w.ok("claim_task", project=project, task_id=cache))["claim_token"]
            moved = await w.ok(
                "report_failure",
                task_id=cache,
                claim_token=token,
                kind="other",
                findings=["the eviction test is flaky"],
                learned="seed the clock",
            )
            assert moved["task"]["status"] == "ready" and moved["task"]["attempts_used"] == 1
            brief = (await w.ok("get_task_brief", task_id=cache))["brief"]
            assert brief["previous_attempts"][0]["findings"] == ["the eviction test is flaky"]
            assert brief["conventions"] == ["type hints everywhere"]
            assert brief["verification_commands"] == ["pytest -q"]
            token = (await w.ok("claim_task", project=project, task_id=cache))["claim_token"]
            moved = await w.ok(
                "report_failure",
                task_id=cache,
                claim_token=token,
                kind="dependency",
                findings=["needs the storage layer"],
                blocked_by=[blocker],
            )
            assert moved["task"]["status"] == "blocked" and moved["task"]["blocked_by"] == [blocker]
            token = (await w.ok("claim_task", project=project, task_id=blocker))["claim_token"]
            moved = await w.ok("escalate", task_id=blocker, claim_token=token, question="Which disk format?")
            assert moved["task"]["status"] == "needs_human"
            assert (await w.ok("get_next_tasks", project=project))["tasks"] == []
            assert (await w.refused("claim_task", project=project))["code"] == "E_NOTHING_READY"

    _, cache, blocker = run(plan())
    run(fail(cache, blocker))


def test_a_client_left_to_negotiate_gets_the_newest_version(live: Live) -> None:
    """mode='auto' probes server/discover first; the server answers it, so the client adopts
    2026-07-28 without an initialize handshake."""
    key, _ = live.key("negotiator")

    async def go() -> str:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        async with http, Client(streamable_http_client(live.mcp_url, http_client=http), mode="auto") as c:
            result = await c.call_tool("list_projects", {})
            assert not result.is_error
            return c.protocol_version

    assert run(go()) == MODERN
