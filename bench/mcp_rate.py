"""Rate of taskgate MCP tool calls over HTTP against a bare MCP server, measured in one run.

    python bench/mcp_rate.py [--seconds 4] [--rounds 3] [--threads 8] [--src CHECKOUT] [--smoke]

Servers, all on this machine, measured in interleaved rounds:
- `taskgate`: a real `taskgate serve` (its MCP app served directly by uvicorn, one long-lived
  app: key auth, SQLite store, the claim -> heartbeat -> submit mix);
- `bare-direct`: the MCP SDK's stateless, JSON-response Streamable HTTP app with a single
  `echo` tool, served directly by uvicorn (bench/benchkit/bare.py): the floor taskgate is held to;
- `bare`: the same bare app behind the local API-Gateway translation (each request a v2 event
  into a Lambda handler running the app through Mangum, built per invocation), as `taskgate
  serve` used to serve MCP: what the translation alone costs.

Clients: N threads, each with one keep-alive HTTP connection, sending JSON-RPC tools/call
requests, for both protocol versions (2025-11-25 and 2026-07-28), in interleaved rounds
(median per server). Prints one line per server and version; `ratio_<version>=` and `ratio=`
(taskgate / bare through the translation, the lower of the two versions); and last
`ratio_direct=` (taskgate / bare served directly, the lower of the two versions).

Each server line also gives the server process's CPU time per call (Linux /proc: user + system
of the whole process, its worker threads included), and `cpu_ratio_direct_<version>=` is bare
direct's CPU per call over taskgate's: on a machine shared with other work, calls/s move with
whatever else runs, CPU per call much less.

--src serves another checkout's taskgate (its src/; its tasks seeded through its own services)
against the same bare servers and clients, for a before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchkit import bare, smoke
from benchkit.mcp import SHA, VERSIONS, Connection
from benchkit.seed import ready_tasks_of
from benchkit.serve import start

MAX_RATE = 1500  # taskgate calls/s this bench seeds tasks for (well above this machine's ~900)


def measure(
    threads: int, seconds: float, make: Callable[[], Callable[[], int]], pid: int | None = None
) -> tuple[float, float]:
    """Run `threads` workers for `seconds`, after a warm-up (as long, at most 1 s, and until
    every worker has made a step); each step returns calls made. Calls/s, and the CPU seconds
    process `pid` spent per call while measuring (0 without one)."""
    counts = [0] * threads
    errors: list[BaseException] = []
    go = threading.Barrier(threads + 1)
    warm = threading.Semaphore(0)
    measuring = threading.Event()
    stop = threading.Event()

    def worker(i: int) -> None:
        step = make()
        go.wait()
        first = True
        try:
            while not stop.is_set():
                n = step()
                if first:
                    first = False
                    warm.release()
                if measuring.is_set():
                    counts[i] += n
        except BaseException as exc:  # reported below: a failing call invalidates the figure
            errors.append(exc)
            stop.set()
        finally:
            if first:
                warm.release()

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    go.wait()
    time.sleep(min(1.0, seconds))
    for _ in range(threads):
        warm.acquire()
    measuring.set()
    t0, c0 = time.perf_counter(), cpu_s(pid) if pid else 0.0
    time.sleep(seconds)
    measuring.clear()
    elapsed, used = time.perf_counter() - t0, (cpu_s(pid) - c0) if pid else 0.0
    stop.set()
    for t in pool:
        t.join()
    if errors:
        raise RuntimeError(f"a client failed: {errors[0]}")
    return sum(counts) / elapsed, used / max(1, sum(counts))


def cpu_s(pid: int) -> float:
    """CPU time (user + system) the process has used so far, seconds (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class KeyPool:
    """One agent key per client thread."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self.lock = threading.Lock()
        self.next = 0

    def reset(self) -> None:
        self.next = 0

    def take(self) -> str:
        with self.lock:
            key = self.keys[self.next % len(self.keys)]
            self.next += 1
            return key


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=4.0, help="per round and server")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--src", type=Path, help="serve the taskgate source in this checkout instead")
    args = smoke.parse(parser, seconds=0.2, rounds=1, threads=2)

    server = start(src=args.src)
    bare_direct, direct_port = bare.start()
    bare_translated, translated_port = bare.start(translated=True)
    try:
        server.rest("POST", "/api/projects", {"name": "bench", "repo": "/tmp/bench"})
        keys = [server.agent_key(f"a{i}") for i in range(args.threads)]
        # claim -> heartbeat -> submit uses one task per 3 calls; seed enough for every round of
        # both versions (warm-up included) at up to MAX_RATE calls/s, or a round runs dry
        warmup = min(1.0, args.seconds)
        needed = int(args.rounds * 2 * (args.seconds + warmup) * MAX_RATE / 3)
        ready_tasks_of(args.src, server.db_path, "bench", needed)

        results: dict[tuple[str, str], list[float]] = {}
        cpu_per_call: dict[tuple[str, str], list[float]] = {}
        for version in VERSIONS:
            pool = KeyPool(keys)

            def taskgate_worker(version: str = version, pool: KeyPool = pool) -> Callable[[], int]:
                conn = Connection(server.port, pool.take(), version)

                def step() -> int:
                    claimed = conn.call("claim_task", project="bench")
                    tid, token = claimed["task_id"], claimed["claim_token"]
                    conn.call("heartbeat", task_id=tid, claim_token=token)
                    conn.call("submit_task", task_id=tid, claim_token=token, commit_sha=SHA, evidence="bench")
                    return 3

                return step

            def echo_worker(port: int, version: str = version) -> Callable[[], Callable[[], int]]:
                def factory() -> Callable[[], int]:
                    conn = Connection(port, None, version)
                    return lambda: (conn.result("echo", text="hi"), 1)[1]

                return factory

            # Interleaved rounds, medians: the machine's noise hits both servers alike.
            makers: list[tuple[str, Callable[[], Callable[[], int]], int]] = [
                ("bare-direct", echo_worker(direct_port), bare_direct.pid),
                ("bare", echo_worker(translated_port), bare_translated.pid),
                ("taskgate", taskgate_worker, server.proc.pid),
            ]
            for _ in range(args.rounds):
                for name, make, pid in makers:
                    pool.reset()
                    rate, cpu = measure(args.threads, args.seconds, make, pid)
                    results.setdefault((name, version), []).append(rate)
                    cpu_per_call.setdefault((name, version), []).append(cpu)
        med = {k: statistics.median(v) for k, v in results.items()}
        for (name, version), rate in med.items():
            rounds = " ".join(f"{r:.0f}" for r in results[(name, version)])
            cpu_us = statistics.median(cpu_per_call[(name, version)]) * 1e6
            print(
                f"server={name} version={version} threads={args.threads} calls_per_s={rate:.1f} "
                f"rounds=[{rounds}] cpu_us_per_call={cpu_us:.0f}"
            )
        ratios = {v: med[("taskgate", v)] / med[("bare", v)] for v in VERSIONS}
        for v, r in ratios.items():
            print(f"ratio_{v}={r:.2f}")
        print(f"ratio={min(ratios.values()):.2f}")
        for v in VERSIONS:
            cpu = {k: statistics.median(cpu_per_call[(k, v)]) for k in ("taskgate", "bare-direct")}
            print(f"cpu_ratio_direct_{v}={cpu['bare-direct'] / cpu['taskgate']:.2f}")
        direct = {v: med[("taskgate", v)] / med[("bare-direct", v)] for v in VERSIONS}
        for v, r in direct.items():
            print(f"ratio_direct_{v}={r:.2f}")
        print(f"ratio_direct={min(direct.values()):.2f}")
    finally:
        for proc in (bare_direct, bare_translated):
            proc.terminate()
        for proc in (bare_direct, bare_translated):
            proc.wait(timeout=30)
        server.stop()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
