"""A fleet of agents against one `taskgate serve`: do they trip over each other?

    python bench/fleet.py [--agents 16] [--tasks 200] [--runs 3] [--version 2026-07-28]
                          [--probe-calls 300] [--src CHECKOUT] [--smoke]

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
then what one client waits, each probe on a keep-alive connection of its own, in interleaved
rounds: an MCP call (get_next_tasks over a fresh project of M ready tasks), two REST calls
(GET /api/health, and GET /api/tasks/<id> as the admin), and the bare MCP SDK server's echo
tool (bench/benchkit/bare.py, the floor; same protocol version), one line each:
    probe=<name> clients=1 p50_ms=<x> p95_ms=<x>
then `single_client_p50_ms mcp=<x> rest=<x> bare=<x> mcp_over_bare=<x>` (rest: the health
probe), and last `fleet_ratio=<natural tasks_per_s / server-picked tasks_per_s>`. A server that
holds every answer back (Nagle's algorithm against a client's delayed ACK: 40 ms) shows here
as mcp and rest tens of milliseconds above bare.

--src serves another checkout's code (its src/) for a before/after on the same clients.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchkit import bare, smoke
from benchkit.mcp import LEGACY, MODERN, SHA, Connection, Refused
from benchkit.serve import Served, start
from benchkit.stats import pct

PATTERNS = ("server-picked", "natural")
PROBES = ("get_next_tasks", "rest_health", "rest_task", "bare_echo")


@dataclass
class Tally:
    calls: int = 0
    lost_races: int = 0
    submitted: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


def server_picked(agent: Connection, project: str, tally: Tally) -> None:
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


def natural(agent: Connection, project: str, tally: Tally) -> None:
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


def make_project(server: Served, name: str, tasks: int) -> list[str]:
    server.rest("POST", "/api/projects", {"name": name, "repo": f"/tmp/{name}"})
    return [
        server.rest(
            "POST", f"/api/projects/{name}/tasks", {"title": f"task {i}", "criteria": [{"text": "works"}]}
        )["task"]["id"]
        for i in range(tasks)
    ]


def double_claims(server: Served, task_ids: list[str]) -> int:
    """From the server's records: claims beyond the first on any task, plus tasks never
    submitted (each task was claimed and submitted exactly once, or the run is wrong)."""
    bad = 0
    for tid in task_ids:
        shown = server.rest("GET", f"/api/tasks/{tid}")
        claims = sum(1 for e in shown["history"] if e["action"] == "claim")
        bad += max(0, claims - 1) + max(0, len(shown["task"]["attempts"]) - 1)
        if shown["task"]["status"] != "needs_verification":
            bad += 1
    return bad


@dataclass
class RunResult:
    pattern: str
    double_claims: int
    lost_races_per_task: float
    tasks_per_s: float
    calls_per_task: float
    p50_ms: float
    p95_ms: float


def run_once(server: Served, keys: list[str], pattern: str, project: str, m: int, version: str) -> RunResult:
    task_ids = make_project(server, project, m)
    loop = server_picked if pattern == "server-picked" else natural
    tallies = [Tally() for _ in keys]
    agents = [
        Connection(server.port, key, version, latencies=t.latencies)
        for key, t in zip(keys, tallies, strict=True)
    ]
    errors: list[BaseException] = []
    go = threading.Barrier(len(agents) + 1)

    def work(agent: Connection, tally: Tally) -> None:
        go.wait()
        try:
            loop(agent, project, tally)
        except BaseException as exc:  # reported below: a failed agent invalidates the run
            errors.append(exc)
        tally.calls = agent.calls
        agent.close()

    threads = [threading.Thread(target=work, args=pair) for pair in zip(agents, tallies, strict=True)]
    for t in threads:
        t.start()
    go.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    if errors:
        raise RuntimeError(f"an agent failed: {errors[0]!r}")
    latencies = [x for t in tallies for x in t.latencies]
    return RunResult(
        pattern=pattern,
        double_claims=double_claims(server, task_ids),
        lost_races_per_task=sum(t.lost_races for t in tallies) / m,
        tasks_per_s=m / wall,
        calls_per_task=sum(t.calls for t in tallies) / m,
        p50_ms=pct(latencies, 0.50) * 1000,
        p95_ms=pct(latencies, 0.95) * 1000,
    )


class Rest:
    """GET requests on one keep-alive connection, each one's seconds kept."""

    def __init__(self, port: int, path: str, token: str | None) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.path = path
        self.headers = {"authorization": f"Bearer {token}"} if token else {}
        self.latencies: list[float] = []

    def get(self) -> None:
        started = time.perf_counter()
        self.http.request("GET", self.path, headers=self.headers)
        response = self.http.getresponse()
        raw = response.read()
        self.latencies.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"GET {self.path}: HTTP {response.status} {raw[:300]!r}")


def probe(
    server: Served, bare_port: int, key: str, m: int, version: str, calls: int
) -> dict[str, list[float]]:
    """One client's latencies per probe, each on a keep-alive connection of its own, in rounds
    of 10 calls a probe (interleaved: the machine's noise hits every probe alike)."""
    (task_id, *_) = make_project(server, "probe", m)
    mcp = Connection(server.port, key, version)
    health = Rest(server.port, "/api/health", None)
    task = Rest(server.port, f"/api/tasks/{task_id}", server.admin_token)
    echo = Connection(bare_port, None, version)
    steps = {
        "get_next_tasks": lambda: mcp.call("get_next_tasks", project="probe"),
        "rest_health": health.get,
        "rest_task": task.get,
        "bare_echo": lambda: echo.result("echo", text="hi"),
    }
    kept = {"get_next_tasks": mcp.latencies, "rest_health": health.latencies, "rest_task": task.latencies}
    kept["bare_echo"] = echo.latencies
    for step in steps.values():  # warm-up
        for _ in range(max(5, calls // 10)):
            step()
    for latencies in kept.values():
        latencies.clear()
    for _ in range(max(1, calls // 10)):
        for step in steps.values():
            for _ in range(10):
                step()
    mcp.close()
    echo.close()
    return kept


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
    parser.add_argument("--probe-calls", type=int, default=300, help="single-client calls per probe")
    parser.add_argument("--src", type=Path, help="serve the taskgate source in this checkout instead")
    args = smoke.parse(parser, agents=4, tasks=20, runs=1, probe_calls=30)

    server = start(src=args.src)
    bare_proc, bare_port = bare.start()
    try:
        keys = [server.agent_key(f"agent{i}") for i in range(args.agents)]
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
        probed = probe(server, bare_port, keys[0], args.tasks, args.version, args.probe_calls)
        for name in PROBES:
            values = probed[name]
            print(
                f"probe={name} clients=1 p50_ms={pct(values, 0.5) * 1000:.2f} p95_ms={pct(values, 0.95) * 1000:.2f}"
            )
        p50 = {name: pct(values, 0.5) * 1000 for name, values in probed.items()}
        print(
            f"single_client_p50_ms mcp={p50['get_next_tasks']:.2f} rest={p50['rest_health']:.2f} "
            f"bare={p50['bare_echo']:.2f} mcp_over_bare={p50['get_next_tasks'] / p50['bare_echo']:.2f}"
        )
        print(f"fleet_ratio={summary['natural'].tasks_per_s / summary['server-picked'].tasks_per_s:.2f}")
    finally:
        bare_proc.terminate()
        bare_proc.wait(timeout=30)
        server.stop()


if __name__ == "__main__":
    main()
