"""An accept looks for tasks to unblock only among those listed as waiting for it (Task.dependents),
listed by every change that makes a task wait: create, update, a dependency failure, a human's
block. A blocker stored before the list existed is still served by the blocked queue."""

from __future__ import annotations

from collections import Counter

from taskgate.domain.models import FailureKind, Status, Task
from taskgate.service import claims, records, review, sweeper, tasks
from taskgate.store.port import Item, Put
from tests.support.counting import CountingStore
from tests.support.world import World


def _submitted(w: World, title: str) -> Task:
    return w.submitted(w.agent(f"agent-{title}"), title=title)


def test_an_accept_with_nobody_waiting_reads_once_and_commits_once(world: World) -> None:
    w = world
    w.project()
    for i in range(5):
        w.task(title=f"blocked {i}", blocked_by=[w.task(title=f"other {i}").id])
    done = _submitted(w, "alone")
    counting = CountingStore(w.store)
    w.ctx.store = counting  # type: ignore[assignment]
    assert review.accept(w.ctx, w.human, done.id).status is Status.DONE
    assert counting.calls == Counter({"get_many": 1, "commit": 1})


def test_every_way_of_waiting_is_released_by_the_accept(any_world: World) -> None:
    w = any_world
    w.project()
    blocker = _submitted(w, "blocker")
    by_create = w.task(title="created waiting", blocked_by=[blocker.id])
    by_update = w.task(title="updated")
    tasks.update(w.ctx, w.human, by_update.id, blocked_by=[blocker.id])
    bob = w.agent("bob")
    held = w.claimed(bob, title="failed on a dependency")
    claims.report_failure(
        w.ctx,
        bob,
        held.task.id,
        held.token,
        kind=FailureKind.DEPENDENCY,
        findings=["needs it"],
        blocked_by=[blocker.id],
    )
    carol = w.agent("carol")
    asked = w.claimed(carol, title="escalated")
    claims.escalate(w.ctx, carol, asked.task.id, asked.token, question="wait for the blocker?")
    review.resolve(w.ctx, w.human, asked.task.id, review.Resolution.BLOCK, blocked_by=[blocker.id])
    waiting = [by_create.id, by_update.id, held.task.id, asked.task.id]
    assert [w.reload(t).status for t in waiting] == [Status.BLOCKED] * 4
    assert w.reload(blocker.id).dependents == waiting
    review.accept(w.ctx, w.human, blocker.id)
    assert [w.reload(t).status for t in waiting] == [Status.READY] * 4


def test_a_task_made_to_wait_before_the_lists_existed_is_released_by_the_sweeper(any_world: World) -> None:
    w = any_world
    w.project()
    blocker = _submitted(w, "old-blocker")
    waiting = w.task(title="waits", blocked_by=[blocker.id])
    # As stored before the lists existed: the blocker does not know who waits for it.
    item = w.store.get(*records.task_key(blocker.id))
    assert item is not None and item.data.pop("dependents") == [waiting.id]
    w.store.commit(
        [Put(Item(item.pk, item.sk, item.data, item.version + 1, item.indexes, item.expires), item.version)]
    )
    review.accept(w.ctx, w.human, blocker.id)
    assert w.reload(waiting.id).status is Status.BLOCKED
    assert sweeper.sweep(w.ctx).cascaded == [waiting.id]
    assert w.reload(waiting.id).status is Status.READY
