"""A fleet of agents against one `taskgate serve`: do they trip over each other?

    python bench/fleet.py [--agents 16] [--tasks 200] [--runs 3] [--version 2026-07-28]

N agents (threads, one agent key each, one keep-alive HTTP connection each) loop "find work,
claim, submit" over M ready tasks of a fresh project, in two patterns:

- server-picked: claim_task(project) -> submit_task, until E_NOTHING_READY;
- natural: get_next_tasks(project) -> claim_task(task_id=the first) -> submit_task, until the
  list is empty; a claim refused because another agent got the task first is a lost race.

Runs are interleaved (server-picked, natural, server-picked, ...), each on a fresh project of
one fresh `taskgate serve` subprocess. Double claims are counted from the server's own records
after each run (every task's history and attempts, read over REST), not from client replies:
a task claimed more than once, or left unsubmitted, counts.

Clients speak raw JSON-RPC over HTTP (stdlib http.client), not the SDK's Client: on this 2-core
machine the SDK client costs more CPU per call than the server does, so the figures would
measure the client. The protocol version defaults to 2026-07-28, which the SDK's Client
negotiates with taskgate; --version 2025-11-25 runs the older one.

Prints one `run=` line per run, one line per pattern (medians over runs; double_claims summed):
    pattern=<p> double_claims=<n> lost_races_per_task=<x> tasks_per_s=<x> calls_per_task=<x> p50_ms=<x> p95_ms=<x>
then the single-client latency of get_next_tasks over a fresh project of M ready tasks:
    probe=get_next_tasks clients=1 p50_ms=<x> p95_ms=<x>
and last `fleet_ratio=<natural tasks_per_s / server-picked tasks_per_s>`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LEGACY, MODERN = "2025-11-25", "2026-07-28"
SHA = "0123456789abcdef0123456789abcdef01234567"
PATTERNS = ("server-picked", "natural")


class Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class Agent:
    """One agent's MCP connection: JSON-RPC tools/call over a keep-alive HTTP connection."""

    def __init__(self, port: int, key: str, version: str, latencies: list[float]) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.key = key
        self.version = version
        self.latencies = latencies
        self.calls = 0

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        self.calls += 1
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {self.key}",
            "mcp-protocol-version": self.version,
        }
        if self.version == MODERN:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench-fleet", "version": "1"},
            }
            headers |= {"mcp-method": "tools/call", "mcp-name": tool}
        body = json.dumps({"jsonrpc": "2.0", "id": self.calls, "method": "tools/call", "params": params})
        start = time.perf_counter()
        self.http.request("POST", "/mcp", body, headers)
        response = self.http.getresponse()
        raw = response.read()
        self.latencies.append(time.perf_counter() - start)
        if response.status != 200:
            raise RuntimeError(f"{tool}: HTTP {response.status} {raw[:300]!r}")
        result: dict[str, Any] = json.loads(raw)["result"]
        if result.get("isError"):
            error = json.loads(result["content"][0]["text"])
            raise Refused(error["code"], error["message"])
        structured: dict[str, Any] = result["structuredContent"]
        return structured


@dataclass
class Tally:
    calls: int = 0
    lost_races: int = 0
    submitted: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


def server_picked(agent: Agent, project: str, tally: Tally) -> None:
    while True:
        try:
            claimed = agent.call("claim_task", project=project)
        except Refused as exc:
            if exc.code == "E_NOTHING_READY":
                return
            raise
        agent.call(
            "submit_task",
            task_id=claimed["task_id"],
            claim_token=claimed["claim_token"],
            commit_sha=SHA,
            evidence="bench",
        )
        tally.submitted.append(claimed["task_id"])


def natural(agent: Agent, project: str, tally: Tally) -> None:
    while True:
        listed = agent.call("get_next_tasks", project=project)["tasks"]
        if not listed:
            return
        try:
            # project named too, so the same client runs against servers that still require it
            claimed = agent.call("claim_task", project=project, task_id=listed[0]["id"])
        except Refused as exc:
            if exc.code == "E_WRONG_STATE":  # another agent claimed it first
                tally.lost_races += 1
                continue
            raise
        agent.call(
            "submit_task",
            task_id=claimed["task_id"],
            claim_token=claimed["claim_token"],
            commit_sha=SHA,
            evidence="bench",
        )
        tally.submitted.append(claimed["task_id"])


class Server:
    """A fresh `taskgate serve` on a temp data dir, and the admin's REST access to it."""

    def __init__(self, src: Path | None) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.port = _free_port()
        env = dict(os.environ)
        if src is not None:  # serve another checkout's code (e.g. main, for a before/after)
            env["PYTHONPATH"] = str(src / "src")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "taskgate.cli",
                "serve",
                "--data-dir",
                self.tmp.name,
                "--port",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.rest("GET", "/api/health", token=None)
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("taskgate serve did not start") from None
                time.sleep(0.1)
        self.admin = (Path(self.tmp.name) / "admin-token").read_text().strip()

    def rest(self, method: str, path: str, body: Any = None, *, token: str | None = "") -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method)
        req.add_header("content-type", "application/json")
        if token is not None:
            req.add_header("authorization", f"Bearer {token or self.admin}")
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())

    def project(self, name: str, tasks: int) -> list[str]:
        self.rest("POST", "/api/projects", {"name": name, "repo": f"/tmp/{name}"})
        return [
            self.rest(
                "POST", f"/api/projects/{name}/tasks", {"title": f"task {i}", "criteria": [{"text": "works"}]}
            )["task"]["id"]
            for i in range(tasks)
        ]

    def double_claims(self, task_ids: list[str]) -> int:
        """From the server's records: claims beyond the first on any task, plus tasks never
        submitted (each task was claimed and submitted exactly once, or the run is wrong)."""
        bad = 0
        for tid in task_ids:
            shown = self.rest("GET", f"/api/tasks/{tid}")
            claims = sum(1 for e in shown["history"] if e["action"] == "claim")
            bad += max(0, claims - 1) + max(0, len(shown["task"]["attempts"]) - 1)
            if shown["task"]["status"] != "needs_verification":
                bad += 1
        return bad

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.tmp.cleanup()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RunResult:
    pattern: str
    double_claims: int
    lost_races_per_task: float
    tasks_per_s: float
    calls_per_task: float
    p50_ms: float
    p95_ms: float


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def run_once(server: Server, keys: list[str], pattern: str, project: str, m: int, version: str) -> RunResult:
    task_ids = server.project(project, m)
    loop = server_picked if pattern == "server-picked" else natural
    tallies = [Tally() for _ in keys]
    agents = [Agent(server.port, key, version, t.latencies) for key, t in zip(keys, tallies, strict=True)]
    errors: list[BaseException] = []
    go = threading.Barrier(len(agents) + 1)

    def work(agent: Agent, tally: Tally) -> None:
        go.wait()
        try:
            loop(agent, project, tally)
        except BaseException as exc:  # reported below: a failed agent invalidates the run
            errors.append(exc)
        tally.calls = agent.calls

    threads = [threading.Thread(target=work, args=pair) for pair in zip(agents, tallies, strict=True)]
    for t in threads:
        t.start()
    go.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"an agent failed: {errors[0]!r}")
    latencies = [x for t in tallies for x in t.latencies]
    return RunResult(
        pattern=pattern,
        double_claims=server.double_claims(task_ids),
        lost_races_per_task=sum(t.lost_races for t in tallies) / m,
        tasks_per_s=m / wall,
        calls_per_task=sum(t.calls for t in tallies) / m,
        p50_ms=_pct(latencies, 0.50),
        p95_ms=_pct(latencies, 0.95),
    )


def probe(server: Server, key: str, m: int, version: str, calls: int = 300) -> tuple[float, float]:
    """Single-client latency of get_next_tasks over a fresh project of m ready tasks."""
    server.project("probe", m)
    latencies: list[float] = []
    agent = Agent(server.port, key, version, latencies)
    for _ in range(50):  # warm-up
        agent.call("get_next_tasks", project="probe")
    latencies.clear()
    for _ in range(calls):
        agent.call("get_next_tasks", project="probe")
    return _pct(latencies, 0.50), _pct(latencies, 0.95)


def line(r: RunResult) -> str:
    return (
        f"pattern={r.pattern} double_claims={r.double_claims} lost_races_per_task={r.lost_races_per_task:.2f} "
        f"tasks_per_s={r.tasks_per_s:.1f} calls_per_task={r.calls_per_task:.2f} "
        f"p50_ms={r.p50_ms:.1f} p95_ms={r.p95_ms:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--version", choices=[LEGACY, MODERN], default=MODERN)
    parser.add_argument("--src", type=Path, help="serve the taskgate source in this checkout instead")
    args = parser.parse_args()

    server = Server(args.src)
    try:
        keys = [
            server.rest("POST", "/api/keys", {"kind": "agent", "name": f"agent{i}"})["key"]
            for i in range(args.agents)
        ]
        results: dict[str, list[RunResult]] = {p: [] for p in PATTERNS}
        for run in range(1, args.runs + 1):
            for pattern in PATTERNS:  # interleaved: the machine's noise hits both alike
                r = run_once(server, keys, pattern, f"{pattern}-{run}", args.tasks, args.version)
                results[pattern].append(r)
                print(f"run={run} {line(r)}", flush=True)
        summary = {}
        for pattern, rs in results.items():
            summary[pattern] = RunResult(
                pattern=pattern,
                double_claims=sum(r.double_claims for r in rs),
                lost_races_per_task=statistics.median(r.lost_races_per_task for r in rs),
                tasks_per_s=statistics.median(r.tasks_per_s for r in rs),
                calls_per_task=statistics.median(r.calls_per_task for r in rs),
                p50_ms=statistics.median(r.p50_ms for r in rs),
                p95_ms=statistics.median(r.p95_ms for r in rs),
            )
            print(line(summary[pattern]))
        p50, p95 = probe(server, keys[0], args.tasks, args.version)
        print(f"probe=get_next_tasks clients=1 p50_ms={p50:.2f} p95_ms={p95:.2f}")
        print(f"fleet_ratio={summary['natural'].tasks_per_s / summary['server-picked'].tasks_per_s:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
