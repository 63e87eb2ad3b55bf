"""Where the MCP front door and the tools do their blocking work: in worker threads, a few at a
time.

Key lookups and tool bodies block (SQLite, DynamoDB over HTTP). In a long-lived app
(`taskgate serve`) a call that can wait long must not run on the event loop, or it stalls every
other request: those run in worker threads. More threads than this only queue on the GIL and the
SQLite write lock; fewer let one slow call hold up the others. The limiter is per event loop (an
anyio RunVar, as anyio's own default limiter is), so the Lambda handler's loops and `taskgate
serve`'s each get their own.

Every tool body runs in a worker thread, the cheap ones too: a tool that looks cheap can still
wait (a submit asks git whether the commit is there; a commit waits for SQLite's write lock while
another process writes), and a wait on the event loop stalls every agent's call at once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar

from taskgate import runtime

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
