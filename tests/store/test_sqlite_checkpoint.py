"""SQLite WAL checkpoints in a background thread (`taskgate serve`): commits never copy the WAL
into the database themselves, the thread does, and closing the store stops it."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from taskgate.store.port import Item, Put
from taskgate.store.sqlite import SQLiteStore

PAGES = 1500  # more than SQLite's default autocheckpoint (1,000 pages)
BODY = "x" * 40_000  # ~10 pages each


def _write(store: SQLiteStore, start: int = 0) -> None:
    for n in range(start, start + PAGES // 10):
        store.commit([Put(Item("P", f"S{n:05d}", {"body": BODY}))])


def _db_bytes(store: SQLiteStore) -> int:
    return os.path.getsize(store.path)


def _checkpointers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "taskgate-wal-checkpoint"]


def test_by_default_a_commit_checkpoints_the_wal_itself(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    try:
        _write(store)
        assert _db_bytes(store) > 2_000_000  # a commit copied the WAL (4 MB) into the database file
    finally:
        store.close()


def test_in_the_background_no_commit_checkpoints_and_the_thread_does(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    store.get("P", "none")  # this thread's connection exists before: it is switched too
    store.checkpoint_in_background(every_s=3600)  # no checkpoint while the writes run
    try:
        _write(store)
        other = threading.Thread(target=_write, args=(store, 10_000))  # a connection made after
        other.start()
        other.join()
        assert _db_bytes(store) < 1_000_000  # ~12 MB committed, all of it still in the WAL
        assert len(_checkpointers()) == 1
    finally:
        store.close()
    assert _checkpointers() == []
    reopened = SQLiteStore(tmp_path / "t.db")
    try:
        item = reopened.get("P", f"S{10_000 + PAGES // 10 - 1:05d}")
        assert item is not None and item.data == {"body": BODY}
    finally:
        reopened.close()


def test_the_thread_checkpoints_while_the_store_is_open(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    store.checkpoint_in_background(every_s=0.05)
    try:
        _write(store)
        deadline = time.monotonic() + 10
        while _db_bytes(store) < 4_000_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _db_bytes(store) > 4_000_000
    finally:
        store.close()
    assert _checkpointers() == []


def test_after_a_burst_the_wal_file_is_cut_back_to_its_limit(tmp_path: Path) -> None:
    """Without journal_size_limit the WAL file keeps its largest burst's size for good (SQLite
    reuses it from the start but never shrinks it): a day's burst is disk held forever."""
    limit = 1024 * 1024
    store = SQLiteStore(tmp_path / "t.db", wal_size_limit=limit)
    store.checkpoint_in_background(every_s=3600)  # the burst outruns the checkpoints
    wal = Path(store.path + "-wal")
    try:
        _write(store)
        assert wal.stat().st_size > 4 * limit  # ~6 MB of commits in the WAL
        with closing(sqlite3.connect(store.path)) as other:  # a checkpoint that catches up with the writes
            assert other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0] == 0
        store.commit([Put(Item("P", "after", {"body": "y"}))])  # starts the WAL over
        assert wal.stat().st_size <= limit
        assert store.get("P", "after") is not None and store.get("P", "S00000") is not None
    finally:
        store.close()


def test_a_store_dropped_without_close_ends_its_thread(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    store.checkpoint_in_background(every_s=0.02)
    assert len(_checkpointers()) == 1
    del store
    gc.collect()
    deadline = time.monotonic() + 5
    while _checkpointers() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _checkpointers() == []


def test_a_file_that_cannot_be_opened_fails_the_caller(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    store = SQLiteStore(tmp_path / "db" / "t.db")
    try:
        (tmp_path / "db").rename(tmp_path / "moved")
        with pytest.raises(sqlite3.OperationalError):
            store.checkpoint_in_background()
        assert _checkpointers() == []
        store.commit([Put(Item("P", "S", {"n": 1}))])  # commits still checkpoint themselves
        assert store.get("P", "S") is not None
    finally:
        store.close()
