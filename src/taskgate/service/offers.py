"""Which task each caller was just shown first by get_next_tasks, for a few seconds.

An agent that lists the next tasks claims the first soon after. Until it has, another caller's
list puts that task at the back of its band (domain/spread.py), so two agents looking at once
do not both go for it. Advice only, and per process: the claim's conditional commit is what
keeps a task to one agent, on every path; a Lambda container only knows its own callers'
offers. Hand-written: a dict with deadlines, under a lock; no library holds this rule.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

TaskKey = tuple[str, str]  # the task's table key (pk, sk)

# Long enough for an agent to read its list and claim (an LLM's turn: seconds), short enough
# that an offer nobody took does not hold a task back for long.
OFFER_TTL_S = 10.0
MAX_OFFERS = 10_000  # beyond that, lapsed offers are dropped; then all, if still full


class Offers:
    def __init__(self, ttl_s: float = OFFER_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._held: dict[tuple[int, TaskKey], tuple[str, float]] = {}  # (store, task) -> (caller, until)

    def to_others(self, store_id: int, caller: str, tasks: Iterable[TaskKey]) -> set[TaskKey]:
        """Of `tasks`, those shown first to another caller whose offer still runs."""
        now = self._clock()
        out = set()
        for task in tasks:
            held = self._held.get((store_id, task))
            if held is not None and held[0] != caller and held[1] > now:
                out.add(task)
        return out

    def offer(self, store_id: int, caller: str, task: TaskKey) -> None:
        """Note that `caller` was shown `task` first, unless another caller's offer runs."""
        now = self._clock()
        with self._lock:
            held = self._held.get((store_id, task))
            if held is not None and held[0] != caller and held[1] > now:
                return
            if len(self._held) >= MAX_OFFERS:
                for k in [k for k, (_, until) in self._held.items() if until <= now]:
                    del self._held[k]
                if len(self._held) >= MAX_OFFERS:
                    self._held.clear()
            self._held[(store_id, task)] = (caller, now + self.ttl_s)


OFFERS = Offers()
