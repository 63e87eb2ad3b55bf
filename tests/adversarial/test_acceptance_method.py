"""How each acceptance was made is on record, from what the server can tell: at the board (a
session its sign-in issued), at a terminal (the CLI's person confirmed at its controlling
terminal), by a script (a token and --yes, or a raw API call), or delegated (an agent key acting
on_behalf_of). History, `task show`, `audit verify` and the signed summary say which, so a batch
of script accepts never reads as a person at the board.

Played against a real `taskgate serve`: the agents over MCP, the CLI as subprocesses (a person
is a pseudo-terminal typing the confirmation), the board through its own sign-in exchange.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from taskgate.domain.principals import PRESENCE_HEADER
from tests.mcp.events import MODERN
from tests.mcp.live import ADMIN, Live, agent, run, serving
from tests.support.server import TASKGATE
from tests.support.terminal import at_terminal, no_terminal
from tests.support.world import SHA

BOSS = f"human:{ADMIN}"  # the human the agent keys here may act for
_projects = itertools.count(1)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-accept-via"))


def _env(live: Live, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    return {**env, "TASKGATE_SERVER": live.base, "TASKGATE_DATA_DIR": str(live.data_dir), **extra}


def _submitted(live: Live, project: str, worker: str, count: int) -> list[str]:
    """`count` low-risk tasks of `project`, each submitted by the worker agent over MCP."""
    ids = [
        str(
            live.ok(
                "POST", f"/api/projects/{project}/tasks", {"title": f"t{i}", "criteria": [{"text": "ok"}]}
            )["task"]["id"]
        )
        for i in range(count)
    ]

    async def go() -> None:
        async with agent(live.mcp_url, worker, MODERN) as w:
            for tid in ids:
                token = (await w.ok("claim_task", project=project, task_id=tid))["claim_token"]
                await w.ok("submit_task", task_id=tid, claim_token=token, commit_sha=SHA, evidence="done")

    run(go())
    return ids


def _board_token(live: Live) -> str:
    """What the board holds after its sign-in link is opened: the code redeemed for a session."""
    link = live.ok("POST", "/local/sign-in-link")["url"]
    code = link.split("#sign-in=", 1)[1]
    r = httpx2.post(f"{live.base}/local/sign-in", json={"code": code}, timeout=30)
    assert r.status_code == 200, r.text
    return str(r.json()["token"])


def _accept_event(live: Live, tid: str) -> dict[str, Any]:
    history = live.ok("GET", f"/api/tasks/{tid}")["history"]
    accepts = [e for e in history if e["action"] == "accept"]
    assert len(accepts) == 1, history
    return dict(accepts[0])


def _summary_facts(live: Live, tid: str) -> dict[str, Any]:
    """The `taskgate` facts of the task's last signed statement (its acceptance's summary)."""
    out = subprocess.run(
        [TASKGATE, "attest", "export", tid],
        env=_env(live),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    last = json.loads(out.stdout.strip().splitlines()[-1])
    statement = json.loads(base64.b64decode(last["payload"]))
    assert statement["predicateType"] == "https://slsa.dev/verification_summary/v1"
    return dict(statement["predicate"]["taskgate"])


def test_each_way_of_accepting_is_recorded_as_what_it_was(live: Live) -> None:
    project = live.project(f"via{next(_projects)}")
    worker, _ = live.key(f"worker-{project}", projects=[project])
    aide, _ = live.key(f"aide-{project}", projects=[project], delegations=[BOSS])
    at_board, at_tty, scripted, delegated, *batch = _submitted(live, project, worker, 7)

    # The board: a session its sign-in issued, accepting one task and nothing said about presence.
    board = _board_token(live)
    r = httpx2.post(
        f"{live.base}/api/tasks/{at_board}/accept", headers={"Authorization": f"Bearer {board}"}, timeout=30
    )
    assert r.status_code == 200 and r.json()["status"] == "done", r.text
    # A person at the CLI's terminal, with the admin token the CLI reads from the data dir.
    ran = at_terminal([TASKGATE, "task", "accept", at_tty], _env(live), at_tty)
    assert ran.returncode == 0 and f"{at_tty} is done" in ran.stdout, ran
    # A script: its own token, --yes, no terminal.
    ran = no_terminal(
        [TASKGATE, "task", "accept", scripted, "--yes"], _env(live, TASKGATE_TOKEN=live.admin_token)
    )
    assert ran.returncode == 0, ran
    # An agent the human delegated to, over MCP.

    async def delegate() -> None:
        async with agent(live.mcp_url, aide, MODERN) as a:
            out = await a.ok("accept_tasks", project=project, task_ids=[delegated], on_behalf_of=BOSS)
            assert [t["id"] for t in out["accepted"]] == [delegated]

    run(delegate())
    # A batch of script accepts: the admin token straight at the API, as any script would.
    out = live.ok("POST", f"/api/projects/{project}/accept", {"task_ids": batch})
    assert sorted(t["id"] for t in out["accepted"]) == sorted(batch)

    expected = {at_board: "board", at_tty: "terminal", scripted: "script", delegated: "delegated"}
    expected |= {tid: "script" for tid in batch}
    for tid, via in expected.items():
        event = _accept_event(live, tid)
        assert event["detail"]["via"] == via, (tid, event)
        assert bool(event["detail"].get("batch")) == (tid in batch or tid == delegated), event
        facts = _summary_facts(live, tid)
        assert facts["acceptedVia"] == via, (tid, facts)
        assert facts["batch"] == (tid in batch or tid == delegated)
        assert facts.get("onBehalfOf") == (BOSS if tid == delegated else None)

    # `task show` says it on the acceptance's history line.
    said = {
        at_board: "(at the board)",
        at_tty: "(at a terminal)",
        scripted: "(by a script)",
        delegated: f"(delegated to an agent for {BOSS}, in a batch)",
        batch[0]: "(by a script, in a batch)",
    }
    for tid, words in said.items():
        shown = no_terminal([TASKGATE, "task", "show", tid], _env(live))
        assert shown.returncode == 0, shown
        line = next(ln for ln in shown.stdout.splitlines() if "  accept  " in ln)
        assert line.endswith(words), line

    # The audit counts them by how they were made, and `attest verify` says it of the summary.
    audit = no_terminal([TASKGATE, "audit", "verify", project], _env(live))
    assert audit.returncode == 0, audit
    assert (
        "acceptances: 1 at the board, 1 delegated to an agent, 4 by a script, 1 at a terminal" in audit.stdout
    )
    counted = json.loads(no_terminal([TASKGATE, "audit", "verify", project, "--json"], _env(live)).stdout)
    assert counted["acceptances"] == {"board": 1, "terminal": 1, "script": 4, "delegated": 1}


def test_nothing_a_script_sends_makes_its_accept_the_boards(live: Live) -> None:
    project = live.project(f"via{next(_projects)}")
    worker, _ = live.key(f"worker-{project}", projects=[project])
    forged, claimed, ignored = _submitted(live, project, worker, 3)
    before = live.dump()
    for said in ("board", "delegated", "BOARD", "x" * 5000):
        r = httpx2.post(
            f"{live.base}/api/tasks/{forged}/accept",
            headers={"Authorization": f"Bearer {live.admin_token}", PRESENCE_HEADER: said},
            timeout=30,
        )
        assert r.status_code == 422 and r.json()["code"] == "E_VALIDATION", r.text
        assert "never by this header" in r.json()["message"]
    assert live.dump() == before  # refused: nothing written
    # A board session the server never issued is no credential at all.
    fake = "tgb_" + "A" * 43
    r = httpx2.post(
        f"{live.base}/api/tasks/{forged}/accept", headers={"Authorization": f"Bearer {fake}"}, timeout=30
    )
    assert r.status_code == 401
    # "terminal" with a raw token is recorded as the CLI's word it is (see Via.TERMINAL) ...
    r = httpx2.post(
        f"{live.base}/api/tasks/{claimed}/accept",
        headers={"Authorization": f"Bearer {live.admin_token}", PRESENCE_HEADER: "terminal"},
        timeout=30,
    )
    assert r.status_code == 200 and _accept_event(live, claimed)["detail"]["via"] == "terminal"
    # ... and a board session stays the board's whatever it says.
    board = _board_token(live)
    r = httpx2.post(
        f"{live.base}/api/tasks/{ignored}/accept",
        headers={"Authorization": f"Bearer {board}", PRESENCE_HEADER: "script"},
        timeout=30,
    )
    assert r.status_code == 200 and _accept_event(live, ignored)["detail"]["via"] == "board"
    # The board's session is no key for MCP either.
    r = httpx2.post(
        live.mcp_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {board}", "Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    assert r.status_code == 401, r.text
