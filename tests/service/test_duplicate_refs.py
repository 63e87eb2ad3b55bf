"""The duplicate-criterion warning from the project's ref index (service/refs.py):
exact whichever way a task came to hold a ref or stopped holding it, exact under concurrent
creates, and read in requests bounded by the new task's criteria, not the project's tasks."""

from __future__ import annotations

import threading
from collections import Counter

from taskgate.domain.models import CriterionInput, CriterionKind
from taskgate.service import review, specs, tasks
from tests.support.counting import CountingStore
from tests.support.world import World


def _test(ref: str) -> CriterionInput:
    return CriterionInput(text=f"passes {ref}", kind=CriterionKind.TEST, verify_ref=ref)


def _create(w: World, *refs: str) -> tasks.Written:
    criteria = [_test(r) for r in refs] + [CriterionInput(text="reads well")]
    return tasks.create(w.ctx, w.human, "demo", title="probe", criteria=criteria)


def _warned(w: World, *refs: str) -> list[str]:
    """The warnings a new task holding these refs gets; the probe is then cancelled."""
    made = _create(w, *refs)
    review.cancel(w.ctx, w.human, made.task.id)
    return made.warnings


def _on(ref: str, tid: str) -> str:
    return (
        f"test criterion '{ref}' is also on open task {tid}: each task is verified on its own commit, "
        f"so it must pass on both; that matters only if {tid}'s work is what makes it pass, and then "
        f"this task should build on it (block it on {tid} with blocked_by)"
    )


def test_warns_per_open_task_and_ref_and_not_for_review_criteria(any_world: World) -> None:
    w = any_world
    w.project()
    a = w.task(criteria=[_test("t.a"), _test("t.b")])
    b = w.task(criteria=[_test("t.b"), CriterionInput(text="t.a")])  # a review text is no ref
    assert _warned(w, "t.a", "t.b", "t.c") == [_on("t.a", a.id), _on("t.b", a.id), _on("t.b", b.id)]
    cmd = tasks.create(
        w.ctx,
        w.human,
        "demo",
        title="c",
        criteria=[CriterionInput(text="x", kind=CriterionKind.COMMAND, verify_ref="t.a")],
    )
    assert cmd.warnings == []  # same text, other kind


def test_closed_tasks_are_not_warned_about_and_a_reopened_one_is_again(any_world: World) -> None:
    w = any_world
    w.project()
    done = w.submitted(w.agent("bob"), criteria=[_test("t.done")])
    review.accept(w.ctx, w.human, done.id)
    cancelled = w.task(criteria=[_test("t.cancelled")])
    review.cancel(w.ctx, w.human, cancelled.id)
    assert _warned(w, "t.done", "t.cancelled") == []
    # The probe pruned both from the index; reopening the done one lists it again.
    review.reopen(w.ctx, w.human, done.id, findings=["the discount is applied after tax"])
    assert _warned(w, "t.done", "t.cancelled") == [_on("t.done", done.id)]


def test_a_criteria_update_is_followed_both_ways(any_world: World) -> None:
    w = any_world
    w.project()
    t = w.task(criteria=[_test("t.old")])
    assert tasks.update(w.ctx, w.human, t.id, criteria=[_test("t.new")]).warnings == []
    assert _warned(w, "t.old") == []  # it dropped t.old
    first = tasks.create(w.ctx, w.human, "demo", title="u", criteria=[_test("t.other")]).task
    out = tasks.update(w.ctx, w.human, first.id, criteria=[_test("t.new")])
    assert out.warnings == [_on("t.new", t.id)]
    assert sorted(_warned(w, "t.new")) == sorted([_on("t.new", t.id), _on("t.new", first.id)])


def test_spec_criteria_count_as_they_are_now(any_world: World) -> None:
    w = any_world
    w.project()
    s = w.spec(n=1)  # AC-1.1: tests.Health.t1
    under = w.task(spec_id=s.id)
    assert _warned(w, "tests.Health.t1") == [_on("tests.Health.t1", under.id)]
    # The spec is revised to another test: its task now holds that one, not the old.
    specs.revise(w.ctx, w.human, "demo", s.id, criteria=[_test("tests.Health.t9")])
    assert _warned(w, "tests.Health.t1") == []
    assert _warned(w, "tests.Health.t9") == [_on("tests.Health.t9", under.id)]
    # A task holding only some of the spec's criteria is warned about for those only.
    specs.update(w.ctx, w.human, "demo", s.id, criteria=[_test("tests.Health.t9"), _test("tests.Health.t8")])
    specs.approve(w.ctx, w.human, "demo", s.id)
    part = w.task(spec_id=s.id, spec_criteria=[f"AC-{s.number}.2"])
    assert _warned(w, "tests.Health.t8") == [
        _on("tests.Health.t8", under.id),
        _on("tests.Health.t8", part.id),
    ]
    assert _warned(w, "tests.Health.t9") == [_on("tests.Health.t9", under.id)]


def test_a_create_reads_no_other_task_that_shares_no_ref(world: World) -> None:
    w = world
    w.project()
    for i in range(40):
        w.task(criteria=[_test(f"t.{i}")])
    counting = CountingStore(w.store)
    w.ctx.store = counting  # type: ignore[assignment]
    assert _create(w, "t.new", "t.other").warnings == []
    # The counter and both refs in one read, then the commit: nothing scales with the project.
    assert counting.calls == Counter({"get_many": 1, "commit": 1})
    counting.calls.clear()
    assert _create(w, "t.7", "t.new").warnings == [_on("t.new", "demo-41"), _on("t.7", "demo-8")]
    # ... and the two tasks that share a ref with it, in one more.
    assert counting.calls == Counter({"get_many": 2, "commit": 1})


def test_concurrent_creates_sharing_a_ref_warn_about_each_other(race_world: World) -> None:
    w = race_world
    w.project()
    start = threading.Barrier(4)
    out: dict[str, list[str]] = {}

    def create(i: int) -> None:
        start.wait()
        made = tasks.create(w.ctx, w.human, "demo", title=f"t{i}", criteria=[_test("t.shared")])
        out[made.task.id] = made.warnings

    threads = [threading.Thread(target=create, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Whatever the order, the n-th task to commit is warned about each of the n-1 before it.
    by_count = sorted(len(v) for v in out.values())
    assert by_count == [0, 1, 2, 3]
    for warnings in out.values():
        assert all(_on("t.shared", other) in warnings for other in out if len(out[other]) < len(warnings))
