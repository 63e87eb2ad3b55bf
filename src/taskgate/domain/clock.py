"""An injectable clock, so leases and expiry are testable without sleeping; and injectable
timing (elapsed time and pauses), so a wait a use case makes is testable without waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to (tests, benchmarks)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, **delta: float) -> datetime:
        with self._lock:
            self._now += timedelta(**delta)
            return self._now


class Timing(Protocol):
    """Elapsed time and pauses: the deadlines of retries and polls, which run on how long
    they have taken, never on the time of day."""

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemTiming:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class ManualTiming:
    """Timing whose pauses take no time: each moves it on by what was asked, and is kept in
    `slept` (tests); `then` runs after each pause, to make something happen during a wait."""

    def __init__(self, then: Callable[[int], None] | None = None) -> None:
        self._now = 0.0
        self._lock = threading.Lock()
        self.slept: list[float] = []
        self._then = then

    def monotonic(self) -> float:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self._now += max(0.0, seconds)
            self.slept.append(seconds)
            count = len(self.slept)
        if self._then is not None:
            self._then(count)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


_ZERO = timedelta(0)


def iso(dt: datetime) -> str:
    """Sortable, fixed-width UTC timestamp used in keys and records."""
    if dt.utcoffset() == _ZERO and dt.year >= 1000:
        # The same text, in half the time (several per write): with this timespec isoformat
        # always prints the microseconds, and a zero offset as "+00:00".
        return dt.isoformat(timespec="microseconds")[:-6] + "Z"
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
