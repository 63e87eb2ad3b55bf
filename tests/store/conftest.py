"""`store`: every store test runs against both adapters (SQLite on a file, DynamoDB on moto).

`racing_store`: the same, for tests whose threads race; the DynamoDB one serializes moto's
requests (moto is not atomic under concurrency; see tests.support.dynamo.SerializedClient).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgate.store.port import Store
from tests.support.dynamo import dynamodb_store, sqlite_store

ADAPTERS = ["sqlite", "dynamodb"]


def _make(kind: str, tmp_path: Path, *, serialized: bool) -> Iterator[Store]:
    if kind == "sqlite":
        store = sqlite_store(tmp_path)
        try:
            yield store
        finally:
            store.close()
    else:
        with dynamodb_store(serialized=serialized) as dynamo:
            yield dynamo


@pytest.fixture(params=ADAPTERS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    yield from _make(request.param, tmp_path, serialized=False)


@pytest.fixture(params=ADAPTERS)
def racing_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    yield from _make(request.param, tmp_path, serialized=True)
