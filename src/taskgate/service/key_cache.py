"""Keys this process authenticated a moment ago, so a busy agent's calls skip the key read.

Only where every revocation goes through this process can a cache be exact: `taskgate serve`
with SQLite (its REST API and board are the only ways to revoke a key) switches it on
(`enable`). On Lambda the API function that revokes is another process: there each request
reads the key, and nothing here is used.

Exact: a revoke in this process forgets the key before it answers (`forget`), and an
authentication that read the key before that revoke committed cannot put it back (a generation
count, bumped by every forget, is compared under the lock). The TTL only bounds how long a write
from outside the process (say, a tool editing the database file) could go unseen.

Hand-written rather than a caching library's TTL cache: what makes it exact is the generation
check on insert, which no general-purpose cache offers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from taskgate.domain.principals import Principal

DEFAULT_TTL_S = 30.0
MAX_ENTRIES = 4096  # distinct live keys remembered at once; beyond that, start over


class KeyCache:
    def __init__(self, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[tuple[int, str], tuple[Principal, float]] = {}
        self._generation = 0

    def generation(self) -> int:
        return self._generation

    def get(self, store_id: int, digest: str) -> Principal | None:
        entry = self._entries.get((store_id, digest))
        if entry is None or entry[1] <= self._clock():
            return None
        return entry[0]

    def put(self, store_id: int, digest: str, principal: Principal, generation: int) -> None:
        """Remember a key read when the generation was `generation`, unless a forget came since."""
        with self._lock:
            if generation != self._generation:
                return
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[(store_id, digest)] = (principal, self._clock() + self.ttl_s)

    def forget(self, credential_id: str) -> None:
        with self._lock:
            self._generation += 1
            for k in [k for k, (p, _) in self._entries.items() if p.credential_id == credential_id]:
                del self._entries[k]


_cache: KeyCache | None = None


def enable(ttl_s: float = DEFAULT_TTL_S) -> None:
    global _cache
    _cache = KeyCache(ttl_s)


def current() -> KeyCache | None:
    return _cache
