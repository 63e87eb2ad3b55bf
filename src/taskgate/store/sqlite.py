"""SQLite adapter: one file, WAL, every commit inside BEGIN IMMEDIATE.

Items live in one table with the same key shapes as the DynamoDB table; the indexes are
columns with SQL indexes on them. Each thread gets its own connection; writers queue on
SQLite's lock (busy_timeout), so a commit either applies whole or raises ConflictError.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from taskgate.domain.errors import invalid
from taskgate.store import cursor as cursors
from taskgate.store.port import (
    ConflictError,
    Delete,
    IndexKey,
    Item,
    Op,
    Page,
    Put,
    key_of,
    lapsed,
    validate_ops,
)
from taskgate.store.schema import IndexName

log = logging.getLogger(__name__)

# The WAL file keeps the size of its largest burst unless SQLite is told to cut it back: it is
# truncated to this when a writer starts it over after a complete checkpoint. A burst of commits
# faster than the checkpoints still grows it for as long as the burst lasts.
WAL_SIZE_LIMIT = 64 * 1024 * 1024
CHECKPOINT_EVERY_S = 0.25  # a few hundred WAL pages at a busy server's rate: a short copy each

_INDEX_COLS: dict[IndexName, tuple[str, str]] = {
    IndexName.QUEUE: ("gsi1pk", "gsi1sk"),
    IndexName.LOOKUP: ("gsi3pk", "gsi3sk"),
}
# gsi2pk/gsi2sk held a lease index that no longer exists: the columns stay (migrations are
# never edited), nothing reads them. A task's UPDATE leaves them as they are.


def _migration_1(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE items (
            pk TEXT NOT NULL, sk TEXT NOT NULL, version INTEGER NOT NULL CHECK (version >= 1),
            data TEXT NOT NULL,
            gsi1pk TEXT, gsi1sk TEXT, gsi2pk TEXT, gsi2sk TEXT, gsi3pk TEXT, gsi3sk TEXT,
            PRIMARY KEY (pk, sk)) WITHOUT ROWID"""
    )
    for ipk, isk in (("gsi1pk", "gsi1sk"), ("gsi2pk", "gsi2sk"), ("gsi3pk", "gsi3sk")):
        db.execute(f"CREATE INDEX idx_{ipk} ON items ({ipk}, {isk}, pk, sk) WHERE {ipk} IS NOT NULL")


def _migration_2(db: sqlite3.Connection) -> None:
    # A lease's end (Item.expires), checked by ops with alive_at. Existing rows have none.
    db.execute("ALTER TABLE items ADD COLUMN expires TEXT")


# Versioned schema migrations: index i migrates user_version i -> i + 1. Append, never edit.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migration_1, _migration_2]


class SQLiteStore:
    local_reads = True  # WAL: readers never wait on the writer

    def __init__(
        self, path: str | Path, *, busy_timeout_s: float = 30.0, wal_size_limit: int = WAL_SIZE_LIMIT
    ) -> None:
        self.path = str(path)
        self._busy_timeout_s = busy_timeout_s
        self.wal_size_limit = wal_size_limit
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._checkpointer: _Checkpointer | None = None
        self._migrate()

    def checkpoint_in_background(self, every_s: float = CHECKPOINT_EVERY_S) -> None:
        """Move WAL checkpoints off the committing threads, for a long-lived server.

        By default the commit that takes the WAL past 1,000 pages copies them into the
        database and syncs both files, while holding the write lock: in `taskgate serve` that
        commit waits out the disk while every other writer queues behind it. Here each
        connection of this store leaves that to one thread that checkpoints every `every_s`
        (PASSIVE: it never blocks a reader or a writer, and sqlite3 releases the GIL while it
        works). Durability is unchanged: a committed transaction is in the WAL either way."""
        if self._checkpointer is None:
            self._checkpointer = _Checkpointer(self, every_s)
            with self._all_lock:
                for db in self._all:
                    db.execute("PRAGMA wal_autocheckpoint = 0")

    # -- connections -------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(
                self.path, timeout=self._busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL survives a process crash or kill; only an OS crash can lose the tail.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute(f"PRAGMA journal_size_limit = {int(self.wal_size_limit)}")
            if self._checkpointer is not None:
                db.execute("PRAGMA wal_autocheckpoint = 0")
            self._local.db = db
            with self._all_lock:
                self._all.append(db)
        return db

    def _migrate(self) -> None:
        db = self._conn()
        db.execute("BEGIN IMMEDIATE")
        try:
            current = db.execute("PRAGMA user_version").fetchone()[0]
            if current > len(MIGRATIONS):
                raise RuntimeError(
                    f"database schema {current} is newer than this taskgate ({len(MIGRATIONS)})"
                )
            for number in range(current, len(MIGRATIONS)):
                MIGRATIONS[number](db)
                db.execute(f"PRAGMA user_version = {number + 1}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLite may have rolled back already (a full disk, say)
                db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        with self._all_lock:
            for db in self._all:
                db.close()
            self._all.clear()
        self._local = threading.local()

    # -- reads -------------------------------------------------------------------------------

    @staticmethod
    def _item(row: sqlite3.Row | tuple[Any, ...]) -> Item:
        pk, sk, version, data, g1p, g1s, g3p, g3s, expires = row
        indexes: dict[IndexName, tuple[str, str]] = {}
        for name, (ipk, isk) in zip(_INDEX_COLS, ((g1p, g1s), (g3p, g3s)), strict=True):
            if ipk is not None:
                indexes[name] = (ipk, isk)
        return Item(pk, sk, _decode(data), version, indexes, expires)

    _COLS = "pk, sk, version, data, gsi1pk, gsi1sk, gsi3pk, gsi3sk, expires"

    def get(self, pk: str, sk: str) -> Item | None:
        row = (
            self._conn()
            .execute(f"SELECT {self._COLS} FROM items WHERE pk = ? AND sk = ?", (pk, sk))
            .fetchone()
        )
        return self._item(row) if row else None

    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        found = {}
        db = self._conn()
        for pk, sk in keys:
            row = db.execute(f"SELECT {self._COLS} FROM items WHERE pk = ? AND sk = ?", (pk, sk)).fetchone()
            if row:
                found[(pk, sk)] = self._item(row)
        return [found[k] for k in keys if k in found]

    def query(
        self,
        pk: str,
        *,
        sk_prefix: str = "",
        limit: int = 50,
        cursor: str | None = None,
        descending: bool = False,
    ) -> Page:
        _check_limit(limit)
        where = ["pk = ?", "sk >= ?"]
        args: list[Any] = [pk, sk_prefix]
        end = _prefix_end(sk_prefix)
        if end is not None:
            where.append("sk < ?")
            args.append(end)
        if cursor:
            last = cursors.decode(cursor).get("sk")
            # Same checks as the DynamoDB adapter: a cursor only continues the query it came from.
            if not isinstance(last, str) or not last.startswith(sk_prefix):
                raise invalid("cursor is not one this server returned")
            where.append("sk < ?" if descending else "sk > ?")
            args.append(last)
        order = "DESC" if descending else "ASC"
        rows = (
            self._conn()
            .execute(
                f"SELECT {self._COLS} FROM items WHERE {' AND '.join(where)} ORDER BY sk {order} LIMIT ?",
                (*args, limit + 1),
            )
            .fetchall()
        )
        items = [self._item(r) for r in rows[:limit]]
        more = len(rows) > limit
        return Page(items, cursors.encode({"sk": items[-1].sk}) if more else None)

    def query_index(
        self,
        index: IndexName,
        pk: str,
        *,
        sk_prefix: str = "",
        sk_lt: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        descending: bool = False,
    ) -> Page:
        _check_limit(limit)
        ipk, isk = _INDEX_COLS[index]
        where = [f"{ipk} = ?", f"{isk} >= ?"]
        args: list[Any] = [pk, sk_prefix]
        end = _prefix_end(sk_prefix)
        if end is not None:
            where.append(f"{isk} < ?")
            args.append(end)
        if sk_lt is not None:
            where.append(f"{isk} < ?")
            args.append(sk_lt)
        if cursor:
            pos = cursors.decode(cursor)
            last = (pos.get("isk"), pos.get("pk"), pos.get("sk"))
            if not all(isinstance(v, str) for v in last) or not str(last[0]).startswith(sk_prefix):
                raise invalid("cursor is not one this server returned")
            if sk_lt is not None and str(last[0]) >= sk_lt:
                raise invalid("cursor is not one this server returned")
            cmp = "<" if descending else ">"
            where.append(f"({isk}, pk, sk) {cmp} (?, ?, ?)")
            args.extend(last)
        order = "DESC" if descending else "ASC"
        rows = (
            self._conn()
            .execute(
                f"SELECT {self._COLS} FROM items WHERE {' AND '.join(where)} "
                f"ORDER BY {isk} {order}, pk {order}, sk {order} LIMIT ?",
                (*args, limit + 1),
            )
            .fetchall()
        )
        items = [self._item(r) for r in rows[:limit]]
        more = len(rows) > limit
        next_cursor = None
        if more:
            last_item = items[-1]
            next_cursor = cursors.encode(
                {"isk": last_item.indexes[index][1], "pk": last_item.pk, "sk": last_item.sk}
            )
        return Page(items, next_cursor)

    def query_index_keys(self, index: IndexName, pk: str, *, limit: int = 50) -> list[IndexKey]:
        _check_limit(limit)
        ipk, isk = _INDEX_COLS[index]
        # Served by the index alone (it holds pk and sk): no row is read or decoded.
        rows = (
            self._conn()
            .execute(
                f"SELECT pk, sk, {isk} FROM items WHERE {ipk} = ? ORDER BY {isk}, pk, sk LIMIT ?", (pk, limit)
            )
            .fetchall()
        )
        return list(map(IndexKey._make, rows))

    # -- the one write primitive -------------------------------------------------------------

    def commit(self, ops: Sequence[Op]) -> None:
        validate_ops(ops)
        # Writers of this process queue on a lock: SQLite's own busy handler waits by sleeping
        # (1, 2, 5, 10 ms ...), which under a few concurrent writers costs more than the writes.
        # Other processes on the same file still meet the busy timeout.
        with self._write_lock:
            self._commit(ops)

    def _commit(self, ops: Sequence[Op]) -> None:
        db = self._conn()
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            # Another process held the file's write lock past the busy timeout: nothing was written.
            raise ConflictError([key_of(op) for op in ops], reason=f"database busy ({exc})") from exc
        try:
            # Each op is one statement that checks its condition and writes in one step (an
            # UPDATE or DELETE matching the expected version, an INSERT of a new key): no read
            # of the versions first. The first op whose condition fails ends the commit.
            for i, op in enumerate(ops):
                if not _apply(db, op):
                    failed = [key_of(op)] + [key_of(later) for later in ops[i + 1 :] if not _holds(db, later)]
                    raise ConflictError(failed)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLite may have rolled back already (a full disk, say)
                db.execute("ROLLBACK")
            raise


# An op's lease condition (port.lapsed, in SQL): no alive_at, or no lease, or one that ends later.
_ALIVE = "(?1 IS NULL OR expires IS NULL OR expires > ?1)"
_INSERT = (
    "INSERT INTO items (pk, sk, version, data, gsi1pk, gsi1sk, gsi3pk, gsi3sk, expires) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE = (
    "UPDATE items SET version = ?2, data = ?3, gsi1pk = ?4, gsi1sk = ?5, gsi3pk = ?6, gsi3sk = ?7, "
    f"expires = ?8 WHERE pk = ?9 AND sk = ?10 AND version = ?11 AND {_ALIVE}"
)
_DELETE = f"DELETE FROM items WHERE pk = ?2 AND sk = ?3 AND version = ?4 AND {_ALIVE}"
_CHECK = f"SELECT 1 FROM items WHERE pk = ?2 AND sk = ?3 AND version = ?4 AND {_ALIVE}"


def _apply(db: sqlite3.Connection, op: Op) -> bool:
    """Write one op if its condition holds; whether it held."""
    if isinstance(op, Put):
        it = op.item
        if op.expected_version is None:
            try:
                db.execute(_INSERT, (it.pk, it.sk, it.version, it.body, *_index_cols(it), it.expires))
            except sqlite3.IntegrityError as exc:
                if exc.sqlite_errorcode == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
                    return False  # the key exists: a create that lost
                raise
            return True
        args = (
            op.alive_at,
            it.version,
            it.body,
            *_index_cols(it),
            it.expires,
            it.pk,
            it.sk,
            op.expected_version,
        )
        return db.execute(_UPDATE, args).rowcount == 1
    if isinstance(op, Delete):
        return db.execute(_DELETE, (op.alive_at, op.pk, op.sk, op.expected_version)).rowcount == 1
    return db.execute(_CHECK, (op.alive_at, op.pk, op.sk, op.expected_version)).fetchone() is not None


def _holds(db: sqlite3.Connection, op: Op) -> bool:
    """Whether an op's condition holds, writing nothing (to name every failing op of a commit)."""
    row = db.execute("SELECT version, expires FROM items WHERE pk = ? AND sk = ?", key_of(op)).fetchone()
    if row is None:
        return isinstance(op, Put) and op.expected_version is None
    return row[0] == op.expected_version and not lapsed(row[1], op.alive_at)


class _Checkpointer:
    """The thread that checkpoints a store's WAL (SQLiteStore.checkpoint_in_background), on a
    connection of its own (close() must not pull one of the store's away mid-checkpoint). It
    holds the store weakly: a store dropped without close() ends it too."""

    def __init__(self, store: SQLiteStore, every_s: float) -> None:
        # Opened here, so a file that cannot be opened fails the caller, not a thread nobody sees.
        self._db = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA journal_size_limit = {int(store.wal_size_limit)}")
        self._store = weakref.ref(store)
        self._every_s = every_s
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="taskgate-wal-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stopping.wait(self._every_s) and self._store() is not None:
                try:
                    self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except Exception as exc:  # nothing is lost: the WAL keeps every commit until the next try
                    log.warning("WAL checkpoint failed (the next one tries again): %s", exc)
        finally:
            self._db.close()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()


def _decode(body: str) -> Any:
    """A stored JSON body: pydantic_core decodes it in one native call, twice as fast as json.loads.
    It refuses an escaped lone surrogate, which json.loads decodes into a str (only a database
    from before such text was refused holds one): that body goes to json.loads, so readers see
    it exactly as before (and refuse to serialise it)."""
    try:
        return from_json(body)
    except ValueError:
        return json.loads(body)


def _index_cols(it: Item) -> list[str | None]:
    cols: list[str | None] = []
    for name in _INDEX_COLS:
        cols.extend(it.indexes.get(name, (None, None)))
    return cols


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= 1000:
        raise invalid("limit must be between 1 and 1000")


def _prefix_end(prefix: str) -> str | None:
    """The smallest string greater than every string starting with prefix; None when there is
    none (the prefix is empty or all U+10FFFF). SQLite compares TEXT as UTF-8 bytes, which is
    code point order, so this is the last character incremented (skipping the surrogates,
    which no stored string holds), dropping trailing U+10FFFF first."""
    chars = list(prefix)
    while chars:
        code = ord(chars.pop()) + 1
        if code <= 0x10FFFF:
            if 0xD800 <= code <= 0xDFFF:
                code = 0xE000
            return "".join(chars) + chr(code)
    return None
