"""The Store port: reads, index queries with opaque cursors, and one atomic conditional commit.

Adapters store items; they never decide a rule. An item is a key (pk, sk), a version, an
opaque JSON body, and optional index keys. Every write is guarded by a condition, and a
commit of several writes applies all of them or none.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from taskgate.store.schema import IndexName


@dataclass(frozen=True)
class Item:
    pk: str
    sk: str
    data: dict[str, Any]
    version: int = 1
    # index name -> (partition value, sort value); an index absent here does not hold the item
    indexes: dict[IndexName, tuple[str, str]] = field(default_factory=dict)

    @cached_property
    def body(self) -> str:
        """The JSON body as stored: encoded once, for the size check and the write."""
        return json.dumps(self.data, separators=(",", ":"))


@dataclass(frozen=True)
class Put:
    """Write `item`. expected_version None: the key must not exist; else the stored version must match.

    The stored version becomes item.version, which must be expected_version + 1 (or 1 for new).
    """

    item: Item
    expected_version: int | None = None


@dataclass(frozen=True)
class Delete:
    pk: str
    sk: str
    expected_version: int


@dataclass(frozen=True)
class Check:
    """Write nothing, but fail the commit unless the item is at this version."""

    pk: str
    sk: str
    expected_version: int


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
        if isinstance(op, Put):
            want = 1 if op.expected_version is None else op.expected_version + 1
            if op.item.version != want:
                raise ValueError(f"{op.item.pk}/{op.item.sk}: version must be {want}")
            if any(not ipk or not isk for ipk, isk in op.item.indexes.values()):
                raise ValueError(f"{op.item.pk}/{op.item.sk}: index keys must not be empty")
            size = len(op.item.body.encode())
            if size > MAX_ITEM_BYTES:
                raise TooLarge(f"{op.item.pk}/{op.item.sk}: body of {size} bytes is over {MAX_ITEM_BYTES}")
        elif not isinstance(op, Delete | Check):
            raise TypeError(f"unknown op {op!r}")


class ConflictError(Exception):
    """A condition failed; nothing of the commit was written. `failed` names the keys whose
    condition did not hold (may be empty when the backend cannot say, e.g. a transaction
    conflict with another in-flight transaction)."""

    def __init__(self, failed: Sequence[tuple[str, str]], reason: str = "condition failed") -> None:
        self.failed = list(failed)
        self.reason = reason
        names = ", ".join(f"{pk}/{sk}" for pk, sk in self.failed) or "unknown item"
        super().__init__(f"{reason}: {names}")


@dataclass(frozen=True)
class Page:
    items: list[Item]
    cursor: str | None  # opaque; None when there is nothing more


class Store(Protocol):
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

    def commit(self, ops: Sequence[Op]) -> None:
        """Apply every op or none. Raises ConflictError naming the ops whose condition failed."""
        ...

    def close(self) -> None: ...
