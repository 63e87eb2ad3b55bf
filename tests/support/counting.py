"""A store that counts the requests a service makes through it (each call is one request on
DynamoDB), for tests that bound how many a use case needs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from taskgate.store.port import Op, Store


class CountingStore:
    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted

    def commit(self, ops: Sequence[Op]) -> None:
        self.calls["commit"] += 1
        self.inner.commit(ops)
