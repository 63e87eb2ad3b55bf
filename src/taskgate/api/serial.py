"""One REST request at a time per process, and the way a long read steps out of that queue.

Powertools keeps the current event on its router class, so the resolver serves one request at a
time per process (Lambda sends one at a time anyway; `taskgate serve` runs handlers in worker
threads). A read whose work grows with a project (an audit) would hold every other request for
its whole length: it runs its work `unlocked`, and the event is put back before the resolver
builds its response from it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

LOCK = threading.Lock()


@contextmanager
def unlocked() -> Iterator[None]:
    """Inside a route: let other requests through while this one does work that reads only
    its own arguments and the store (never the resolver's current event)."""
    event = BaseRouter.current_event
    LOCK.release()
    try:
        yield
    finally:
        LOCK.acquire()
        BaseRouter.current_event = event
