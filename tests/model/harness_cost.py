"""What the model test's harness costs on DynamoDB (moto): reading the state through moto's API
(a scan before and after a refused step, proving it wrote nothing; a batched get of every task
after every step, to compare) against reading moto's table directly (what the tests do).

    python -m tests.model.harness_cost [--examples 4] [--steps 60]

(from the repository's root).

Runs the same derandomized DynamoDB profile twice, once with each way of reading every item
(the draws and the services' seeded randomness make both runs take the same steps), and prints:
    read=api steps=<n> seconds=<s>
    read=backend steps=<n> seconds=<s>
    speedup=<api seconds / backend seconds>
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from taskgate.store.dynamodb import DynamoDBStore
from tests.model import machine
from tests.model.machine import Recorder, machine_for
from tests.support import dynamo, world


def scanned_items(store: DynamoDBStore) -> list[dict[str, Any]]:
    """Every item through the API, page by page: how dump read a moto table before."""
    client: Any = store._client
    out: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": store.table_name}
    while True:
        page = client.scan(**kwargs)
        out += page["Items"]
        if "LastEvaluatedKey" not in page:
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def timed(examples: int, steps: int) -> tuple[int, float, list[tuple[str, ...]]]:
    recorder = Recorder()
    started = time.perf_counter()
    run_state_machine_as_test(
        machine_for("dynamodb", strict=True, recorder=recorder),
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
    return recorder.steps, time.perf_counter() - started, recorder.paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=4)
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    fast_items, fast_get = dynamo.moto_table_items, dynamo.moto_get_many
    world.moto_table_items = scanned_items  # type: ignore[assignment]
    machine.moto_get_many = lambda store, keys: store.get_many(keys)
    try:
        scan_steps, scan_s, scan_paths = timed(args.examples, args.steps)
    finally:
        world.moto_table_items, machine.moto_get_many = fast_items, fast_get
    steps, backend_s, paths = timed(args.examples, args.steps)
    if paths != scan_paths:
        sys.exit("the two runs took different steps: the comparison would not be like for like")
    print(f"read=api steps={scan_steps} seconds={scan_s:.1f}")
    print(f"read=backend steps={steps} seconds={backend_s:.1f}")
    print(f"speedup={scan_s / backend_s:.2f}")


if __name__ == "__main__":
    main()
