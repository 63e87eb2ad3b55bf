"""How a verifier that asked for work and found none learns that some arrived.

A verifier's work request may wait (`GET /api/verifier/work?wait=N`). Where every write goes
through one process (`taskgate serve`), a commit that leaves a task waiting for a verifier wakes
the waiting requests at once (`Signal`). Where writes come from many processes (Lambda, which
serves one request per container), nothing can wake a request: it reads the store again every
`Polling.step_s`, a bounded number of times, and stays under API Gateway's 29 s cut.

Under `taskgate serve` the REST handler answers one request at a time (api/handler.py), so
the wait cannot happen inside it: there the handler answers at once and the local gateway waits
between two answers (`Signal.wait_async`, on the event loop, holding no thread).

A waiter reads `generation()` before it looks at the store and passes it to `wait()`: a commit
that lands between the look and the wait has already moved the generation, so the wait returns
at once instead of missing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Protocol

from taskgate.domain.clock import SystemTiming, Timing
from taskgate.store.port import Op, Put

# The longest wait a work request may ask for: under API Gateway's 29 s integration timeout,
# with room for the reads after the last wake.
MAX_WAIT_S = 20.0
POLL_STEP_S = 2.0

_WAITING = "needs_verification"


class Wakeups(Protocol):
    # Whoever called the handler waits (the local gateway): the handler answers at once.
    @property
    def host_waits(self) -> bool: ...

    def generation(self) -> int: ...

    def notify(self) -> None: ...

    def wait(self, seen: int, timeout_s: float) -> None:
        """Return when the generation moved past `seen`, or after `timeout_s` (sooner when only
        polling); the caller looks at the store again either way."""
        ...


class Polling:
    """No one to wake us: wait one step, then the caller reads the store again."""

    host_waits = False

    def __init__(self, step_s: float = POLL_STEP_S, timing: Timing | None = None) -> None:
        self.step_s = step_s
        self.timing = timing or SystemTiming()

    def generation(self) -> int:
        return 0

    def notify(self) -> None:
        return None

    def wait(self, seen: int, timeout_s: float) -> None:
        self.timing.sleep(max(0.0, min(self.step_s, timeout_s)))


class Signal:
    """Woken by the commits of this process, which may run on any thread or on the event loop.
    `close()` ends every wait, now and later: a stopping server must not keep requests open
    until they time out."""

    host_waits = True

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._generation = 0
        self._closed = False
        self._async: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    @property
    def closed(self) -> bool:
        return self._closed

    def generation(self) -> int:
        return self._generation

    def notify(self) -> None:
        with self._cond:
            self._generation += 1
            self._cond.notify_all()
            woken = list(self._async)
        for loop, event in woken:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits there
                loop.call_soon_threadsafe(event.set)

    async def wait_async(self, seen: int, timeout_s: float) -> None:
        """`wait` on the event loop, without a thread."""
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._cond:
            if self._generation != seen or self._closed:
                return
            self._async.add(entry)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), max(0.0, timeout_s))
        finally:
            with self._cond:
                self._async.discard(entry)

    def wait(self, seen: int, timeout_s: float) -> None:
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            while self._generation == seen and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def close(self) -> None:
        with self._cond:
            self._closed = True
        self.notify()


def brings_work(ops: Sequence[Op]) -> bool:
    """Whether a commit may give a verifier something to start: a task now waiting for
    verification with no run on it (a submission, a reverify, a run that ended as an error), or
    a project changed (verification switched on, its config saved), a batch waiting for a run,
    a landing queue with entries and no step in progress."""
    for op in ops:
        if not isinstance(op, Put):
            continue
        sk, data = op.item.sk, op.item.data
        if sk == "PROJECT":
            return True
        if sk.startswith("TASK#") and data.get("status") == _WAITING and not data.get("live_run"):
            return True
        if sk.startswith("BATCH#") and data.get("status") == "queued":  # a batch to verify together
            return True
        if sk == "LANDING" and data.get("entries") and not data.get("live"):  # work to land
            return True
    return False
