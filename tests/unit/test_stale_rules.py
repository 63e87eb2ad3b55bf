"""Which verdicts a move of the base branch makes stale, and which the server reads a local
repository's tip for (domain/merging.py): the same verdicts, so a tip is read exactly where a
move of it could mark something."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from taskgate.domain.merging import BaseTip, MergedBase, held_on_a_tip, stale_on
from taskgate.domain.models import Status, Task

TIP0, TIP1 = "a0" * 20, "a1" * 20
NOW = datetime(2026, 1, 1, tzinfo=UTC)
BASES = {
    "none": None,
    "alone": MergedBase(mode="none", why="merge is off"),
    "alone, branch known": MergedBase(mode="none", branch="main", tip=TIP0),
    "merged": MergedBase(mode="merge", branch="main", tip=TIP0, tree="b0" * 20),
    "rebased": MergedBase(mode="rebase", branch="main", tip=TIP0, tree="b0" * 20),
    "merge, no tip": MergedBase(mode="merge", branch="main"),
}


def _task(status: Status, base: MergedBase | None) -> Task:
    return Task(
        id="demo-1",
        project="demo",
        number=1,
        title="t",
        status=status,
        verified_base=base,
        created_by="human:alice",
        created_at=NOW,
        updated_at=NOW,
        status_changed_at=NOW,
    )


@pytest.mark.parametrize(("status", "base"), list(itertools.product(Status, BASES)))
def test_a_tip_is_read_for_exactly_the_verdicts_a_move_makes_stale(status: Status, base: str) -> None:
    task = _task(status, BASES[base])
    moved = BaseTip(branch="main", tip=TIP1, at="", by="system:taskgate")
    could_go_stale = status is Status.VERIFIED and stale_on(task.verified_base, moved)
    assert held_on_a_tip(task) is could_go_stale
    assert held_on_a_tip(task) is (status is Status.VERIFIED and base in ("merged", "rebased"))


def test_a_verdict_on_the_tip_read_is_not_stale() -> None:
    task = _task(Status.VERIFIED, BASES["merged"])
    assert held_on_a_tip(task)
    assert not stale_on(task.verified_base, BaseTip(branch="main", tip=TIP0, at="", by="x"))
    assert not stale_on(task.verified_base, BaseTip(branch="release", tip=TIP1, at="", by="x"))
    assert stale_on(task.verified_base, BaseTip(branch="main", tip=TIP1, at="", by="x"))
