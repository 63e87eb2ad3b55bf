"""The actions the API lists for a task are exactly the ones the services take: for a task in
each state a person meets, every listed action succeeds and every other one is refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from taskgate.domain.errors import TaskgateError
from taskgate.domain.human_actions import HumanAction, human_actions
from taskgate.domain.models import FailureKind, Risk, Status, Task
from taskgate.service import landing, review, tasks
from taskgate.service.claims import escalate, report_failure
from taskgate.service.review import Resolution
from tests.support.world import World

Make = Callable[[World], Task]


def _backlog(w: World) -> Task:
    return w.task(spec_id=w.spec(approve=False).id)


def _ready(w: World) -> Task:
    return w.task()


def _high_risk_submitted(w: World) -> Task:
    return w.submitted(w.agent("exec"), risk=Risk.HIGH)


def _submitted(w: World) -> Task:
    return w.submitted(w.agent("exec"))


STATES: dict[str, Make] = {}


def state(name: str) -> Callable[[Make], Make]:
    def add(fn: Make) -> Make:
        STATES[name] = fn
        return fn

    return add


state("backlog")(_backlog)
state("ready")(_ready)
state("needs_verification, verification off")(_submitted)
state("needs_verification, high risk")(_high_risk_submitted)


@state("needs_verification, medium risk")
def _medium_risk_submitted(w: World) -> Task:
    return w.submitted(w.agent("exec"), risk=Risk.MEDIUM)


@state("claimed")
def _claimed(w: World) -> Task:
    return w.claimed(w.agent("exec")).task


@state("needs_human, escalated")
def _escalated_task(w: World) -> Task:
    agent = w.agent("exec")
    c = w.claimed(agent)
    return escalate(w.ctx, agent, c.task.id, c.token, question="which way?")


@state("needs_human, spec gap, with a spec")
def _spec_gap(w: World) -> Task:
    agent = w.agent("exec")
    c = w.claimed(agent, spec_id=w.spec().id)
    return report_failure(
        w.ctx, agent, c.task.id, c.token, kind=FailureKind.SPEC_GAP, findings=["the spec is silent"]
    )


@state("blocked")
def _blocked(w: World) -> Task:
    return w.task(blocked_by=[w.task().id])


@state("done")
def _done(w: World) -> Task:
    return review.accept(w.ctx, w.human, _submitted(w).id)


@state("cancelled")
def _cancelled(w: World) -> Task:
    return review.cancel(w.ctx, w.human, w.task().id)


def _take(w: World, task: Task, action: HumanAction) -> bool:
    """Whether the services took the action (a refusal raises, or is a batch's answer)."""
    h, tid = w.human, task.id
    match action:
        case HumanAction.ACCEPT:
            review.accept(w.ctx, h, tid)
        case HumanAction.BATCH_ACCEPT:
            return not review.accept_batch(w.ctx, h, [tid]).refused
        case HumanAction.REOPEN:
            review.reopen(w.ctx, h, tid, findings=["look again"])
        case HumanAction.CANCEL:
            review.cancel(w.ctx, h, tid)
        case HumanAction.EDIT:
            tasks.update(w.ctx, h, tid, title="Renamed")
        case HumanAction.QUEUE_HEAD:
            landing.hotfix(w.ctx, h, tid)
        case HumanAction.LEAVE_QUEUE:
            landing.leave(w.ctx, h, tid)
        case HumanAction.BLOCK:
            review.resolve(w.ctx, h, tid, Resolution.BLOCK, blocked_by=[w.task().id])
        case _:
            review.resolve(w.ctx, h, tid, Resolution(action.value))
    return True


def _succeeds(w: World, task: Task, action: HumanAction) -> bool:
    try:
        return _take(w, task, action)
    except TaskgateError:
        return False


@pytest.mark.parametrize("name", list(STATES))
def test_listed_actions_are_exactly_the_ones_the_services_take(world: World, name: str) -> None:
    world.project()
    make = STATES[name]
    listed = set(human_actions(make(world), verification_on=False))
    if name != "cancelled":
        assert listed, f"{name}: a person can always do something (cancel, reopen or edit)"
    taken = {a for a in HumanAction if _succeeds(world, make(world), a)}
    assert listed == taken, f"{name}: listed {sorted(listed)}, the services took {sorted(taken)}"


def test_the_rest_api_answers_a_task_with_its_actions(world: World) -> None:
    from taskgate.api.schemas import TaskOut

    world.project()
    t = _submitted(world)
    assert TaskOut.of(t, verification_on=False).actions == [
        HumanAction.ACCEPT,
        HumanAction.BATCH_ACCEPT,
        HumanAction.REOPEN,
        HumanAction.CANCEL,
    ]
    # With verification on, a submission waits for the verifier: a person can only cancel it.
    assert TaskOut.of(t, verification_on=True).actions == [HumanAction.CANCEL]
    assert TaskOut.of(t).actions is None
    assert world.reload(t.id).status is Status.NEEDS_VERIFICATION
