"""Work reaches an idle verifier at once: its work request waits on the server, a submission
wakes it, and a waiting request holds none of the workers the agents' calls run on."""

from __future__ import annotations

import http.client
import json
import math
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx2
import pytest

from taskgate.domain.clock import ManualTiming
from taskgate.service.wakeups import MAX_WAIT_S, POLL_STEP_S, Polling, Signal
from taskgate.verifier.worker import WAIT_FOR_WORK_S
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
    """One work request that waits, answered in the background. `sent` is set once the whole
    request is with the server (`sent_at` when), `answered_at` is when the answer came."""

    def __init__(self, live: Live, key: str, **query: Any) -> None:
        super().__init__(daemon=True)
        self.live, self.key, self.query = live, key, query
        self.sent = threading.Event()
        self.sent_at = math.inf
        self.status: int | None = None
        self.body: Any = None
        self.answered_at = math.inf

    def run(self) -> None:
        host, port = self.live.base.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            conn.request(
                "GET",
                f"/api/verifier/work?{urlencode(self.query)}",
                headers={"Authorization": f"Bearer {self.key}"},
            )
            self.sent_at = time.monotonic()
            self.sent.set()
            response = conn.getresponse()
            self.body = json.loads(response.read())
            self.status = response.status
            self.answered_at = time.monotonic()
        finally:
            conn.close()

    def started(self) -> None:
        """Once the request is with the server, and the server has answered a request sent
        after it (so it took this one up first): it is waiting there, or has answered."""
        assert self.sent.wait(30), "the work request was never sent"
        assert httpx2.get(f"{self.live.base}/api/health", timeout=30).status_code == 200


def _each(waiters: list[Waiting]) -> None:
    for w in waiters:
        w.started()


def test_a_submission_wakes_a_waiting_work_request(gate: Gate) -> None:
    task = gate.task([KEEPS_DIGITS])
    waiter = Waiting(gate.live, gate.verifier_key, project=gate.project, wait=MAX_WAIT_S)
    waiter.start()
    waiter.started()
    assert waiter.is_alive(), "the request answered before anything was submitted"
    gate.submit(task, gate.repo.commit({"slug.py": SLUGIFY + "\n"}))
    waiter.join(MAX_WAIT_S + 10)
    assert waiter.status == 200, waiter.body
    assert waiter.body["items"] == [task]
    assert waiter.body["wait_s"] == MAX_WAIT_S
    # Woken by the submission: a wait that ran out would answer no sooner than its whole length
    # after the request was sent.
    assert waiter.answered_at < waiter.sent_at + MAX_WAIT_S


def test_a_wait_with_nothing_arriving_answers_empty_when_it_runs_out(gate: Gate) -> None:
    began = time.monotonic()
    r = work(gate.live, gate.verifier_key, project=gate.project, wait=1.5)
    took = time.monotonic() - began
    assert r.status_code == 200, r.text
    assert r.json()["items"] == [] and r.json()["wait_s"] == 1.5
    assert 1.4 <= took < MAX_WAIT_S  # the wait asked for, not the longest one


def test_without_wait_the_answer_comes_at_once(gate: Gate) -> None:
    began = time.monotonic()
    r = work(gate.live, gate.verifier_key, project=gate.project)
    assert r.status_code == 200 and r.json()["items"] == [] and r.json()["wait_s"] == 0
    assert time.monotonic() - began < MAX_WAIT_S / 2  # a default wait would hold it


@pytest.mark.parametrize("wait", ["21", "-1", "nan", "inf", "soon"])
def test_a_wait_out_of_range_is_refused_at_once(gate: Gate, wait: str) -> None:
    before = gate.live.dump()
    began = time.monotonic()
    r = work(gate.live, gate.verifier_key, project=gate.project, wait=wait)
    assert time.monotonic() - began < MAX_WAIT_S / 2  # refused, not waited out
    assert r.status_code in (400, 422), r.text
    assert r.json()["code"] == "E_VALIDATION", r.text
    if wait in ("21", "-1"):
        assert r.json()["message"] == f"wait must be between 0 and {MAX_WAIT_S:g} seconds"
    assert gate.live.dump() == before


def test_waiting_verifiers_leave_the_agents_their_workers(gate: Gate) -> None:
    """More waiting requests than the server has workers (2): agents' MCP calls and a human's
    REST calls are still answered at once."""
    waiters = [Waiting(gate.live, gate.verifier_key, project=gate.project, wait=MAX_WAIT_S) for _ in range(6)]
    for w in waiters:
        w.start()
    _each(waiters)
    assert all(w.is_alive() for w in waiters)

    async def agent_calls() -> None:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            for _ in range(3):
                await a.ok("list_tasks", project=gate.project)

    run(agent_calls())
    gate.live.ok("GET", f"/api/projects/{gate.project}")
    # Answered while every wait still held its request: had the waits taken the workers, these
    # calls would have queued behind them until their waits ran out.
    assert all(w.is_alive() for w in waiters), "the calls waited for the waits to end"
    for w in waiters:
        w.join(MAX_WAIT_S + 10)
        assert w.status == 200 and w.body["items"] == [], w.body


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
        # Idle: it said it polls, which it says just before it asks for work, and the server
        # answered a request sent after that one (so it took the verifier's up first).
        deadline = time.monotonic() + 60
        while not any("as soon as work arrives" in line for _, line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, lines
            time.sleep(0.05)
        asked_by = next(at for at, line in lines if "as soon as work arrives" in line)
        assert gate.live.ok("GET", "/api/health")
        gate.submit(task, gate.repo.commit({"slug.py": SLUGIFY + "\n"}))
        deadline = time.monotonic() + 60
        while not any(f"{task}: passed" in line for _, line in lines) and time.monotonic() < deadline:
            time.sleep(0.1)
        started = [at for at, line in lines if line.startswith(f"{task}: verifying")]
        assert started, lines
        # Brought by the long poll's wake: its wait running out would have taken WAIT_FOR_WORK_S
        # from when it asked, and its 600 s interval far longer.
        assert started[0] < asked_by + WAIT_FOR_WORK_S, lines
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
        waiter = Waiting(live, key, wait=MAX_WAIT_S)
        waiter.start()
        waiter.started()
        assert waiter.is_alive()
        live.proc.terminate()
        live.proc.wait(30)
        waiter.join(30)
        # Answered, empty, by the stopping server: not cut off by its shutdown's grace period
        # running out while the request still waited.
        assert waiter.status == 200 and waiter.body["items"] == [], waiter.body
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
    timing = ManualTiming()
    Polling(step_s=0.2, timing=timing).wait(0, 10)
    Polling(step_s=0.2, timing=timing).wait(0, 0.05)
    assert timing.slept == [0.2, 0.05]  # a step, or what is left of the wait when that is less

    # Woken by a notify from another thread, long before its timeout.
    signal = Signal()
    seen = signal.generation()
    waited = threading.Event()

    def waiter() -> None:
        signal.wait(seen, 600)
        waited.set()

    threading.Thread(target=waiter, daemon=True).start()
    deadline = time.monotonic() + 60
    while not signal._cond._waiters:  # CPython keeps a Condition's waiters there
        assert time.monotonic() < deadline, "the waiter never waited"
        time.sleep(0.01)
    assert not waited.is_set()
    signal.notify()
    assert waited.wait(60) and signal.generation() == seen + 1
    # A notify between the look and the wait is not missed: the generation already moved.
    seen = signal.generation()
    signal.notify()
    began = time.monotonic()
    signal.wait(seen, 600)
    assert time.monotonic() - began < 60
