"""Where the MCP front door and the tools do their blocking work: on the event loop when it is
cheap and cannot wait, else in worker threads, a few at a time.

Key lookups and tool bodies block (SQLite, DynamoDB over HTTP). In a long-lived app
(`taskgate serve`) a call that can wait long must not run on the event loop, or it stalls every
other request: those run in worker threads. More threads than this only queue on the GIL and the
SQLite write lock; fewer let one slow call hold up the others. The limiter is per event loop (an
anyio RunVar, as anyio's own default limiter is), so the Lambda handler's loops and `taskgate
serve`'s each get their own.

A bounded tool (registry.py: a few point reads, at most one commit) on a local store (SQLite in
WAL: a read never waits; a commit does not fsync, and waits on the write lock only for another
commit of this process) runs on the event loop instead. A hop to a worker thread and back buys no
parallelism for Python code under the GIL, and it costs more than such a tool's own work: each
side of the hop releases the GIL for a moment and then waits for it behind the other thread
(bench/mcp_rate.py: the claim -> heartbeat -> submit loop does ~55% more calls/s inline).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar

from taskgate import runtime
from taskgate.store.port import WouldWait, never_wait

P = ParamSpec("P")
T = TypeVar("T")

_limiter: RunVar[CapacityLimiter] = RunVar("taskgate_mcp_limiter")


def limiter() -> CapacityLimiter:
    try:
        return _limiter.get()
    except LookupError:
        made = CapacityLimiter(runtime.settings().workers)
        _limiter.set(made)
        return made


async def run(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a blocking call in a worker thread (context variables, e.g. the caller, carried over)."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=limiter())


def inline(bounded: bool) -> bool:
    """Whether a call runs on the event loop: a bounded one, where the store's reads never wait."""
    return bounded and runtime.context().store.local_reads


async def call(fn: Callable[P, T], bounded: bool, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a tool body: inline when `inline(bounded)`, else in a worker thread.

    Inline, a commit never waits for the write lock (store.never_wait): when another writer
    holds it (another process on the file, or a REST call of this one) the body stops before
    writing and runs again, whole, in a worker thread, where it may wait. Nothing it committed
    before is lost or done twice: each commit is conditional on what the body read, and the
    second run reads afresh (as a client's retry would)."""
    if inline(bounded):
        try:
            with never_wait():
                return fn(*args, **kwargs)
        except WouldWait:
            pass
    return await run(fn, *args, **kwargs)
