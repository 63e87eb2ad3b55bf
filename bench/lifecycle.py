"""Full task lifecycles (create -> claim -> heartbeat -> submit -> accept) on each adapter, in process.

    python bench/lifecycle.py [--n 200]

Prints one line per adapter:
    adapter=<name> lifecycles_per_s=<x> requests_per_lifecycle=<n> writes_per_lifecycle=<w> ...
A lifecycle has 5 state changes, so the floor is 5 write requests; `vs_floor` is writes / 5.
DynamoDB runs on moto (its speed says nothing about DynamoDB's; the request counts are exact,
counted with a botocore event hook). SQLite runs on a real file.
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


def run(store: Any, counts: Callable[[], Counter[str]], n: int) -> tuple[float, Counter[str]]:
    ctx = Context(store, ManualClock())
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


def report(name: str, rate: float, used: Counter[str], n: int) -> None:
    total = sum(used.values()) / n
    writes = sum(v for k, v in used.items() if k in WRITE_OPS) / n
    detail = " ".join(f"{k}={v / n:g}" for k, v in sorted(used.items()))
    print(
        f"adapter={name} lifecycles_per_s={rate:.1f} requests_per_lifecycle={total:g} "
        f"writes_per_lifecycle={writes:g} vs_floor={writes / STATE_CHANGES:.2f} [{detail}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()

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
        rate, used = run(DynamoDBStore("bench", client=client), lambda: calls, args.n)
        report("dynamodb(moto)", rate, used, args.n)


if __name__ == "__main__":
    main()
