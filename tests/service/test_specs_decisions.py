"""Specs, tasks' criteria, decisions, search and the brief through the services."""

from __future__ import annotations

import json

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import AgentRole, CriterionInput, CriterionKind, Risk, SpecStatus, Status
from taskgate.domain.specs import render_markdown
from taskgate.service import brief, decisions, specs, tasks
from tests.support.world import World, dump


def test_architect_approves_low_risk_specs_only_and_approval_moves_backlog(world: World) -> None:
    world.project()
    ann = world.agent("ann", role=AgentRole.ARCHITECT)
    low = specs.create(
        world.ctx, ann, "demo", title="Low", risk=Risk.LOW, criteria=[CriterionInput(text="works")]
    )
    medium = specs.create(
        world.ctx, ann, "demo", title="Medium", risk=Risk.MEDIUM, criteria=[CriterionInput(text="works")]
    )
    waiting = world.task(by=ann, spec_id=low.id)
    assert waiting.status is Status.BACKLOG
    snapshot = dump(world.store)
    with pytest.raises(TaskgateError) as err:
        specs.approve(world.ctx, ann, "demo", medium.id)
    assert err.value.code is ErrorCode.FORBIDDEN
    assert dump(world.store) == snapshot
    approved, moved = specs.approve(world.ctx, ann, "demo", low.id)
    assert approved.status is SpecStatus.APPROVED and not approved.approved_as_human
    assert moved == [waiting.id] and world.reload(waiting.id).status is Status.READY
    exec_ = world.agent("eve")
    with pytest.raises(TaskgateError) as err:
        specs.approve(world.ctx, exec_, "demo", medium.id)
    assert err.value.code is ErrorCode.FORBIDDEN


def test_spec_needs_criteria_and_is_immutable_once_approved(world: World) -> None:
    world.project()
    with pytest.raises(TaskgateError) as err:
        specs.create(world.ctx, world.human, "demo", title="x", criteria=[])
    assert err.value.code is ErrorCode.EMPTY_CRITERIA
    with pytest.raises(TaskgateError) as err:
        specs.create(
            world.ctx,
            world.human,
            "demo",
            title="x",
            criteria=[CriterionInput(text="t", kind=CriterionKind.TEST)],
        )
    assert err.value.code is ErrorCode.VALIDATION  # a test criterion needs verify_ref
    s = world.spec()
    with pytest.raises(TaskgateError) as err:
        specs.update(world.ctx, world.human, "demo", s.id, title="changed")
    assert err.value.code is ErrorCode.WRONG_STATE
    revised = specs.revise(world.ctx, world.human, "demo", s.id, body="new body")
    assert (revised.status, revised.revision, revised.body) == (SpecStatus.DRAFT, 2, "new body")
    md = render_markdown(specs.approve(world.ctx, world.human, "demo", s.id)[0])
    assert md.startswith(f"# {s.id}: Health endpoint") and "**AC-1.1** (test) criterion 1" in md


def test_task_without_criteria_is_refused(world: World) -> None:
    world.project()
    snapshot = dump(world.store)
    with pytest.raises(TaskgateError) as err:
        tasks.create(world.ctx, world.human, "demo", title="vague")
    assert err.value.code is ErrorCode.EMPTY_CRITERIA
    assert dump(world.store) == snapshot


def test_warns_when_a_test_criterion_is_on_another_open_task(world: World) -> None:
    world.project()
    s = world.spec(n=2)
    first = tasks.create(world.ctx, world.human, "demo", title="one", spec_id=s.id, spec_criteria=["AC-1.1"])
    assert first.warnings == []
    second = tasks.create(world.ctx, world.human, "demo", title="two", spec_id=s.id)
    [warning] = second.warnings
    assert warning.startswith(f"test criterion 'tests.Health.t1' is also on open task {first.task.id}: ")
    assert "it must pass on both" in warning and f"block it on {first.task.id}" in warning
    third = tasks.create(
        world.ctx, world.human, "demo", title="three", spec_id=s.id, spec_criteria=["AC-1.2"]
    )
    assert len(third.warnings) == 1 and second.task.id in third.warnings[0]


def test_agents_cannot_write_status(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    t = world.task()
    with pytest.raises(TaskgateError) as err:
        tasks.update(world.ctx, bob, t.id, status="done")
    assert err.value.code is ErrorCode.FORBIDDEN
    assert tasks.update(world.ctx, bob, t.id, priority=7).task.priority == 7


def test_ready_queue_is_ordered_by_priority_then_age(world: World) -> None:
    world.project()
    ids = [world.task(title=f"t{p}", priority=p).id for p in (1, 5, 5, 0)]
    listed, _ = tasks.list_tasks(world.ctx, world.human, "demo", status=Status.READY)
    assert [t.id for t in listed] == [ids[1], ids[2], ids[0], ids[3]]


def test_next_tasks_spread_agents_over_equal_tasks_and_keep_priority_first(world: World) -> None:
    """Each agent sees equal-priority tasks in its own stable order; priority still dominates."""
    world.project()
    low = world.task(title="low", priority=1).id
    equal = [world.task(title=f"mid{i}", priority=5).id for i in range(10)]
    high = world.task(title="high", priority=9).id
    agents = [world.agent(f"a{i}") for i in range(8)]
    seen = [[t.id for t in tasks.next_ready(world.ctx, a, "demo", limit=12)] for a in agents]
    for order in seen:
        assert order[0] == high and order[-1] == low
        assert sorted(order[1:-1]) == sorted(equal)
    assert len({order[1] for order in seen}) > 1  # not every agent's first pick is the same
    assert len({tuple(order) for order in seen}) > 1
    again = [t.id for t in tasks.next_ready(world.ctx, agents[0], "demo", limit=12)]
    assert again == seen[0]  # stable for one caller
    # A short list is the head of the caller's long one: the best band first.
    assert [t.id for t in tasks.next_ready(world.ctx, agents[1], "demo", limit=3)] == seen[1][:3]


def test_next_tasks_of_an_unknown_project_is_not_found_and_of_an_idle_one_empty(world: World) -> None:
    world.project()
    agent = world.agent("a")
    assert tasks.next_ready(world.ctx, agent, "demo") == []
    with pytest.raises(TaskgateError) as caught:
        tasks.next_ready(world.ctx, agent, "nope")
    assert caught.value.code is ErrorCode.NOT_FOUND


def test_a_task_just_shown_first_to_one_agent_goes_last_in_the_next_agents_list(world: World) -> None:
    """get_next_tasks remembers each caller's first task for a moment (service/offers.py):
    another agent looking meanwhile does not get it first, while the first agent still does."""
    world.project()
    equal = {world.task(title=f"t{i}", priority=5).id for i in range(4)}
    a, b = world.agent("a"), world.agent("b")
    first_a = tasks.next_ready(world.ctx, a, "demo", limit=4)
    seen_b = [t.id for t in tasks.next_ready(world.ctx, b, "demo", limit=4)]
    assert set(seen_b) == equal and seen_b[-1] == first_a[0].id != seen_b[0]
    assert tasks.next_ready(world.ctx, a, "demo", limit=4)[0].id == first_a[0].id


def test_list_tasks_pages_with_cursors(any_world: World) -> None:
    w = any_world
    w.project()
    made = [w.task(title=f"t{i}").id for i in range(7)]
    seen: list[str] = []
    cursor = None
    while True:
        page, cursor = tasks.list_tasks(w.ctx, w.human, "demo", limit=3, cursor=cursor)
        seen += [t.id for t in page]
        if cursor is None:
            break
    assert seen == made


def test_superseded_decisions_never_reach_the_brief(world: World) -> None:
    world.project()
    s = world.spec()
    old = decisions.log(
        world.ctx, world.human, "demo", title="Health returns plain text", body="health text", spec_id=s.id
    )
    new = decisions.log(
        world.ctx,
        world.human,
        "demo",
        title="Health returns JSON",
        body="health json",
        spec_id=s.id,
        supersedes=old.id,
    )
    decisions.log(world.ctx, world.human, "demo", title="Use structured logging", body="logs as json")
    with pytest.raises(TaskgateError):
        decisions.log(world.ctx, world.human, "demo", title="again", supersedes=old.id)
    t = world.task(spec_id=s.id, title="Health endpoint JSON")
    b = brief.for_task(world.ctx, world.human, t.id)
    ids = [d["id"] for d in b["decisions"]]
    assert old.id not in ids and ids[0] == new.id
    assert len(json.dumps(b)) <= 8000
    live = decisions.list_decisions(world.ctx, world.human, "demo")
    assert old.id not in [d.id for d in live]
    hits = decisions.search(world.ctx, world.human, "demo", "health json")
    assert hits[0]["id"] in (new.id, t.id) and old.id not in [h["id"] for h in hits]


def test_brief_carries_findings_of_earlier_attempts(world: World) -> None:
    from taskgate.domain.models import FailureKind
    from taskgate.service import claims

    world.project()
    bob = world.agent("bob")
    c = world.claimed(bob)
    claims.report_failure(
        world.ctx,
        bob,
        c.task.id,
        c.token,
        kind=FailureKind.OTHER,
        findings=["db migration missing"],
        learned="run make migrate first",
    )
    c2 = claims.claim(world.ctx, bob, "demo", task_id=c.task.id)
    b = brief.for_task(world.ctx, bob, c.task.id, task=c2.task)
    assert b["previous_attempts"] == [
        {
            "attempt": 1,
            "ending": "failed",
            "failure_kind": "other",
            "findings": ["db migration missing"],
            "learned": "run make migrate first",
        }
    ]


def test_a_lone_surrogate_in_a_title_is_refused_by_the_services_too(any_world: World) -> None:
    """The interfaces refuse it first; a service called directly answers E_VALIDATION and writes
    nothing, instead of letting pydantic's error escape (found by the model-based test)."""
    w = any_world
    w.project()
    t = w.task()
    bad = "title \ud800"
    crit = [CriterionInput(text="works")]
    calls = [
        lambda: tasks.create(w.ctx, w.human, "demo", title=bad, criteria=crit),
        lambda: tasks.update(w.ctx, w.human, t.id, title=bad),
        lambda: specs.create(w.ctx, w.human, "demo", title=bad, criteria=crit),
    ]
    for call in calls:
        snapshot = dump(w.store)
        with pytest.raises(TaskgateError) as err:
            call()
        assert err.value.code is ErrorCode.VALIDATION and "Unicode" in err.value.message
        assert dump(w.store) == snapshot
