"""SQLite commits and the file's write lock: a commit waits for another process's write to end
(the busy timeout) instead of failing, and lands once the lock is let go."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgate.store.port import Item as StoreItem
from taskgate.store.port import Put
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


def test_a_lock_held_by_another_connection_is_waited_for(sqlite: SQLiteStore) -> None:
    blocker = sqlite3.connect(sqlite.path, isolation_level=None, timeout=5, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    try:
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
