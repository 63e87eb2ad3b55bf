"""`taskgate serve` serves the MCP app directly as one long-lived app: many agents at once each
act as themselves, and one call stuck on the store holds up no one else."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import threading
import time
from typing import Any

import httpx2

from tests.mcp.events import LEGACY, MODERN, mcp_headers, rpc
from tests.mcp.live import Live, agent, run

_n = itertools.count(1)


def test_concurrent_agents_each_act_as_themselves(live: Live) -> None:
    """Twelve agents with their own keys claim and note at the same time, over both protocol
    versions. The server's own records (history, notes) name each task's claimer as the key
    that claimed it: the caller bound per request never leaks into another request."""
    project = live.project(f"crowd{next(_n)}")
    n = 12
    task_ids = [
        live.ok("POST", f"/api/projects/{project}/tasks", {"title": f"t{i}", "criteria": [{"text": "x"}]})[
            "task"
        ]["id"]
        for i in range(n)
    ]
    keys = [live.key(f"crowd{project}-{i}", projects=[project])[0] for i in range(n)]

    async def one(i: int) -> None:
        async with agent(live.mcp_url, keys[i], LEGACY if i % 2 else MODERN) as a:
            claimed = await a.ok("claim_task", task_id=task_ids[i])
            assert claimed["task_id"] == task_ids[i]
            note = await a.ok("add_note", task_id=task_ids[i], body=f"from {i}")
            assert note["author"] == f"agent:crowd{project}-{i}"

    async def all_at_once() -> None:
        await asyncio.gather(*(one(i) for i in range(n)))

    run(all_at_once())
    for i, tid in enumerate(task_ids):
        shown = live.ok("GET", f"/api/tasks/{tid}")
        claims = [e for e in shown["history"] if e["action"] == "claim"]
        assert [e["actor"] for e in claims] == [f"agent:crowd{project}-{i}"]
        assert [(x["author"], x["body"]) for x in shown["notes"]] == [
            (f"agent:crowd{project}-{i}", f"from {i}")
        ]


def _post(live: Live, key: str, tool: str, arguments: dict[str, Any]) -> httpx2.Response:
    body = rpc("tools/call", {"name": tool, "arguments": arguments}, version=LEGACY)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    return httpx2.post(
        live.mcp_url, json=body, headers={**headers, **mcp_headers(key, LEGACY, body)}, timeout=60
    )


def test_a_call_stuck_on_the_store_stalls_no_one_else(live: Live) -> None:
    """Another process holds SQLite's write lock, so an agent's claim waits inside the server
    (up to the store's busy timeout). Meanwhile health checks, key lookups and read-only tool
    calls are answered at once; when the lock is let go, the claim lands."""
    project = live.project(f"stuck{next(_n)}")
    tid = live.ok("POST", f"/api/projects/{project}/tasks", {"title": "t", "criteria": [{"text": "x"}]})[
        "task"
    ]["id"]
    writer, _ = live.key(f"stuck-writer{next(_n)}")
    reader, _ = live.key(f"stuck-reader{next(_n)}")

    blocker = sqlite3.connect(live.db_path, isolation_level=None, timeout=5)
    blocker.execute("BEGIN IMMEDIATE")
    claimed: list[httpx2.Response] = []
    claim = threading.Thread(
        target=lambda: claimed.append(_post(live, writer, "claim_task", {"task_id": tid}))
    )
    try:
        claim.start()
        for _ in range(10):
            start = time.monotonic()
            assert httpx2.get(f"{live.base}/api/health", timeout=5).status_code == 200
            listed = _post(live, reader, "get_next_tasks", {"project": project})
            assert listed.status_code == 200
            assert [t["id"] for t in listed.json()["result"]["structuredContent"]["tasks"]] == [tid]
            assert time.monotonic() - start < 5  # the store's busy timeout is 30 s
        assert claim.is_alive() and not claimed  # still waiting on the lock all along
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    claim.join(timeout=30)
    assert not claim.is_alive()
    result = claimed[0].json()["result"]
    assert result["isError"] is False, result
    assert result["structuredContent"]["task_id"] == tid
