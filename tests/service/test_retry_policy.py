"""The services' one retry policy (Context.retrying): lost races are run again, a retrying
inside another does not multiply the tries, and the whole stays within its time budget."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.service import context as context_module
from taskgate.service.context import Context
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


def test_retrying_stops_at_its_time_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context_module, "RETRY_BUDGET_S", 0.05)
    store = sqlite_store(tmp_path)
    try:
        ctx = Context(store)
        runs: list[float] = []

        def always() -> None:
            runs.append(time.monotonic())
            time.sleep(0.01)
            raise _lost_race()

        start = time.monotonic()
        with pytest.raises(TaskgateError):
            ctx.retrying(always, tries=1000)
        assert time.monotonic() - start < 0.5
        assert 2 <= len(runs) < 1000
    finally:
        store.close()
