"""CPU time per MCP tool call in one process, no HTTP: taskgate's /mcp ASGI app against the bare SDK.

    python bench/mcp_cpu.py [--calls 3000] [--rounds 3] [--profile out.prof] [--smoke]

Drives each ASGI app directly (a scope, the request body, the response collected) on one event
loop, as uvicorn would hand it a request, so the figures hold only what the servers do: no
sockets, no HTTP parsing, no client threads competing for the two cores. `taskgate`: the app
`taskgate serve` mounts at /mcp (mcp/app.py's build_app: key check, SQLite store, gc.freeze as
serve does) running the claim -> heartbeat -> submit mix; `bare-direct`: the bare SDK app with one
`echo` tool (bench/benchkit/bare.py, as bench/mcp_rate.py serves it). Both protocol versions;
interleaved rounds, medians of process CPU time (time.process_time) per call. Prints one line per
server and version, then `cpu_ratio_<version>=` (bare over taskgate) and taskgate's own CPU per
call (taskgate's minus bare's). Over HTTP (bench/mcp_rate.py) both servers also pay uvicorn's HTTP
work and the clients share the cores, which adds the same to both sides: its ratios sit above
these.

--profile PATH writes cProfiles of taskgate's 2026-07-28 calls (PATH) and bare's (PATH.bare): the
event loop's thread only, and the tool bodies run in worker threads (mcp/workers.py); a sampling
profiler sees every thread (`py-spy record --pid` on a `taskgate serve` under load).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import bare, smoke
from benchkit.mcp import LEGACY, MODERN, SHA, envelope
from benchkit.seed import ready_tasks


def request(msg: dict[str, Any], version: str, tool: str, key: str | None) -> tuple[dict[str, Any], bytes]:
    headers = [
        (b"host", b"127.0.0.1:8765"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", version.encode()),
    ]
    if version == MODERN:
        headers += [(b"mcp-method", b"tools/call"), (b"mcp-name", tool.encode())]
    if key:
        headers.append((b"authorization", f"Bearer {key}".encode()))
    raw = json.dumps(msg).encode()
    headers.append((b"content-length", str(len(raw)).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
    }
    return scope, raw


async def call(
    app: Any, version: str, tool: str, arguments: dict[str, Any], key: str | None, rid: int
) -> Any:
    msg = envelope("tools/call", {"name": tool, "arguments": arguments}, version, rid)
    scope, raw = request(msg, version, tool, key)
    sent = False
    out: list[bytes] = []
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            out.append(message.get("body", b""))

    await app(scope, receive, send)
    data = b"".join(out)
    if status != 200:
        raise RuntimeError(f"{tool}: HTTP {status} {data[:300]!r}")
    result = json.loads(data)["result"]
    if result.get("isError"):
        raise RuntimeError(f"{tool}: {result['content'][0]['text'][:300]}")
    return result


class Lifespan:
    """Runs an app's lifespan (the SDK's session manager) around the measured calls."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def __aenter__(self) -> None:
        self.task = asyncio.create_task(
            self.app({"type": "lifespan", "asgi": {"version": "3.0"}}, self.inbox.get, self.outbox.put)
        )
        await self.inbox.put({"type": "lifespan.startup"})
        await self.outbox.get()

    async def __aexit__(self, *exc: object) -> None:
        await self.inbox.put({"type": "lifespan.shutdown"})
        await self.outbox.get()
        await self.task


async def run(calls: int, rounds: int, profile: str | None) -> None:
    from taskgate import runtime
    from taskgate.domain.models import CredentialKind
    from taskgate.domain.principals import acting, human
    from taskgate.local.serve import ServeOptions, configure
    from taskgate.mcp.app import build_app
    from taskgate.service import key_cache, keys, projects
    from taskgate.store.sqlite import SQLiteStore

    tmp = tempfile.mkdtemp()
    configure(ServeOptions(data_dir=Path(tmp)))
    ctx = runtime.context()
    assert isinstance(ctx.store, SQLiteStore)
    key_cache.enable()  # as `taskgate serve` does on SQLite
    ctx.store.checkpoint_in_background()
    admin = acting(human("bench"))
    projects.create(ctx, admin, "bench", repo="/tmp/bench")
    agent_key = keys.create(ctx, admin, kind=CredentialKind.AGENT, name="a0").secret
    per_version = calls * rounds // 3 + 300
    ready_tasks(Path(tmp) / "taskgate.db", "bench", 2 * per_version)
    tg = build_app()
    bare_app = bare.app()
    gc.collect()
    gc.freeze()

    rid = 0

    async def taskgate_calls(version: str, n: int) -> None:
        nonlocal rid
        for _ in range(n // 3):
            rid += 1
            got = await call(tg, version, "claim_task", {"project": "bench"}, agent_key, rid)
            sc = got["structuredContent"]
            tid, token = sc["task_id"], sc["claim_token"]
            await call(tg, version, "heartbeat", {"task_id": tid, "claim_token": token}, agent_key, rid)
            args = {"task_id": tid, "claim_token": token, "commit_sha": SHA, "evidence": "bench"}
            await call(tg, version, "submit_task", args, agent_key, rid)

    async def bare_calls(version: str, n: int) -> None:
        nonlocal rid
        for _ in range(n):
            rid += 1
            await call(bare_app, version, "echo", {"text": "hi"}, None, rid)

    cpu: dict[tuple[str, str], list[float]] = {}
    async with Lifespan(tg), Lifespan(bare_app):
        for version in (LEGACY, MODERN):  # warm-up
            await taskgate_calls(version, 90)
            await bare_calls(version, 90)
        for _ in range(rounds):
            for version in (LEGACY, MODERN):
                for name, fn in (("bare-direct", bare_calls), ("taskgate", taskgate_calls)):
                    n = calls - calls % 3
                    t0 = time.process_time()
                    await fn(version, n)
                    cpu.setdefault((name, version), []).append((time.process_time() - t0) / n)
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            await taskgate_calls(MODERN, min(calls, 900))
            prof.disable()
            prof.dump_stats(profile)
            prof = cProfile.Profile()
            prof.enable()
            await bare_calls(MODERN, min(calls, 900))
            prof.disable()
            prof.dump_stats(profile + ".bare")
    for (name, version), values in sorted(cpu.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rounds_us = " ".join(f"{v * 1e6:.0f}" for v in values)
        print(
            f"server={name} version={version} cpu_us_per_call={statistics.median(values) * 1e6:.0f} rounds=[{rounds_us}]"
        )
    for version in (LEGACY, MODERN):
        ratio = statistics.median(cpu[("bare-direct", version)]) / statistics.median(
            cpu[("taskgate", version)]
        )
        own = statistics.median(cpu[("taskgate", version)]) - statistics.median(cpu[("bare-direct", version)])
        print(f"cpu_ratio_{version}={ratio:.2f} taskgate_own_us_per_call_{version}={own * 1e6:.0f}")
    ctx.store.close()
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000, help="per round, server and version")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="write a cProfile of taskgate's 2026-07-28 calls here")
    args = smoke.parse(parser, calls=90, rounds=1)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(run(args.calls, args.rounds, args.profile))


if __name__ == "__main__":
    main()
