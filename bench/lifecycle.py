"""Full task lifecycles (create -> claim -> heartbeat -> submit -> accept) on each adapter, in process.

    python bench/lifecycle.py [--n 200] [--smoke]

Prints one line per adapter:
    adapter=<name> lifecycles_per_s=<x> requests_per_lifecycle=<n> writes_per_lifecycle=<w> ...
A lifecycle has 5 state changes, so the floor is 5 write requests; `vs_floor` is writes / 5.
DynamoDB runs on moto (its speed says nothing about DynamoDB's; the request counts are exact,
counted with a botocore event hook). SQLite runs on a real file.

For DynamoDB it also prints the write units the requests cost (`wcu_per_lifecycle`: each item
written is ceil(size / 1 KB) units, twice that inside a transaction; size as DynamoDB counts it,
attribute names plus values, from the request itself: moto reports no consumed capacity for
transactions) and the mean stored size of a task item and of a task history event. The line
`dynamodb(moto)+kms` runs the same lifecycles with the attestation key (KMS on moto): the
acceptance's signed summary adds its kms:Sign calls (`kms_Sign`) and its item.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from benchkit import smoke
from taskgate.domain.clock import ManualClock
from taskgate.domain.models import CredentialKind, CriterionInput
from taskgate.domain.principals import acting, human
from taskgate.service import claims, keys, projects, review, tasks
from taskgate.service.context import Context
from taskgate.store.port import Op, Store

STATE_CHANGES = 5
WRITE_OPS = {"commit", "PutItem", "DeleteItem", "UpdateItem", "TransactWriteItems"}


class CountingStore:
    """Counts the port calls a SQLite store serves (each one is one request to the database)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.counts: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.counts[name] += 1
            return attr(*args, **kwargs)

        return counted

    def commit(self, ops: Sequence[Op]) -> None:
        self.counts["commit"] += 1
        self.inner.commit(ops)


def _size(value: dict[str, Any]) -> int:
    """An attribute value's size as DynamoDB counts it (strings and binaries by their bytes,
    numbers by about half their digits)."""
    [(kind, v)] = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "B":
        return len(v)
    if kind == "N":
        return len(v.lstrip("-").replace(".", "")) // 2 + 1
    if kind == "BOOL":
        return 1
    raise AssertionError(f"attribute type {kind} not counted")


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + _size(value) for name, value in item.items())


class WriteUnits:
    """Write units and stored sizes, from the PutItem / TransactWriteItems requests' parameters."""

    def __init__(self) -> None:
        self.units = 0
        self.sizes: dict[str, list[int]] = {"task": [], "event": []}

    def _item(self, item: dict[str, Any], factor: int) -> None:
        size = item_size(item)
        self.units += factor * -(-size // 1024)
        sk, pk = item["SK"]["S"], item["PK"]["S"]
        if sk.startswith("TASK#"):
            self.sizes["task"].append(size)
        elif pk.startswith("T#") and sk.startswith("H#"):
            self.sizes["event"].append(size)

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "PutItem":
            self._item(params["Item"], 1)
        elif model.name == "TransactWriteItems":
            for op in params["TransactItems"]:
                if "Put" in op:
                    self._item(op["Put"]["Item"], 2)
                else:  # a condition check costs a unit per KB of the item read: at least 1, twice
                    self.units += 2


def run(
    store: Any, counts: Callable[[], Counter[str]], n: int, attestor: Any = None
) -> tuple[float, Counter[str]]:
    ctx = Context(store, ManualClock())
    ctx.attestor = attestor
    admin = acting(human("bench"))
    projects.create(ctx, admin, "bench")
    agent = acting(
        keys.authenticate(ctx, keys.create(ctx, admin, kind=CredentialKind.AGENT, name="exec").secret)
    )
    sha = "ab" * 20
    before = counts().copy()
    start = time.perf_counter()
    for i in range(n):
        t = tasks.create(ctx, admin, "bench", title=f"t{i}", criteria=[CriterionInput(text="works")]).task
        c = claims.claim(ctx, agent, "bench", task_id=t.id)
        claims.heartbeat(ctx, agent, t.id, c.token)
        claims.submit(ctx, agent, t.id, c.token, commit_sha=sha, evidence="done")
        review.accept(ctx, admin, t.id)
    elapsed = time.perf_counter() - start
    return n / elapsed, counts() - before


def report(name: str, rate: float, used: Counter[str], n: int, units: WriteUnits | None = None) -> None:
    total = sum(v for k, v in used.items() if not k.startswith("kms_")) / n
    writes = sum(v for k, v in used.items() if k in WRITE_OPS) / n
    detail = " ".join(f"{k}={v / n:g}" for k, v in sorted(used.items()))
    extra = ""
    if units is not None:
        mean = {k: sum(v) / len(v) for k, v in units.sizes.items() if v}
        extra = (
            f" wcu_per_lifecycle={units.units / n:g} task_item_bytes={mean.get('task', 0):.0f}"
            f" event_item_bytes={mean.get('event', 0):.0f}"
        )
        units.units, units.sizes = 0, {"task": [], "event": []}
    print(
        f"adapter={name} lifecycles_per_s={rate:.1f} requests_per_lifecycle={total:g} "
        f"writes_per_lifecycle={writes:g} vs_floor={writes / STATE_CHANGES:.2f}{extra} [{detail}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    args = smoke.parse(parser, n=3)

    from taskgate.store.sqlite import SQLiteStore

    with tempfile.TemporaryDirectory() as tmp:
        sqlite = CountingStore(SQLiteStore(Path(tmp) / "bench.db"))
        rate, used = run(sqlite, lambda: sqlite.counts, args.n)
        report("sqlite", rate, used, args.n)
        sqlite.inner.close()

    for name, value in {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}.items():
        os.environ.setdefault(name, value)
    import boto3
    from moto import mock_aws

    from taskgate.store.dynamodb import DynamoDBStore
    from taskgate.store.schema import dynamodb_table_definition

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(**dynamodb_table_definition("bench"))
        calls: Counter[str] = Counter()

        def count(event_name: str, **_: Any) -> None:
            calls[event_name.rsplit(".", 1)[-1]] += 1

        client.meta.events.register("before-call.dynamodb.*", count)
        units = WriteUnits()
        client.meta.events.register("before-parameter-build.dynamodb.*", units)
        rate, used = run(DynamoDBStore("bench", client=client), lambda: calls, args.n)
        report("dynamodb(moto)", rate, used, args.n, units)
        try:  # the attestation key (this tree may predate it: then there is nothing to sign with)
            from taskgate.service.attestations import Attestor
            from taskgate.signing.kms import KmsSigner
        except ImportError:
            return
        kms = boto3.client("kms", region_name="us-east-1")
        made = kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")  # template.yaml's default
        key = made["KeyMetadata"]["KeyId"]

        def count_kms(event_name: str, **_: Any) -> None:
            calls["kms_" + event_name.rsplit(".", 1)[-1]] += 1

        kms.meta.events.register("before-call.kms.*", count_kms)
        client.delete_table(TableName="bench")
        client.create_table(**dynamodb_table_definition("bench"))
        attestor = Attestor(KmsSigner(key, client=kms))
        rate, used = run(DynamoDBStore("bench", client=client), lambda: calls, args.n, attestor)
        report("dynamodb(moto)+kms", rate, used, args.n, units)


if __name__ == "__main__":
    main()
