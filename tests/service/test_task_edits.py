"""Editing a task nobody holds: blockers move it between ready and blocked in the edit's own
commit, cycles are refused, held work is not edited, and an edit racing its blocker's accept
never strands the task."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import Status
from taskgate.service import review, tasks
from taskgate.store.sqlite import SQLiteStore
from tests.support.world import World, dump


def _last_event(w: World, tid: str) -> tuple[str, Status | None, Status | None, list[str]]:
    ev = tasks.history(w.ctx, w.human, tid)[-1]
    return ev.action, ev.from_status, ev.to_status, ev.detail.get("fields", [])


def test_an_unfinished_blocker_sends_a_ready_task_to_blocked_in_one_commit(world: World) -> None:
    w = world
    w.project()
    blocker, task = w.task(title="first"), w.task(title="then")
    out = tasks.update(w.ctx, w.human, task.id, blocked_by=[blocker.id], priority=7)
    stored = w.reload(task.id)
    assert out.task.status is stored.status is Status.BLOCKED
    assert stored.blocked_by == [blocker.id] and stored.priority == 7
    assert stored.version == task.version + 1
    assert _last_event(w, task.id) == (
        "blockers_added",
        Status.READY,
        Status.BLOCKED,
        ["blocked_by", "priority"],
    )


def test_a_blocked_task_left_without_unfinished_blockers_becomes_ready(world: World) -> None:
    w = world
    w.project()
    agent = w.agent("bob")
    done = w.submitted(agent)
    review.accept(w.ctx, w.human, done.id)
    open_blocker = w.task(title="open")
    task = w.task(blocked_by=[open_blocker.id])
    assert task.status is Status.BLOCKED
    tasks.update(w.ctx, w.human, task.id, blocked_by=[done.id])
    assert w.reload(task.id).status is Status.READY
    assert _last_event(w, task.id)[:3] == ("blockers_done", Status.BLOCKED, Status.READY)
    tasks.update(w.ctx, w.human, task.id, blocked_by=[])  # ready, no blockers: stays ready
    assert w.reload(task.id).status is Status.READY
    assert _last_event(w, task.id)[0] == "updated"


def test_a_backlog_task_keeps_waiting_for_its_spec_whatever_its_blockers(world: World) -> None:
    w = world
    w.project()
    spec = w.spec(approve=False)
    task = w.task(spec_id=spec.id)
    tasks.update(w.ctx, w.human, task.id, blocked_by=[w.task(title="other").id])
    assert w.reload(task.id).status is Status.BACKLOG


@pytest.mark.parametrize("depth", [1, 3])
def test_a_cycle_of_blockers_is_refused_and_nothing_is_written(world: World, depth: int) -> None:
    w = world
    w.project()
    first = w.task(title="t0")
    chain = [first]
    for i in range(depth):
        chain.append(w.task(title=f"t{i + 1}", blocked_by=[chain[-1].id]))
    before = dump(w.store)
    with pytest.raises(TaskgateError) as err:
        tasks.update(w.ctx, w.human, first.id, blocked_by=[chain[-1].id])
    assert err.value.code is ErrorCode.VALIDATION and "cycle" in err.value.message
    with pytest.raises(TaskgateError) as err:
        tasks.update(w.ctx, w.human, first.id, blocked_by=[first.id])
    assert err.value.code is ErrorCode.VALIDATION
    assert dump(w.store) == before


def test_held_work_is_not_edited(world: World) -> None:
    w = world
    w.project()
    claimed = w.claimed(w.agent("bob"))
    before = dump(w.store)
    with pytest.raises(TaskgateError) as err:
        tasks.update(w.ctx, w.human, claimed.task.id, title="renamed")
    assert err.value.code is ErrorCode.WRONG_STATE and err.value.current_status == "claimed"
    assert dump(w.store) == before


def test_an_edit_racing_its_blockers_accept_never_strands_the_task(race_world: World) -> None:
    """Thread 1 makes task A wait for B while thread 2 accepts B. Whichever order they land
    in, A must end ready: the edit either saw B done, or its guard on B's version failed and
    it decided again, or it landed first and the accept's cascade released A."""
    w = race_world
    w.project()
    agent = w.agent("bob")
    trials = 60 if isinstance(w.store, SQLiteStore) else 12  # moto is slow; its requests serialized
    with ThreadPoolExecutor(2) as pool:
        for trial in range(trials):
            blocker = w.submitted(agent, title=f"b{trial}")
            task = w.task(title=f"a{trial}")
            barrier = threading.Barrier(2)

            def edit(
                tid: str = task.id, bid: str = blocker.id, barrier: threading.Barrier = barrier
            ) -> object:
                barrier.wait()
                return tasks.update(w.ctx, w.human, tid, blocked_by=[bid])

            def accept(bid: str = blocker.id, barrier: threading.Barrier = barrier) -> object:
                barrier.wait()
                return review.accept(w.ctx, w.human, bid)

            for f in [pool.submit(edit), pool.submit(accept)]:
                f.result()
            assert w.reload(blocker.id).status is Status.DONE
            assert w.reload(task.id).status is Status.READY, f"trial {trial}: task stranded"
