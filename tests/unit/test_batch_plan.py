"""The bisection plan of a batch verified together (domain/batches.py), against an oracle: every
way one or two tasks can break a batch of up to eight finds exactly the tasks that break it, and
what is accepted was seen passing together."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from taskgate.domain.batches import Batch, Entry, Requester, Step, after_step, next_prefix

AT = datetime(2026, 1, 1, tzinfo=UTC)
TIP = "a" * 40


def new(n: int) -> Batch:
    ids = [f"p-{i}" for i in range(1, n + 1)]
    return Batch(
        id="B1",
        project="p",
        entries=[Entry(task_id=t, commit_sha="c" * 40, attempt=1) for t in ids],
        requested_by=Requester(actor="human:alice", credential_id="admin", via="board"),
        requested_at=AT,
        remaining=ids,
    )


def play(b: Batch, passes: Callable[[list[str]], bool]) -> tuple[Batch, list[list[str]]]:
    runs = []
    while (k := next_prefix(b)) is not None:
        tasks = b.remaining[:k]
        runs.append(tasks)
        step = Step(
            n=len(b.steps) + 1,
            run_id=f"r{len(runs)}",
            tasks=tasks,
            credential_id="ci",
            started_at=AT,
            verdict="passed" if passes(tasks) else "failed",
            tip=TIP,
        )
        b = after_step(b.model_copy(update={"steps": [*b.steps, step]}), step)
        assert len(runs) < 100
    return b, runs


def test_a_batch_that_passes_takes_one_run() -> None:
    b, runs = play(new(5), lambda _: True)
    assert runs == [b.remaining] and b.culprits == []


def test_the_fourth_of_five_breaking_with_the_second_takes_five_runs() -> None:
    b, runs = play(new(5), lambda ts: not {"p-2", "p-4"} <= set(ts))
    assert [len(r) for r in runs] == [5, 2, 3, 4, 4]
    assert [(c.task_id, c.breaks_with) for c in b.culprits] == [("p-4", ["p-1", "p-2", "p-3"])]
    assert b.remaining == ["p-1", "p-2", "p-3", "p-5"]


@pytest.mark.parametrize("n", range(2, 9))
def test_every_pair_that_breaks_together_is_found(n: int) -> None:
    for a, c in itertools.combinations(range(1, n + 1), 2):
        pair = {f"p-{a}", f"p-{c}"}
        b, runs = play(new(n), lambda ts, pair=pair: not pair <= set(ts))  # type: ignore[misc]
        assert [x.task_id for x in b.culprits] == [f"p-{c}"], (n, a, c)
        assert f"p-{c}" not in b.remaining and len(b.remaining) == n - 1
        # what is accepted ran together and passed
        assert any(r == b.remaining for r in runs), (n, a, c, runs)


def test_two_independent_culprits_are_both_found() -> None:
    broken = {"p-3", "p-6"}  # each fails merged, with or without the others
    b, runs = play(new(8), lambda ts: not (broken & set(ts)))
    assert sorted(x.task_id for x in b.culprits) == sorted(broken)
    assert b.remaining == ["p-1", "p-2", "p-4", "p-5", "p-7", "p-8"] and runs[-1] == b.remaining
