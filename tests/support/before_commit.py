"""A store wrapper for races made deterministic: another writer lands between a use case's read
and its conditional write, at the moment a test chooses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from taskgate.store.port import Item, Op, Page, Store
from taskgate.store.schema import IndexName


class BeforeCommit:
    """A Store that runs `hook(ops)` before each commit: another writer landing between a
    use case's read and its conditional write, deterministically."""

    def __init__(self, inner: Store, hook: Callable[[Sequence[Op]], None]) -> None:
        self.inner = inner
        self.hook = hook

    def commit(self, ops: Sequence[Op]) -> None:
        self.hook(ops)
        self.inner.commit(ops)

    def get(self, pk: str, sk: str) -> Item | None:
        return self.inner.get(pk, sk)

    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        return self.inner.get_many(keys)

    def query(self, pk: str, **kw: Any) -> Page:
        return self.inner.query(pk, **kw)

    def query_index(self, index: IndexName, pk: str, **kw: Any) -> Page:
        return self.inner.query_index(index, pk, **kw)

    def close(self) -> None:
        self.inner.close()
