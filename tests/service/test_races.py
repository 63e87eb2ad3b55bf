"""Claims raced by real threads, on both adapters."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import CriterionInput, Status
from taskgate.domain.principals import Acting
from taskgate.service import claims, tasks
from taskgate.store.sqlite import SQLiteStore
from tests.support.world import World

THREADS = 32


def _sized(w: World, sqlite: int, dynamodb: int) -> int:
    """How many trials or tasks: moto serializes its requests here and deep-copies the table on
    every transaction item, so the same race costs it ~50x SQLite's time. Fewer trials on moto
    still race 32 threads each time (per-item atomicity is DynamoDB's own guarantee)."""
    return sqlite if isinstance(w.store, SQLiteStore) else dynamodb


def _race(pool: ThreadPoolExecutor, fns: list[Callable[[], Any]]) -> list[Any]:
    """Start every fn at the same instant (a barrier) and collect results or exceptions."""
    barrier = threading.Barrier(len(fns))

    def run(fn: Callable[[], Any]) -> Any:
        barrier.wait()
        try:
            return fn()
        except Exception as exc:  # collected and asserted on by the caller
            return exc

    return list(pool.map(run, fns))


def test_exactly_one_of_32_threads_claims_a_task_in_every_trial(race_world: World) -> None:
    w = race_world
    w.project()
    agents: list[Acting] = [w.agent(f"a{i}") for i in range(THREADS)]
    trials = _sized(w, sqlite=200, dynamodb=40)
    with ThreadPoolExecutor(THREADS) as pool:
        for trial in range(trials):
            t = w.task(title=f"t{trial}")
            tid = t.id
            results = _race(
                pool, [lambda a=a, tid=tid: claims.claim(w.ctx, a, "demo", task_id=tid) for a in agents]
            )
            winners = [r for r in results if isinstance(r, claims.Claimed)]
            losers = [r for r in results if isinstance(r, TaskgateError)]
            assert len(winners) == 1, f"trial {trial}: {len(winners)} winners"
            assert len(losers) == THREADS - 1
            assert {e.code for e in losers} == {ErrorCode.WRONG_STATE}, {e.code for e in losers}
            stored = w.reload(t.id)
            assert stored.status is Status.CLAIMED and len(stored.attempts) == 1
            assert (
                stored.claim is not None and stored.claim.credential_id == winners[0].task.claim.credential_id
            )


def test_32_threads_drain_a_queue_each_task_claimed_exactly_once(race_world: World) -> None:
    w = race_world
    w.project()
    agents: list[Acting] = [w.agent(f"a{i}") for i in range(THREADS)]
    created = {
        tasks.create(
            w.ctx, w.human, "demo", title=f"t{i}", priority=i % 7, criteria=[CriterionInput(text="works")]
        ).task.id
        for i in range(_sized(w, sqlite=500, dynamodb=120))
    }
    claimed: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def drain(agent: Acting) -> None:
        while True:
            try:
                c = claims.claim(w.ctx, agent, "demo")
            except TaskgateError as exc:
                if exc.code is ErrorCode.NOTHING_READY:
                    return
                with lock:
                    errors.append(exc)
                return
            except BaseException as exc:  # recorded: a thread must fail only with "nothing ready"
                with lock:
                    errors.append(exc)
                return
            with lock:
                claimed.append(c.task.id)

    with ThreadPoolExecutor(THREADS) as pool:
        _race(pool, [lambda a=a: drain(a) for a in agents])
    assert errors == []
    counts = Counter(claimed)
    assert [tid for tid, n in counts.items() if n > 1] == []
    assert set(counts) == created
    listed, _ = tasks.list_tasks(w.ctx, w.human, "demo", status=Status.READY, limit=10)
    assert listed == []
