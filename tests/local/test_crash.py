"""`taskgate serve` killed with SIGKILL, then restarted on the same data dir.

Under write load: every write that was acknowledged (a 2xx, or an MCP result without isError)
is there after the restart, and no task is in a state the rules forbid.

In the middle of each cascade (approve, revise, risk change, blockers done): the kill is made
deterministic with the server's own fault hook, TASKGATE_FAULT="<checkpoint>@<n>" (runtime.py),
which SIGKILLs the process the n-th time a cascade has settled a task: so it dies right after
exactly n of the cascade's tasks moved. The test checks the data dir shows the cascade cut short
(some tasks moved, some not), restarts without the hook, and checks every task is in line.
"""

from __future__ import annotations

import http.client
import json
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from taskgate.domain.models import AgentRole, CredentialKind, Risk
from taskgate.service import claims, keys
from taskgate.store.sqlite import SQLiteStore
from tests.mcp.events import LEGACY
from tests.support.server import Server, running, start
from tests.support.world import SHA, World

TASKS = 12  # per cascade: enough that a kill after the 4th leaves most undone
KILL_AT = 4


# -- what the rules forbid, read over REST ------------------------------------------------------


def all_tasks(server: Server, project: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    query = ""
    while True:
        status, page = server.request(
            "GET", f"/api/projects/{project}/tasks?limit=200{query}", token=server.admin_token
        )
        assert status == 200, page
        out += page["items"]
        if not page["cursor"]:
            return out
        query = f"&cursor={page['cursor']}"


def forbidden(server: Server, project: str) -> list[str]:
    """Every task whose state the rules forbid (empty: all is well)."""
    tasks = all_tasks(server, project)
    by_id = {t["id"]: t for t in tasks}
    spec_of: dict[str, dict[str, Any]] = {}
    problems = []
    for t in tasks:
        where = f"{t['id']} ({t['status']})"
        if (t["status"] == "claimed") != (t["claim"] is not None):
            problems.append(f"{where}: claim {t['claim']}")
        if t["attempts_used"] > len(t["attempts"]) or t["attempts_used"] > (t["max_attempts"] or 3):
            problems.append(f"{where}: {t['attempts_used']} attempts used")
        if any(a["ended_at"] is None for a in t["attempts"][:-1]):
            problems.append(f"{where}: an earlier attempt left open")
        if t["status"] == "claimed" and t["attempts"][-1]["ended_at"] is not None:
            problems.append(f"{where}: claimed, its attempt ended")
        if t["status"] == "blocked" and all(by_id[b]["status"] == "done" for b in t["blocked_by"]):
            problems.append(f"{where}: every blocker is done")
        if t["spec_id"] is None:
            continue
        if t["spec_id"] not in spec_of:
            status, spec = server.request(
                "GET", f"/api/projects/{project}/specs/{t['spec_id']}", token=server.admin_token
            )
            assert status == 200
            spec_of[t["spec_id"]] = spec
        spec = spec_of[t["spec_id"]]
        if spec["status"] == "draft" and t["status"] in ("ready", "blocked"):
            problems.append(f"{where}: under draft {spec['id']}")
        if spec["status"] == "approved" and t["status"] == "backlog":
            problems.append(f"{where}: in backlog under approved {spec['id']}")
        if t["status"] not in ("done", "cancelled") and t["risk"] != spec["risk"]:
            problems.append(f"{where}: risk {t['risk']}, {spec['id']} is {spec['risk']}")
    return problems


def killed(server: Server) -> None:
    """Wait for the fault hook's SIGKILL (the request that triggered it never gets an answer)."""
    assert server.proc.wait(timeout=60) == -signal.SIGKILL


def rows(data: Path, sql: str) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(data / "taskgate.db")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def statuses(data: Path) -> dict[str, str]:
    """Task statuses straight from the file the killed server left (no server running)."""
    found = rows(data, "SELECT data FROM items WHERE sk LIKE 'TASK#%'")
    return {json.loads(d)["id"]: json.loads(d)["status"] for (d,) in found}


# -- a data dir prepared through the services (fast), then served -----------------------------


def prepare(data: Path, build: Callable[[World], dict[str, Any]]) -> dict[str, Any]:
    data.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(data / "taskgate.db")
    try:
        w = World(store)
        w.project("demo")
        return build(w)
    finally:
        store.close()


def agent_key(w: World, name: str, role: AgentRole = AgentRole.EXECUTOR) -> str:
    return keys.create(w.ctx, w.human, kind=CredentialKind.AGENT, name=name, role=role).secret


def mcp_call(server: Server, key: str, tool: str, **arguments: Any) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    r = httpx2.post(
        f"{server.url}/mcp",
        json=body,
        headers={
            "authorization": f"Bearer {key}",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": LEGACY,
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


def fire_and_forget(fn: Callable[[], Any]) -> Callable[[], list[BaseException]]:
    """Run the request that trips the fault hook: the server dies before it answers. Returns a
    call that waits for the request and gives what it met other than the connection going away
    (an answer instead of a death shows up there, and `killed` fails too)."""
    met: list[BaseException] = []

    def go() -> None:
        try:
            fn()
        except (httpx2.TransportError, OSError, http.client.HTTPException):
            pass  # the server died mid-request: what the hook is for
        except BaseException as exc:  # handed to the test thread, which fails with it
            met.append(exc)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()

    def outcome() -> list[BaseException]:
        thread.join(timeout=60)
        assert not thread.is_alive(), "the request that trips the fault never ended"
        return met

    return outcome


def spec_tasks(w: World, *, approved: bool) -> dict[str, Any]:
    spec = w.spec("demo", approve=approved)
    ids = [w.task("demo", spec_id=spec.id, spec_criteria=["AC-1.1"]).id for _ in range(TASKS)]
    return {"spec": spec.id, "tasks": ids, "key": agent_key(w, "arch", AgentRole.ARCHITECT)}


CASES: dict[str, dict[str, Any]] = {
    "approve": {
        "build": lambda w: spec_tasks(w, approved=False),
        "trigger": lambda s, ctx: s.request(
            "POST", f"/api/projects/demo/specs/{ctx['spec']}/approve", token=s.admin_token
        ),
        "point": "cascade.spec",
        "before": "backlog",
        "after": "ready",
    },
    "revise": {
        "build": lambda w: spec_tasks(w, approved=True),
        "trigger": lambda s, ctx: s.request(
            "POST", f"/api/projects/demo/specs/{ctx['spec']}/revise", {"body": "new"}, token=s.admin_token
        ),
        "point": "cascade.spec",
        "before": "ready",
        "after": "backlog",
    },
    "risk": {  # an agent raises a draft spec's risk: every task of it follows
        "build": lambda w: spec_tasks(w, approved=False),
        "trigger": lambda s, ctx: mcp_call(
            s, ctx["key"], "update_spec", project="demo", spec_id=ctx["spec"], risk="high"
        ),
        "point": "cascade.spec",
        "before": "backlog",
        "after": "backlog",
    },
}


def _blockers_done(w: World) -> dict[str, Any]:
    bob = w.agent("bob")
    blocker = w.task("demo", title="the blocker")
    ids = [w.task("demo", blocked_by=[blocker.id]).id for _ in range(TASKS)]
    c = claims.claim(w.ctx, bob, "demo", task_id=blocker.id)
    claims.submit(w.ctx, bob, blocker.id, c.token, commit_sha=SHA, evidence="done")
    return {"blocker": blocker.id, "tasks": ids}


CASES["blockers_done"] = {
    "build": _blockers_done,
    "trigger": lambda s, ctx: s.request("POST", f"/api/tasks/{ctx['blocker']}/accept", token=s.admin_token),
    "point": "cascade.done",
    "before": "blocked",
    "after": "ready",
}


@pytest.mark.parametrize("kind", list(CASES))
def test_a_kill_in_the_middle_of_a_cascade_is_repaired_on_restart(tmp_path: Path, kind: str) -> None:
    case = CASES[kind]
    data = tmp_path / "data"
    ctx = prepare(data, case["build"])
    server = start(data, env={"TASKGATE_FAULT": f"{case['point']}@{KILL_AT}"})
    try:
        outcome = fire_and_forget(lambda: case["trigger"](server, ctx))
        killed(server)
        assert outcome() == []
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    # The file shows the cascade cut short: exactly KILL_AT tasks moved (or re-risked).
    left = statuses(data)
    if kind == "risk":
        risks = [
            json.loads(d)["risk"] for (d,) in rows(data, "SELECT data FROM items WHERE sk LIKE 'TASK#%'")
        ]
        assert risks.count("high") == KILL_AT, risks
    else:
        moved = [t for t in ctx["tasks"] if left[t] == case["after"]]
        assert len(moved) == KILL_AT, left
    with running(data) as server:
        assert forbidden(server, "demo") == []
        after = {t["id"]: t for t in all_tasks(server, "demo")}
        assert {after[t]["status"] for t in ctx["tasks"]} == {case["after"]}
        if kind == "risk":
            assert {after[t]["risk"] for t in ctx["tasks"]} == {Risk.HIGH.value}
        if kind == "blockers_done":
            assert after[ctx["blocker"]]["status"] == "done"
        # and nothing is left pending for a sweeper to do
        markers = rows(data, "SELECT data FROM items WHERE sk LIKE 'CASCADE#%'")
        assert all(not json.loads(d)["pending"] for (d,) in markers), markers


def test_kill_9_under_write_load_loses_no_acknowledged_write(tmp_path: Path) -> None:
    data = tmp_path / "data"
    agents = prepare(data, lambda w: {"keys": [agent_key(w, f"a{i}") for i in range(2)]})["keys"]
    created: list[str] = []  # tasks a 201 acknowledged
    submitted: list[str] = []  # tasks a submit_task result acknowledged
    failures: list[Exception] = []  # what a worker met other than the server going away
    lock = threading.Lock()
    stop = threading.Event()
    server = start(data)

    def creator(n: int) -> None:
        i = 0
        while not stop.is_set():
            try:
                status, body = server.request(
                    "POST",
                    "/api/projects/demo/tasks",
                    {"title": f"w{n}-{i}", "criteria": [{"text": "works"}], "priority": i % 5},
                    token=server.admin_token,
                )
            except (OSError, http.client.HTTPException):
                return  # the server was killed
            with lock:
                if status == 201:
                    created.append(body["task"]["id"])
                else:  # a wrong answer under load: the test fails with it
                    failures.append(AssertionError(f"create answered {status}: {body}"))
                    return
            i += 1

    def worker(key: str) -> None:
        while not stop.is_set():
            try:
                got = mcp_call(server, key, "claim_task", project="demo")
                if got.get("isError"):
                    time.sleep(0.01)
                    continue
                claim = got["structuredContent"]
                done = mcp_call(
                    server,
                    key,
                    "submit_task",
                    task_id=claim["task_id"],
                    claim_token=claim["claim_token"],
                    commit_sha=SHA,
                    evidence="done",
                )
            except (httpx2.TransportError, OSError):
                return  # the server was killed
            except Exception as exc:  # a wrong answer under load: the test fails with it
                with lock:
                    failures.append(exc)
                return
            if not done.get("isError"):
                with lock:
                    submitted.append(claim["task_id"])

    threads = [threading.Thread(target=creator, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=worker, args=(k,)) for k in agents]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # kill once the load is well under way
            with lock:
                if len(created) >= 60 and len(submitted) >= 10:
                    break
            time.sleep(0.02)
        server.proc.send_signal(signal.SIGKILL)
        assert server.proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        stop.set()
        if server.proc.poll() is None:
            server.proc.kill()
        for t in threads:
            t.join(timeout=30)
    assert not failures, failures
    assert len(created) >= 60 and len(submitted) >= 10, (len(created), len(submitted))
    with running(data) as server:
        tasks = {t["id"]: t for t in all_tasks(server, "demo")}
        assert set(created) <= set(tasks)
        for tid in submitted:
            assert tasks[tid]["status"] == "needs_verification", tasks[tid]
            assert tasks[tid]["attempts"][-1]["submission"]["commit_sha"] == SHA
        assert forbidden(server, "demo") == []
