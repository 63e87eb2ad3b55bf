"""The services' one retry policy (Context.retrying): lost races are run again, a retrying
inside another does not multiply the tries, and the whole stays within its time budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskgate.domain.clock import ManualTiming
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.service.context import RETRY_BUDGET_S, Context
from tests.support.dynamo import sqlite_store


def _lost_race() -> TaskgateError:
    return TaskgateError(ErrorCode.CONFLICT, "changed by someone else at the same time; retry")


def test_nested_retrying_runs_the_outer_tries_only(tmp_path: Path) -> None:
    store = sqlite_store(tmp_path)
    try:
        ctx = Context(store)
        inner_runs: list[int] = []

        def inner() -> None:
            inner_runs.append(1)
            raise _lost_race()

        with pytest.raises(TaskgateError) as caught:
            ctx.retrying(lambda: ctx.retrying(inner, tries=5), tries=4)
        assert caught.value.code is ErrorCode.CONFLICT
        assert len(inner_runs) == 4  # not 4 x 5
        # A race lost once is run again and then succeeds.
        outcomes = iter([_lost_race(), None])

        def once() -> str:
            failure = next(outcomes)
            if failure is not None:
                raise failure
            return "done"

        assert ctx.retrying(once) == "done"
    finally:
        store.close()


def test_retrying_stops_at_its_time_budget(tmp_path: Path) -> None:
    """On timing whose pauses take no time: each run takes 10 ms of it, and runs stop once the
    next would start past RETRY_BUDGET_S, however many tries were allowed."""
    store = sqlite_store(tmp_path)
    try:
        timing = ManualTiming()
        ctx = Context(store, timing=timing)
        runs: list[float] = []

        def always() -> None:
            runs.append(timing.monotonic())
            timing.advance(0.01)
            raise _lost_race()

        with pytest.raises(TaskgateError) as caught:
            ctx.retrying(always, tries=10_000)
        assert caught.value.code is ErrorCode.CONFLICT
        # Every run started within the budget, and no pause went past it ...
        assert runs[0] == 0.0 and runs[-1] <= RETRY_BUDGET_S
        assert timing.monotonic() <= RETRY_BUDGET_S + 0.01
        assert len(timing.slept) == len(runs) - 1  # a pause between two runs, none after the last
        # ... and the budget, not the tries, ended it.
        assert 10 < len(runs) < 10_000
    finally:
        store.close()
