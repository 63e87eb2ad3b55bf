"""SQLite commits under never_wait(): what the MCP app's inline tool calls rely on.

When another writer holds the write lock (another process on the file, or another thread of this
one mid-commit), a commit that must not wait raises WouldWait at once and writes nothing; the
same commit without never_wait() still waits for the lock (the busy timeout is restored).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgate.store.port import Item as StoreItem
from taskgate.store.port import Put, WouldWait, never_wait
from taskgate.store.sqlite import SQLiteStore
from tests.support.dynamo import sqlite_store


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = sqlite_store(tmp_path)
    try:
        yield store
    finally:
        store.close()


def _put(n: int) -> list[Put]:
    return [Put(StoreItem("P", f"S{n}", {"n": n}))]


def test_a_lock_held_by_another_process_is_would_wait_then_waited_for(sqlite: SQLiteStore) -> None:
    blocker = sqlite3.connect(sqlite.path, isolation_level=None, timeout=5, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        start = time.monotonic()
        with never_wait(), pytest.raises(WouldWait):
            sqlite.commit(_put(1))
        assert time.monotonic() - start < 1  # the busy timeout is 30 s
        assert sqlite.get("P", "S1") is None
        # Without never_wait the same commit waits for the lock, and lands when it is let go.
        timer = threading.Timer(0.3, lambda: blocker.execute("ROLLBACK"))
        timer.start()
        start = time.monotonic()
        sqlite.commit(_put(1))
        assert time.monotonic() - start >= 0.2
        timer.join()
    finally:
        if blocker.in_transaction:
            blocker.execute("ROLLBACK")
        blocker.close()
    assert sqlite.get("P", "S1") is not None
    with never_wait():
        sqlite.commit(_put(2))  # the lock is free: no WouldWait
    assert sqlite.get("P", "S2") is not None


def test_a_commit_of_another_thread_in_flight_is_would_wait(sqlite: SQLiteStore) -> None:
    inside = threading.Event()
    release = threading.Event()
    original = sqlite._commit

    def slow_commit(ops: object, *, wait: bool = True) -> None:
        inside.set()
        assert release.wait(10)
        original(ops, wait=wait)  # type: ignore[arg-type]

    sqlite._commit = slow_commit  # type: ignore[method-assign]
    other = threading.Thread(target=sqlite.commit, args=(_put(1),))
    other.start()
    try:
        assert inside.wait(10)
        with never_wait(), pytest.raises(WouldWait):
            sqlite.commit(_put(2))
    finally:
        release.set()
        other.join(10)
    sqlite._commit = original  # type: ignore[method-assign]
    assert sqlite.get("P", "S1") is not None and sqlite.get("P", "S2") is None
