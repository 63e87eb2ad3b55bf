"""Rate of taskgate MCP tool calls over HTTP against a bare MCP server, measured in one run.

    python bench/mcp_rate.py [--seconds 4] [--rounds 3] [--threads 8]

Servers, all on this machine, measured in interleaved rounds:
- `taskgate`: a real `taskgate serve` (its MCP app served directly by uvicorn, one long-lived
  app: key auth, SQLite store, the claim -> heartbeat -> submit mix);
- `bare-direct`: the MCP SDK's stateless, JSON-response Streamable HTTP app with a single
  `echo` tool, served directly by uvicorn: the floor taskgate is held to;
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
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

LEGACY, MODERN = "2025-11-25", "2026-07-28"
SHA = "0123456789abcdef0123456789abcdef01234567"
MAX_RATE = 1500  # taskgate calls/s this bench seeds tasks for (well above this machine's ~900)


# -- the bare server ---------------------------------------------------------------------------


def bare_handler_factory(direct: bool) -> Any:
    from mangum import Mangum
    from mcp.server import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    server = MCPServer("bare", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)

    def build() -> Any:
        return server.streamable_http_app(
            streamable_http_path="/mcp", stateless_http=True, json_response=True, transport_security=security
        )

    if direct:
        return build()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        response: dict[str, Any] = Mangum(build(), lifespan="auto")(event, context)
        return response

    return handler


def run_bare(port: int, direct: bool) -> None:
    import logging

    import uvicorn

    from taskgate.local.gateway import Gateway

    target = bare_handler_factory(direct)
    app = target if direct else Gateway(handlers={"mcp": target})
    for name in ("mangum", "mcp.server.streamable_http_manager", "mcp.server.streamable_http"):
        logging.getLogger(name).setLevel(logging.WARNING)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


# -- clients -----------------------------------------------------------------------------------


def body(method: str, params: dict[str, Any], version: str, rid: int) -> dict[str, Any]:
    p = dict(params)
    if version == MODERN:
        p["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        }
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}


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


class Conn:
    def __init__(self, port: int, key: str | None, version: str) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.key = key
        self.version = version
        self.rid = 0

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.rid += 1
        msg = body("tools/call", {"name": tool, "arguments": arguments}, self.version, self.rid)
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": self.version,
        }
        if self.version == MODERN:
            headers |= {"mcp-method": "tools/call", "mcp-name": tool}
        if self.key:
            headers["authorization"] = f"Bearer {self.key}"
        self.http.request("POST", "/mcp", json.dumps(msg), headers)
        resp = self.http.getresponse()
        raw = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{tool}: HTTP {resp.status} {raw[:300]!r}")
        result: dict[str, Any] = json.loads(raw)["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result['content'][0]['text'][:300]}")
        return result


def measure(
    threads: int, seconds: float, make: Callable[[], Callable[[], int]], pid: int | None = None
) -> tuple[float, float]:
    """Run `threads` workers for `seconds` (after a warm-up); each step returns calls made.
    Calls/s, and the CPU seconds process `pid` spent per call while measuring (0 without one)."""
    counts = [0] * threads
    errors: list[BaseException] = []
    start = threading.Barrier(threads + 1)
    measuring = threading.Event()
    stop = threading.Event()

    def worker(i: int) -> None:
        step = make()
        start.wait()
        try:
            while not stop.is_set():
                n = step()
                if measuring.is_set():
                    counts[i] += n
        except BaseException as exc:  # reported below: a failing call invalidates the figure
            errors.append(exc)
            stop.set()

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    time.sleep(1.0)  # warm-up
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


def wait_up(port: int, path: str = "/mcp") -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", path)
            c.getresponse().read()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on {port} did not start")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed_tasks(db: Path, project: str, n: int) -> None:
    """Ready tasks to claim, written through the services on the server's own SQLite file."""
    from taskgate.domain.models import CriterionInput
    from taskgate.domain.principals import acting, human
    from taskgate.service import tasks
    from taskgate.service.context import Context
    from taskgate.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    ctx = Context(store)
    admin = acting(human("bench"))
    for i in range(n):
        tasks.create(ctx, admin, project, title=f"task {i}", criteria=[CriterionInput(text="works")])
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=4.0, help="per round and server")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--bare-server", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--direct", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server:
        run_bare(args.bare_server, args.direct)
        return

    from taskgate.cli.client import Client

    procs: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tg_port, bare_port, direct_port = free_port(), free_port(), free_port()
            taskgate_bin = str(Path(sys.executable).with_name("taskgate"))
            procs.append(
                subprocess.Popen(
                    [taskgate_bin, "serve", "--data-dir", tmp, "--port", str(tg_port)],
                    stdout=subprocess.DEVNULL,
                )
            )
            me = [sys.executable, __file__, "--bare-server"]
            procs.append(subprocess.Popen([*me, str(bare_port)], stdout=subprocess.DEVNULL))
            procs.append(subprocess.Popen([*me, str(direct_port), "--direct"], stdout=subprocess.DEVNULL))
            for port in (tg_port, bare_port, direct_port):
                wait_up(port)
            admin = Client(f"http://127.0.0.1:{tg_port}", (Path(tmp) / "admin-token").read_text().strip())
            admin.call("POST", "/api/projects", {"name": "bench", "repo": "/tmp/bench"})
            keys = [
                admin.call("POST", "/api/keys", {"kind": "agent", "name": f"a{i}"})["key"]
                for i in range(args.threads)
            ]
            # claim -> heartbeat -> submit uses one task per 3 calls; seed enough for every round
            # of both versions (warm-up included) at up to MAX_RATE calls/s, or a round runs dry
            needed = args.rounds * 2 * (args.seconds + 1.0) * MAX_RATE / 3
            seed_tasks(Path(tmp) / "taskgate.db", "bench", max(6000, int(needed)))

            results: dict[tuple[str, str], list[float]] = {}
            cpu_per_call: dict[tuple[str, str], list[float]] = {}
            for version in (LEGACY, MODERN):
                pool = KeyPool(keys)

                def taskgate_worker(version: str = version, pool: KeyPool = pool) -> Callable[[], int]:
                    conn = Conn(tg_port, pool.take(), version)

                    def step() -> int:
                        claimed = conn.call("claim_task", {"project": "bench"})["structuredContent"]
                        tid, token = claimed["task_id"], claimed["claim_token"]
                        conn.call("heartbeat", {"task_id": tid, "claim_token": token})
                        conn.call(
                            "submit_task",
                            {"task_id": tid, "claim_token": token, "commit_sha": SHA, "evidence": "bench"},
                        )
                        return 3

                    return step

                def echo_worker(port: int, version: str = version) -> Callable[[], Callable[[], int]]:
                    def factory() -> Callable[[], int]:
                        conn = Conn(port, None, version)
                        return lambda: (conn.call("echo", {"text": "hi"}), 1)[1]

                    return factory

                # Interleaved rounds, medians: the machine's noise hits both servers alike.
                makers: list[tuple[str, Callable[[], Callable[[], int]], int]] = [
                    ("bare-direct", echo_worker(direct_port), procs[2].pid),
                    ("bare", echo_worker(bare_port), procs[1].pid),
                    ("taskgate", taskgate_worker, procs[0].pid),
                ]
                for _ in range(args.rounds):
                    for server, make, pid in makers:
                        pool.reset()
                        rate, cpu = measure(args.threads, args.seconds, make, pid)
                        results.setdefault((server, version), []).append(rate)
                        cpu_per_call.setdefault((server, version), []).append(cpu)
            med = {k: statistics.median(v) for k, v in results.items()}
            for (server, version), rate in med.items():
                rounds = " ".join(f"{r:.0f}" for r in results[(server, version)])
                cpu_us = statistics.median(cpu_per_call[(server, version)]) * 1e6
                print(
                    f"server={server} version={version} threads={args.threads} calls_per_s={rate:.1f} "
                    f"rounds=[{rounds}] cpu_us_per_call={cpu_us:.0f}"
                )
            ratios = {v: med[("taskgate", v)] / med[("bare", v)] for v in (LEGACY, MODERN)}
            for v, r in ratios.items():
                print(f"ratio_{v}={r:.2f}")
            print(f"ratio={min(ratios.values()):.2f}")
            for v in (LEGACY, MODERN):
                cpu = {k: statistics.median(cpu_per_call[(k, v)]) for k in ("taskgate", "bare-direct")}
                print(f"cpu_ratio_direct_{v}={cpu['bare-direct'] / cpu['taskgate']:.2f}")
            direct = {v: med[("taskgate", v)] / med[("bare-direct", v)] for v in (LEGACY, MODERN)}
            for v, r in direct.items():
                print(f"ratio_direct_{v}={r:.2f}")
            print(f"ratio_direct={min(direct.values()):.2f}")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
