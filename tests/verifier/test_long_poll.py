"""Work reaches an idle verifier at once: its work request waits on the server, a submission
wakes it, and a waiting request holds none of the workers the agents' calls run on."""

from __future__ import annotations

import math
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from taskgate.service.wakeups import MAX_WAIT_S, POLL_STEP_S, Polling, Signal
from tests.mcp.events import MODERN
from tests.mcp.live import ROOT, Live, agent, run, serving
from tests.verifier.support import KEEPS_DIGITS, SLUGIFY, SLUGIFY_TESTS, TASKGATE, Gate, Repo, pytest_config


def work(live: Live, key: str, **query: Any) -> httpx2.Response:
    return httpx2.get(
        f"{live.base}/api/verifier/work",
        params=query,
        headers={"Authorization": f"Bearer {key}"},
        timeout=40,
    )


@pytest.fixture
def gate(live: Live, tmp_path: Path) -> Gate:
    repo = Repo.create(tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS})
    return Gate.create(live, repo, pytest_config())


class Waiting(threading.Thread):
    """One work request that waits, answered in the background; `answered_at` is when."""

    def __init__(self, live: Live, key: str, **query: Any) -> None:
        super().__init__(daemon=True)
        self.live, self.key, self.query = live, key, query
        self.response: httpx2.Response | None = None
        self.answered_at = math.inf

    def run(self) -> None:
        self.response = work(self.live, self.key, **self.query)
        self.answered_at = time.monotonic()


def test_a_submission_wakes_a_waiting_work_request(gate: Gate) -> None:
    task = gate.task([KEEPS_DIGITS])
    waiter = Waiting(gate.live, gate.verifier_key, project=gate.project, wait=15)
    waiter.start()
    time.sleep(0.5)
    assert waiter.is_alive(), "the request answered before anything was submitted"
    gate.submit(task, gate.repo.commit({"slug.py": SLUGIFY + "\n"}))
    submitted_at = time.monotonic()
    waiter.join(10)
    assert waiter.response is not None and waiter.response.status_code == 200, waiter.response
    body = waiter.response.json()
    assert body["items"] == [task]
    assert body["wait_s"] == 15
    assert waiter.answered_at - submitted_at < 1.0


def test_a_wait_with_nothing_arriving_answers_empty_when_it_runs_out(gate: Gate) -> None:
    began = time.monotonic()
    r = work(gate.live, gate.verifier_key, project=gate.project, wait=1.5)
    took = time.monotonic() - began
    assert r.status_code == 200, r.text
    assert r.json()["items"] == [] and r.json()["wait_s"] == 1.5
    assert 1.4 <= took < 5


def test_without_wait_the_answer_comes_at_once(gate: Gate) -> None:
    began = time.monotonic()
    r = work(gate.live, gate.verifier_key, project=gate.project)
    assert r.status_code == 200 and r.json()["items"] == [] and r.json()["wait_s"] == 0
    assert time.monotonic() - began < 1.0


@pytest.mark.parametrize("wait", ["21", "-1", "nan", "inf", "soon"])
def test_a_wait_out_of_range_is_refused_at_once(gate: Gate, wait: str) -> None:
    before = gate.live.dump()
    began = time.monotonic()
    r = work(gate.live, gate.verifier_key, project=gate.project, wait=wait)
    assert time.monotonic() - began < 2.0
    assert r.status_code in (400, 422), r.text
    assert r.json()["code"] == "E_VALIDATION", r.text
    if wait in ("21", "-1"):
        assert r.json()["message"] == f"wait must be between 0 and {MAX_WAIT_S:g} seconds"
    assert gate.live.dump() == before


def test_waiting_verifiers_leave_the_agents_their_workers(gate: Gate) -> None:
    """More waiting requests than the server has workers (2): agents' MCP calls and a human's
    REST calls are still answered at once."""
    waiters = [Waiting(gate.live, gate.verifier_key, project=gate.project, wait=8) for _ in range(6)]
    for w in waiters:
        w.start()
    time.sleep(0.5)
    assert all(w.is_alive() for w in waiters)

    async def agent_calls() -> list[float]:
        took = []
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            for _ in range(3):
                began = time.monotonic()
                await a.ok("list_tasks", project=gate.project)
                took.append(time.monotonic() - began)
        return took

    assert max(run(agent_calls())) < 1.0
    began = time.monotonic()
    gate.live.ok("GET", f"/api/projects/{gate.project}")
    assert time.monotonic() - began < 1.0
    assert all(w.is_alive() for w in waiters), "the waits ended early: this proved nothing"
    for w in waiters:
        w.join(15)
        assert w.response is not None and w.response.json()["items"] == []


def test_an_idle_verifier_starts_within_a_second_of_the_submission(gate: Gate) -> None:
    """`taskgate verify` polling with a 10-minute interval: only the long poll can bring it the
    work this soon."""
    task = gate.task([KEEPS_DIGITS])
    env = gate.verify_env()
    proc = subprocess.Popen(
        [TASKGATE, "verify", "--project", gate.project, "--interval", "600"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.monotonic(), line.rstrip()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        time.sleep(2.0)  # idle: it asked, and waits
        gate.submit(task, gate.repo.commit({"slug.py": SLUGIFY + "\n"}))
        submitted_at = time.monotonic()
        deadline = time.monotonic() + 60
        while not any(f"{task}: passed" in line for _, line in lines) and time.monotonic() < deadline:
            time.sleep(0.1)
        started = [at for at, line in lines if line.startswith(f"{task}: verifying")]
        assert started, lines
        assert started[0] - submitted_at < 1.0, lines
        assert any(f"{task}: passed -> verified" in line for _, line in lines), lines
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_stopping_server_answers_its_waiting_requests_at_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    gen: Iterator[Live] = serving(tmp_path_factory.mktemp("stopping"))
    live = next(gen)
    try:
        key, _ = live.key("ci", kind="verifier", verifier_kind="local")
        waiter = Waiting(live, key, wait=20)
        waiter.start()
        time.sleep(0.5)
        assert waiter.is_alive()
        began = time.monotonic()
        live.proc.terminate()
        live.proc.wait(15)
        assert time.monotonic() - began < 5.0
    finally:
        next(gen, None)


def test_the_longest_wait_stays_under_api_gateways_cut() -> None:
    """Lambda reads the store again every step until the wait runs out: the last read ends
    before API Gateway's integration timeout (template.yaml) would cut the request."""
    template = (ROOT / "template.yaml").read_text()
    cuts = {int(m) for m in re.findall(r"TimeoutInMillis:\s*(\d+)", template)}
    assert cuts, "no integration timeout in template.yaml"
    assert min(cuts) / 1000 > MAX_WAIT_S + POLL_STEP_S


def test_polling_waits_one_step_and_a_signal_wakes_at_once() -> None:
    began = time.monotonic()
    Polling(step_s=0.2).wait(0, 10)
    assert 0.15 <= time.monotonic() - began < 1.0

    signal = Signal()
    seen = signal.generation()
    threading.Timer(0.2, signal.notify).start()
    began = time.monotonic()
    signal.wait(seen, 10)
    assert time.monotonic() - began < 1.0
    # A notify between the look and the wait is not missed: the generation already moved.
    seen = signal.generation()
    signal.notify()
    began = time.monotonic()
    signal.wait(seen, 10)
    assert time.monotonic() - began < 0.1
