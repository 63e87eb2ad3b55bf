from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.dynamo import dynamodb_store, sqlite_store
from tests.support.world import World


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """Services over SQLite on a real file: the fast default for rule tests."""
    store = sqlite_store(tmp_path)
    try:
        yield World(store)
    finally:
        store.close()


@pytest.fixture(params=["sqlite", "dynamodb"])
def any_world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """The same services over each adapter (DynamoDB through moto)."""
    if request.param == "sqlite":
        store = sqlite_store(tmp_path)
        try:
            yield World(store)
        finally:
            store.close()
    else:
        with dynamodb_store() as dstore:
            yield World(dstore)


@pytest.fixture(params=["sqlite", "dynamodb"])
def race_world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """Services over each adapter for tests where threads race.

    SQLite races run unserialized. moto is not atomic under concurrent requests
    (10-33% of trials had two winners), so the DynamoDB store's requests run one at a
    time: the race still interleaves our reads, decisions and conditional writes, which is the
    logic under test; per-item atomicity itself is DynamoDB's guarantee.
    """
    if request.param == "sqlite":
        store = sqlite_store(tmp_path)
        try:
            yield World(store)
        finally:
            store.close()
    else:
        with dynamodb_store(serialized=True) as dstore:
            yield World(dstore)
