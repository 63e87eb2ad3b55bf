"""The tests' fast read of a moto table (`moto_table_items`, behind `dump`) sees what a scan sees."""

from __future__ import annotations

from typing import Any

from taskgate.domain.models import Task
from taskgate.service import records
from taskgate.store.dynamodb import DynamoDBStore
from taskgate.store.port import Put
from tests.support.dynamo import dynamodb_store, moto_get_many, moto_table_items
from tests.support.world import World, dump


def _scan(store: DynamoDBStore) -> list[dict[str, Any]]:
    client: Any = store._client
    out: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": store.table_name}
    while True:
        page = client.scan(**kwargs)
        out += page["Items"]
        if "LastEvaluatedKey" not in page:
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _key(item: dict[str, Any]) -> tuple[str, str]:
    return item["PK"]["S"], item["SK"]["S"]


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """Binary values as the scan returns them (bytes) and as moto keeps them (base64 text) alike."""
    import base64

    return {
        k: {t: base64.b64decode(v) if t == "B" and isinstance(v, str) else v for t, v in typed.items()}
        for k, typed in item.items()
    }


def test_moto_backend_reads_what_a_scan_reads() -> None:
    with dynamodb_store() as store:
        world = World(store)
        world.project()
        task = world.task()
        # A task big enough to be stored compressed, so a binary attribute is compared too.
        big = task.model_copy(update={"description": "x" * 20_000})
        world.ctx.commit([Put(records.task_item(big), task.version)])
        fast = sorted((_plain(i) for i in moto_table_items(store)), key=_key)
        scanned = sorted((_plain(i) for i in _scan(store)), key=_key)
        assert len(scanned) > 3
        assert any("B" in v for i in scanned for v in i.values())
        assert fast == scanned
        rows = dump(store)
        loaded = records.load(Task, store.get(*records.task_key(task.id)))  # type: ignore[arg-type]
        assert loaded.description == "x" * 20_000
        assert [r[:2] for r in rows] == [_key(i) for i in scanned]


def test_moto_backend_gets_what_the_store_gets() -> None:
    with dynamodb_store() as store:
        world = World(store)
        world.project()
        tasks = [world.task(), world.task()]
        big = tasks[1].model_copy(update={"description": "y" * 20_000})  # stored compressed
        world.ctx.commit([Put(records.task_item(big), tasks[1].version)])
        keys = [records.task_key(t.id) for t in tasks] + [
            ("P#demo", "TASK#00000099"),
            records.project_key("demo"),
        ]
        fast, real = moto_get_many(store, keys), store.get_many(keys)
        assert len(real) == 3
        assert fast == real
