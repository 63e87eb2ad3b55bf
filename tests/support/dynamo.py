"""Store fixtures shared by test suites: a DynamoDB store on moto, a SQLite store on a file.

from tests.support.dynamo import dynamodb_store, sqlite_store

with dynamodb_store() as store: ...
with dynamodb_store(serialized=True) as store: ...   # for tests with racing threads
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from taskgate.store.dynamodb import DynamoDBStore
from taskgate.store.port import Item
from taskgate.store.schema import dynamodb_table_definition
from taskgate.store.sqlite import SQLiteStore

REGION = "us-east-1"

_FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
}

# One lock for every serialized client in the process: moto keeps one in-memory backend.
MOTO_LOCK = threading.Lock()


class SerializedClient:
    """A boto3 client whose every method call runs under one global lock (MOTO_LOCK).

    Why: moto is not atomic under concurrent requests. Measured: with
    8-16 threads racing a conditional write, 10-33% of trials had more than one winner, in
    process or as a server. Real DynamoDB guarantees per-item atomicity of a conditional write
    and of a transaction; race tests exist to test *our* conditions and retry logic, so they
    run moto one request at a time. Threads still interleave between requests (read, then
    conditional write), which is where our logic can go wrong.

    `exceptions` and `meta` (and every non-callable attribute) pass through untouched, so
    `client.exceptions.ConditionalCheckFailedException` and event hooks keep working.
    """

    _PASS_THROUGH = frozenset({"exceptions", "meta"})

    def __init__(self, client: Any, lock: threading.Lock = MOTO_LOCK) -> None:
        self._client = client
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name in self._PASS_THROUGH or not callable(attr):
            return attr

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)

        locked.__name__ = name
        return locked


_SESSION: boto3.session.Session | None = None


def _session() -> boto3.session.Session:
    """One boto3 session for all test clients: its loader keeps the parsed service models.

    (mock_aws resets boto3's default session on every start, so boto3.client() would parse
    the models again each time, ~0.1 s per test.) Credentials are still resolved per client,
    from the fake environment."""
    global _SESSION
    if _SESSION is None:
        _SESSION = boto3.session.Session()
    return _SESSION


@contextmanager
def _fake_aws_env() -> Iterator[None]:
    """Dummy credentials and region for the duration, without overriding what is set; restored after."""
    added = [name for name in _FAKE_ENV if name not in os.environ]
    for name, value in _FAKE_ENV.items():
        os.environ.setdefault(name, value)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextmanager
def dynamodb_store(serialized: bool = False) -> Iterator[DynamoDBStore]:
    """A DynamoDBStore on a fresh table (unique name) inside moto's mock_aws.

    serialized=True: the store's client runs every request under MOTO_LOCK (see
    SerializedClient for why); use it in any test where threads race.
    """
    with _fake_aws_env(), mock_aws():
        client = _session().client("dynamodb", region_name=REGION)
        name = f"taskgate-test-{uuid.uuid4().hex[:12]}"
        client.create_table(**dynamodb_table_definition(name))
        store = DynamoDBStore(name, client=SerializedClient(client) if serialized else client)
        try:
            yield store
        finally:
            store.close()
            client.close()


def moto_table_items(store: DynamoDBStore) -> list[dict[str, Any]]:
    """Every item of the store's table as a scan returns it (attribute name -> {type: value}),
    read from moto's in-memory backend.

    Why not a scan: moto serializes every item of every page on each call, which made a
    before-and-after scan of a grown table most of a model-test step. This reads the same
    items without the wire format; `test_moto_backend_reads_what_a_scan_reads` keeps the two
    equal, so a moto release that changes its internals fails there, not silently here."""
    return [item.to_json()["Attributes"] for item in _moto_table(store).all_items()]


def moto_get_many(store: DynamoDBStore, keys: list[tuple[str, str]]) -> list[Item]:
    """The items at `keys` (those that exist) as the store reads them, from moto's in-memory
    backend: what `store.get_many` answers, without moto's wire format (the model test reads
    every task after every step, and moto's serializer was most of that)."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    table = _moto_table(store)
    out = []
    for pk, sk in keys:
        found = table.get_item(DynamoType({"S": pk}), DynamoType({"S": sk}))
        if found is not None:
            out.append(store._decode(found.to_json()["Attributes"]))
    return out


def _moto_table(store: DynamoDBStore) -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    client: Any = store._client
    region = client.meta.region_name if hasattr(client, "meta") else REGION
    return dynamodb_backends[DEFAULT_ACCOUNT_ID][region].get_table(store.table_name)


def sqlite_store(tmp_path: Path) -> SQLiteStore:
    """A SQLiteStore on a real file (WAL needs one) under tmp_path; the caller closes it."""
    return SQLiteStore(tmp_path / f"taskgate-{uuid.uuid4().hex[:8]}.db")
