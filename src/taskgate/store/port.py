"""The Store port: reads, index queries with opaque cursors, and one atomic conditional commit.

Adapters store items; they never decide a rule. An item is a key (pk, sk), a version, an
opaque JSON body, optional index keys, and an optional expiry (a lease's end). Every write is
guarded by a condition (the expected version, or must-not-exist; and optionally "its lease has
not lapsed at this time"), and a commit of several writes applies all of them or none.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from pydantic_core import PydanticSerializationError, to_json

from taskgate.store.schema import IndexName


@dataclass(frozen=True)
class Item:
    pk: str
    sk: str
    data: dict[str, Any]
    version: int = 1
    # index name -> (partition value, sort value); an index absent here does not hold the item
    indexes: dict[IndexName, tuple[str, str]] = field(default_factory=dict)
    # When the item's lease ends: a fixed-width UTC time (domain.clock.iso), which therefore
    # sorts as text. None: the item has no lease and never lapses. Ops with `alive_at` check it.
    expires: str | None = None

    # Computed once per item, kept in its __dict__ as functools.cached_property would: but that
    # takes a lock on every first access (Python 3.11), and a commit reads these of every item.

    @property
    def encoded(self) -> bytes:
        """The JSON body as stored, in UTF-8: encoded once, for the checks and the write.

        pydantic_core encodes in one native call, faster than json.dumps, with the same text
        for what bodies hold (NaN and Infinity too, as json.dumps writes them; an exponent may
        read 1e-5 for 1e-05, the same number). Text that has no UTF-8 form (a lone surrogate,
        which JSON can smuggle in as an escape) raises Unencodable: no reader could ever
        serialise it."""
        done: bytes | None = self.__dict__.get("_encoded")
        if done is None:
            done = self.__dict__["_encoded"] = self._encode()
        return done

    def _encode(self) -> bytes:
        try:
            return to_json(self.data, inf_nan_mode="constants")
        except PydanticSerializationError:
            try:  # the reason, as the codec words it
                json.dumps(self.data, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError as exc:
                raise Unencodable(
                    f"{self.pk}/{self.sk}: text that is not valid Unicode ({exc.reason})"
                ) from exc
            raise

    @property
    def body(self) -> str:
        """The JSON body as stored (Unencodable as `encoded`)."""
        done: str | None = self.__dict__.get("_body")
        if done is None:
            done = self.__dict__["_body"] = self.encoded.decode()
        return done

    @property
    def size(self) -> int:
        """The body's size in UTF-8 bytes (Unencodable as `encoded`)."""
        return len(self.encoded)


# Every op may also carry `alive_at` (a time as Item.expires holds it): the op's condition then
# also requires the stored item's lease to run past that time (its expires is None, or later
# than alive_at; equal is already lapsed). A lease is enforced inside the write this way, not
# only by whoever read the item first (docs/architecture.md, "The store").


@dataclass(frozen=True)
class Put:
    """Write `item`. expected_version None: the key must not exist; else the stored version must match.

    The stored version becomes item.version, which must be expected_version + 1 (or 1 for new).
    """

    item: Item
    expected_version: int | None = None
    alive_at: str | None = None


@dataclass(frozen=True)
class Delete:
    pk: str
    sk: str
    expected_version: int
    alive_at: str | None = None


@dataclass(frozen=True)
class Check:
    """Write nothing, but fail the commit unless the item is at this version (and alive_at)."""

    pk: str
    sk: str
    expected_version: int
    alive_at: str | None = None


Op = Put | Delete | Check


def key_of(op: Op) -> tuple[str, str]:
    if isinstance(op, Put):
        return (op.item.pk, op.item.sk)
    return (op.pk, op.sk)


MAX_OPS_PER_COMMIT = 100  # DynamoDB's transaction limit; both adapters enforce it alike
# DynamoDB caps an item at 400 KB including attribute names and index keys; leave headroom.
MAX_ITEM_BYTES = 380_000


class TooLarge(ValueError):
    """An item over the size both adapters accept (DynamoDB's 400 KB item limit)."""


class Unencodable(ValueError):
    """An item holding text with no UTF-8 form (a lone UTF-16 surrogate). Refused by both
    adapters before anything is written: stored, it would break every reader that serialises it."""


def lapsed(expires: str | None, alive_at: str | None) -> bool:
    """Whether an `alive_at` condition fails on an item with this expiry (both adapters agree)."""
    return alive_at is not None and expires is not None and expires <= alive_at


def validate_ops(ops: Sequence[Op]) -> None:
    """Rules both adapters enforce identically, so a commit valid on one is valid on the other."""
    if not ops:
        raise ValueError("a commit needs at least one op")
    if len(ops) > MAX_OPS_PER_COMMIT:
        raise ValueError(f"a commit holds at most {MAX_OPS_PER_COMMIT} ops")
    keys = [key_of(op) for op in ops]
    if len(set(keys)) != len(keys):
        raise ValueError("a commit may touch each item once")
    if any(not pk or not sk for pk, sk in keys):
        raise ValueError("keys must not be empty (DynamoDB refuses empty key strings)")
    for op in ops:
        if not isinstance(op, Put | Delete | Check):
            raise TypeError(f"unknown op {op!r}")
        if isinstance(op, Put):
            want = 1 if op.expected_version is None else op.expected_version + 1
            if op.item.version != want:
                raise ValueError(f"{op.item.pk}/{op.item.sk}: version must be {want}")
            if any(not ipk or not isk for ipk, isk in op.item.indexes.values()):
                raise ValueError(f"{op.item.pk}/{op.item.sk}: index keys must not be empty")
            if op.expected_version is None and op.alive_at is not None:
                raise ValueError(f"{op.item.pk}/{op.item.sk}: a new item has no lease to check")
            if op.item.expires is not None and not op.item.expires:
                raise ValueError(f"{op.item.pk}/{op.item.sk}: expires must not be empty")
            if op.item.size > MAX_ITEM_BYTES:
                raise TooLarge(
                    f"{op.item.pk}/{op.item.sk}: body of {op.item.size} bytes is over {MAX_ITEM_BYTES}"
                )


class ConflictError(Exception):
    """A condition failed; nothing of the commit was written. `failed` names the keys whose
    condition did not hold (may be empty when the backend cannot say, e.g. a transaction
    conflict with another in-flight transaction)."""

    def __init__(self, failed: Sequence[tuple[str, str]], reason: str = "condition failed") -> None:
        self.failed = list(failed)
        self.reason = reason
        names = ", ".join(f"{pk}/{sk}" for pk, sk in self.failed) or "unknown item"
        super().__init__(f"{reason}: {names}")


class IndexKey(NamedTuple):
    """Where an item sits in an index: its table key and its index sort key (no body). A named
    tuple: a next-task list reads 64 of these per call, and a tuple is cheaper to build than a
    frozen dataclass."""

    pk: str
    sk: str
    index_sk: str


@dataclass(frozen=True)
class Page:
    items: list[Item]
    cursor: str | None  # opaque; None when there is nothing more


class Store(Protocol):
    # True when a read never waits on the network or on a writer (SQLite in WAL mode): the MCP
    # front door may then look a key up on the event loop instead of in a worker thread.
    local_reads: bool

    def get(self, pk: str, sk: str) -> Item | None: ...

    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        """Items that exist among `keys`, in the order given."""
        ...

    def query(
        self,
        pk: str,
        *,
        sk_prefix: str = "",
        limit: int = 50,
        cursor: str | None = None,
        descending: bool = False,
    ) -> Page:
        """Items of one partition whose sk starts with sk_prefix, ordered by sk."""
        ...

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
        """Items whose index partition is pk, ordered by the index sort key (ties by pk, sk).

        Index reads may be stale on some backends; conditions on commit are the truth."""
        ...

    def query_index_keys(self, index: IndexName, pk: str, *, limit: int = 50) -> list[IndexKey]:
        """The first `limit` entries of an index partition, in index order, keys only: to rank
        many entries cheaply and then read the few chosen (get / get_many). May be stale, as
        query_index may."""
        ...

    def commit(self, ops: Sequence[Op]) -> None:
        """Apply every op or none. Raises ConflictError naming the ops whose condition failed."""
        ...

    def close(self) -> None: ...
