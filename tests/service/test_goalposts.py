"""A task's criteria are fixed once work can start on them: only a
human changes them, or an architect while the task's spec is a draft; a human's change after an
attempt is in the history (before and after) and in the next brief. And update_task(status): a
human's moves, made by a delegated agent through the services that make them anywhere else."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import AgentRole, CriterionInput, CriterionKind, FailureKind, Risk, Status
from taskgate.domain.principals import Acting, acting
from taskgate.domain.specs import criteria_of
from taskgate.service import brief, claims, review, specs, tasks
from taskgate.store.port import Op
from tests.support.before_commit import BeforeCommit
from tests.support.world import World, dump


def _failed_once(w: World, executor: Acting, **kw: object) -> str:
    """A ready task under an approved two-criterion spec whose first attempt failed."""
    spec = w.spec(n=2)
    c = w.claimed(executor, spec_id=spec.id, spec_criteria=["AC-1.1", "AC-1.2"], **kw)
    claims.report_failure(
        w.ctx, executor, c.task.id, c.token, kind=FailureKind.OTHER, findings=["tests.Health.t2 fails"]
    )
    assert w.reload(c.task.id).status is Status.READY
    return c.task.id


def test_the_executor_whose_attempt_failed_cannot_drop_the_failing_criterion(any_world: World) -> None:
    w = any_world
    w.project()
    bob = w.agent("bob")
    tid = _failed_once(w, bob)
    before = dump(w.store)
    for edit in (
        {"spec_criteria": ["AC-1.1"]},
        {"criteria": [CriterionInput(text="it compiles")]},
        {"spec_criteria": ["AC-1.1", "AC-1.2"], "title": "same criteria, new title"},
    ):
        with pytest.raises(TaskgateError) as refused:
            tasks.update(w.ctx, bob, tid, **edit)  # type: ignore[arg-type]
        assert refused.value.code is ErrorCode.FORBIDDEN
        assert "report_failure(kind='spec_gap'" in refused.value.hint
    assert dump(w.store) == before
    task = w.reload(tid)
    spec = w.ctx.spec("demo", "SPEC-1")
    assert [c.id for c in criteria_of(task, spec)] == ["AC-1.1", "AC-1.2"]
    # The rest of an edit is still the executor's to make.
    assert tasks.update(w.ctx, bob, tid, priority=3).task.priority == 3


def test_an_architect_changes_criteria_only_while_the_spec_is_a_draft(world: World) -> None:
    w = world
    w.project()
    arch = w.agent("ann", role=AgentRole.ARCHITECT)
    draft = w.spec(approve=False, n=2)
    waiting = w.task(spec_id=draft.id, by=arch)
    assert waiting.status is Status.BACKLOG
    out = tasks.update(w.ctx, arch, waiting.id, spec_criteria=["AC-1.1"])
    assert out.task.spec_criteria == ["AC-1.1"]
    last = tasks.history(w.ctx, w.human, waiting.id)[-1]
    assert [c["id"] for c in last.detail["criteria_before"]] == ["AC-1.1", "AC-1.2"]
    assert [c["id"] for c in last.detail["criteria_after"]] == ["AC-1.1"]
    assert w.reload(waiting.id).criteria_changes == []  # no attempt yet: nothing to tell one
    specs.approve(w.ctx, w.human, "demo", draft.id)
    before = dump(w.store)
    with pytest.raises(TaskgateError) as refused:
        tasks.update(w.ctx, arch, waiting.id, spec_criteria=["AC-1.1", "AC-1.2"])
    assert refused.value.code is ErrorCode.FORBIDDEN and "no draft spec" in refused.value.message
    assert dump(w.store) == before
    own = w.task(by=arch)  # criteria of its own, no spec: fixed at birth
    before = dump(w.store)
    with pytest.raises(TaskgateError) as no_spec:
        tasks.update(w.ctx, arch, own.id, criteria=[CriterionInput(text="other")])
    assert no_spec.value.code is ErrorCode.FORBIDDEN
    assert dump(w.store) == before


def test_an_architects_edit_is_refused_when_the_spec_is_approved_before_it_commits(world: World) -> None:
    """The right to edit was decided on the spec as read: the commit is guarded on it, so an
    approval landing in between makes the edit decide again, and be refused."""
    w = world
    w.project()
    arch = w.agent("ann", role=AgentRole.ARCHITECT)
    draft = w.spec(approve=False, n=2)
    t = w.task(spec_id=draft.id, by=arch)
    approved = {"done": False}

    def approve_first(ops: Sequence[Op]) -> None:
        if not approved["done"]:
            approved["done"] = True
            specs.approve(w.ctx, w.human, "demo", draft.id)

    real = w.ctx.store
    w.ctx.store = BeforeCommit(real, approve_first)  # type: ignore[assignment]
    with pytest.raises(TaskgateError) as refused:
        tasks.update(w.ctx, arch, t.id, spec_criteria=["AC-1.1"])
    w.ctx.store = real
    assert approved["done"] and refused.value.code is ErrorCode.FORBIDDEN
    assert w.reload(t.id).spec_criteria == []  # all of the spec's, as created


def test_a_delegated_agent_never_changes_criteria(world: World) -> None:
    w = world
    w.project()
    dee = w.agent("dee", delegations=["human:alice"], on_behalf_of="human:alice")
    arch = w.agent("ann", role=AgentRole.ARCHITECT, delegations=["human:alice"], on_behalf_of="human:alice")
    t = w.task(spec_id=w.spec(n=2).id)
    draft_task = w.task(spec_id=w.spec(approve=False).id)
    before = dump(w.store)
    for who, tid in ((dee, t.id), (arch, draft_task.id)):
        with pytest.raises(TaskgateError) as refused:
            tasks.update(w.ctx, who, tid, spec_criteria=["AC-1.1"] if tid == t.id else ["AC-2.1"])
        assert refused.value.code is ErrorCode.FORBIDDEN
        assert "not a delegated agent" in refused.value.message
    assert dump(w.store) == before


def test_a_humans_change_after_an_attempt_is_in_the_history_and_the_next_brief(any_world: World) -> None:
    w = any_world
    w.project()
    bob = w.agent("bob")
    tid = _failed_once(w, bob)
    tasks.update(w.ctx, w.human, tid, spec_criteria=["AC-1.1"])
    ev = tasks.history(w.ctx, w.human, tid)[-1]
    assert ev.actor == "human:alice" and ev.detail["fields"] == ["spec_criteria"]
    assert [c["verify_ref"] for c in ev.detail["criteria_before"]] == ["tests.Health.t1", "tests.Health.t2"]
    assert [c["verify_ref"] for c in ev.detail["criteria_after"]] == ["tests.Health.t1"]
    assert ev.detail["criteria_changed_after_attempt"] == 1
    claims.claim(w.ctx, bob, "demo", task_id=tid)
    next_brief = brief.for_task(w.ctx, bob, tid)
    assert [c["id"] for c in next_brief["criteria"]] == ["AC-1.1"]
    assert next_brief["criteria_changes"] == [
        {"after_attempt": 1, "by": "human:alice", "removed": ["AC-1.2 (test): tests.Health.t2"], "added": []}
    ]


def test_own_criteria_replaced_by_a_human_say_what_they_ask_now(world: World) -> None:
    w = world
    w.project()
    bob = w.agent("bob")
    c = w.claimed(bob, criteria=[CriterionInput(text="unit", kind=CriterionKind.TEST, verify_ref="t.a")])
    claims.release(w.ctx, bob, c.task.id, c.token, reason="later")
    new = [CriterionInput(text="unit", kind=CriterionKind.TEST, verify_ref="t.b")]
    tasks.update(w.ctx, w.human, c.task.id, criteria=new)
    change = w.reload(c.task.id).criteria_changes[-1]
    assert change.removed == [f"AC-{c.task.id}.1 (test): t.a"] and change.added == [
        f"AC-{c.task.id}.1 (test): t.b"
    ]
    # The same criteria again change nothing a brief should mention.
    tasks.update(w.ctx, w.human, c.task.id, criteria=new)
    assert len(w.reload(c.task.id).criteria_changes) == 1


# -- update_task(status): a human's moves, delegated --------------------------------------------


def _delegate(w: World, name: str = "dee") -> Acting:
    return w.agent(name, delegations=["human:alice"], on_behalf_of="human:alice")


def test_each_human_move_by_status_is_recorded_with_both_ids(any_world: World) -> None:
    w = any_world
    w.project()
    bob = w.agent("bob")
    dee = _delegate(w)

    def escalated() -> str:
        c = w.claimed(bob)
        claims.escalate(w.ctx, bob, c.task.id, c.token, question="which API?")
        return c.task.id

    cases: list[tuple[str, Status, dict[str, object], Status]] = []
    cases.append((w.task().id, Status.CANCELLED, {"note": "not needed"}, Status.CANCELLED))
    cases.append((w.submitted(bob).id, Status.READY, {"findings": ["no test for the 404"]}, Status.READY))
    cases.append((escalated(), Status.READY, {"note": "answered in a note"}, Status.READY))
    blocker = w.task(title="first this").id
    cases.append((escalated(), Status.BLOCKED, {"blocked_by": [blocker]}, Status.BLOCKED))
    spec_task = w.claimed(bob, spec_id=w.spec().id)
    claims.report_failure(
        w.ctx, bob, spec_task.task.id, spec_task.token, kind=FailureKind.SPEC_GAP, findings=["AC unclear"]
    )
    cases.append((spec_task.task.id, Status.BACKLOG, {}, Status.BACKLOG))
    cases.append((w.submitted(bob).id, Status.DONE, {}, Status.DONE))
    for tid, target, args, landed in cases:
        out = tasks.update(w.ctx, dee, tid, status=target, **args)  # type: ignore[arg-type]
        assert out.task.status is landed, (tid, target)
        ev = tasks.history(w.ctx, w.human, tid)[-1]
        assert (ev.actor, ev.on_behalf_of, ev.to_status) == ("agent:dee", "human:alice", landed)
        assert ev.credential_id == dee.credential_id
    assert w.ctx.spec("demo", "SPEC-1").status.value == "draft"  # 'backlog' revised its spec


def test_status_is_refused_without_a_grant_on_own_work_and_for_medium_risk(world: World) -> None:
    w = world
    w.project()
    bob = w.agent("bob")
    dee = _delegate(w)
    ready = w.task()
    worker = w.agent("dee2", delegations=["human:alice"])  # one key: it works, then acts for alice
    mine = w.submitted(worker)
    own_key = acting(worker.principal, on_behalf_of="human:alice")
    medium = w.submitted(bob, risk=Risk.MEDIUM)
    before = dump(w.store)
    with pytest.raises(TaskgateError) as agent:
        tasks.update(w.ctx, bob, ready.id, status=Status.CANCELLED)
    assert agent.value.code is ErrorCode.FORBIDDEN and "on_behalf_of" in agent.value.hint
    with pytest.raises(TaskgateError) as own:
        tasks.update(w.ctx, own_key, mine.id, status=Status.READY, findings=["redo"])
    assert own.value.code is ErrorCode.SELF_ACCEPT
    with pytest.raises(TaskgateError) as risky:
        tasks.update(w.ctx, dee, medium.id, status=Status.DONE)
    assert risky.value.code is ErrorCode.FORBIDDEN and "on the board" in risky.value.message
    with pytest.raises(TaskgateError) as nowhere:
        tasks.update(w.ctx, dee, ready.id, status=Status.DONE)
    assert nowhere.value.code is ErrorCode.WRONG_STATE and nowhere.value.current_status == "ready"
    with pytest.raises(TaskgateError) as mixed:
        tasks.update(w.ctx, dee, ready.id, status=Status.CANCELLED, title="and rename it")
    assert mixed.value.code is ErrorCode.VALIDATION
    with pytest.raises(TaskgateError) as stray:
        tasks.update(w.ctx, dee, ready.id, status=Status.CANCELLED, findings=["x"])
    assert stray.value.code is ErrorCode.VALIDATION
    assert dump(w.store) == before
    # The human on the board still makes the same move in one step.
    assert review.accept(w.ctx, w.human, medium.id).status is Status.DONE


def test_an_edit_settles_a_lapsed_lease_first(world: World) -> None:
    """Expiry is enforced on every access: a task whose last claim lapsed is edited as what it
    is now (here needs_human, its one attempt used), not refused as if still claimed."""
    w = world
    w.project()
    bob = w.agent("bob")
    c = w.claimed(bob, max_attempts=1)
    w.clock.advance(minutes=31)
    out = tasks.update(w.ctx, w.human, c.task.id, criteria=[CriterionInput(text="documented")])
    assert out.task.status is Status.NEEDS_HUMAN
    assert out.task.criteria_changes[-1].after_attempt == 1
