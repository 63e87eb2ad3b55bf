"""Hardening, at the service level: each test pins one defect and failed before its fix.

Crashes in the middle of a cascade are injected through the Context's checkpoint hook (the
same hook `TASKGATE_FAULT` drives in a real `taskgate serve`, tests/local/test_crash.py): it
raises a BaseException that no service catches, as a process dying there would stop it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import AgentRole, CriterionInput, Risk, SpecStatus, Status
from taskgate.domain.principals import acting
from taskgate.mcp import identity
from taskgate.service import claims, records, review, specs, sweeper, tasks
from taskgate.service.context import put_task
from taskgate.store.port import Item, Op, Put
from tests.support.before_commit import BeforeCommit
from tests.support.world import SHA, World, dump


class Crash(BaseException):
    """The process died here (nothing catches a BaseException that is not an Exception)."""


def crash_at(point: str, after: int = 1) -> Callable[[str], None]:
    hits = {"n": 0}

    def hook(name: str) -> None:
        if name == point:
            hits["n"] += 1
            if hits["n"] >= after:
                raise Crash(name)

    return hook


def consistent(world: World, project: str = "demo") -> list[str]:
    """What the rules forbid, found in the store: an empty list means every task is where its
    spec and blockers say it should be."""
    problems = []
    found, cursor = tasks.list_tasks(world.ctx, world.human, project, limit=200)
    while cursor:
        more, cursor = tasks.list_tasks(world.ctx, world.human, project, limit=200, cursor=cursor)
        found += more
    by_id = {t.id: t for t in found}
    for t in found:
        spec = world.ctx.spec(project, t.spec_id) if t.spec_id else None
        if spec is not None and t.status not in (Status.DONE, Status.CANCELLED) and t.risk is not spec.risk:
            problems.append(f"{t.id} risk {t.risk} under {spec.id} {spec.risk}")
        draft = spec is not None and spec.status is SpecStatus.DRAFT
        if draft and t.status in (Status.READY, Status.BLOCKED):
            problems.append(f"{t.id} {t.status} under a draft spec")
        if spec is not None and not draft and t.status is Status.BACKLOG:
            problems.append(f"{t.id} backlog under an approved spec")
        if t.status is Status.BLOCKED and all(by_id[b].status is Status.DONE for b in t.blocked_by):
            problems.append(f"{t.id} blocked with every blocker done")
    return problems


# -- defect 3: cascades safe to interrupt -----------------------------------------------------


def test_a_claim_refuses_a_ready_task_whose_spec_went_back_to_draft(any_world: World) -> None:
    w = any_world
    w.project()
    agent = w.agent("bob")
    spec = w.spec()
    t1, t2 = (w.task(spec_id=spec.id, spec_criteria=["AC-1.1"]) for _ in range(2))
    w.ctx.checkpoint = crash_at("cascade.spec")
    with pytest.raises(Crash):
        specs.revise(w.ctx, w.human, "demo", spec.id)  # the crash leaves one task ready
    w.ctx.checkpoint = lambda _: None
    left = [t for t in (t1, t2) if w.reload(t.id).status is Status.READY]
    assert len(left) == 1
    with pytest.raises(TaskgateError) as refused:
        claims.claim(w.ctx, agent, "demo", task_id=left[0].id)
    assert refused.value.code is ErrorCode.WRONG_STATE
    assert w.reload(left[0].id).status is Status.BACKLOG  # repaired where it was found
    with pytest.raises(TaskgateError) as nothing:
        claims.claim(w.ctx, agent, "demo")
    assert nothing.value.code is ErrorCode.NOTHING_READY
    assert consistent(w) == []


def test_a_claim_never_lands_under_a_draft_spec_however_the_task_got_ready(any_world: World) -> None:
    """The claim itself checks the spec (in its conditional write), whatever left the task
    ready: here the spec is put back to draft behind the services' back."""
    w = any_world
    w.project()
    agent = w.agent("bob")
    spec = w.spec()
    t = w.task(spec_id=spec.id, spec_criteria=["AC-1.1"])
    item = w.store.get(*records.spec_key("demo", spec.number))
    assert item is not None
    draft = Item(item.pk, item.sk, {**item.data, "status": SpecStatus.DRAFT.value}, item.version + 1)
    w.store.commit([Put(draft, item.version)])
    with pytest.raises(TaskgateError) as refused:
        claims.claim(w.ctx, agent, "demo", task_id=t.id)
    assert refused.value.code is ErrorCode.WRONG_STATE
    assert w.reload(t.id).claim is None and w.reload(t.id).attempts == []


def _approve(w: World, sid: str) -> None:
    specs.approve(w.ctx, w.human, "demo", sid)


def _revise(w: World, sid: str) -> None:
    specs.revise(w.ctx, w.human, "demo", sid)


def _raise_risk(w: World, sid: str) -> None:
    specs.update(w.ctx, w.human, "demo", sid, risk=Risk.HIGH)


CASCADES: dict[str, tuple[bool, str, Callable[[World, str], None]]] = {
    # kind: (spec approved first?, checkpoint, the human action that starts the cascade)
    "approve": (False, "cascade.spec", _approve),
    "revise": (True, "cascade.spec", _revise),
    "risk": (False, "cascade.spec", _raise_risk),
}


@pytest.mark.parametrize("kind", [*CASCADES, "blockers_done"])
def test_the_sweeper_repairs_every_cascade_kind_cut_short_by_a_crash(any_world: World, kind: str) -> None:
    w = any_world
    w.project()
    if kind == "blockers_done":
        blocker = w.task()
        waiting = [w.task(blocked_by=[blocker.id]) for _ in range(3)]
        agent = w.agent("bob")
        c = claims.claim(w.ctx, agent, "demo", task_id=blocker.id)
        claims.submit(w.ctx, agent, blocker.id, c.token, commit_sha=SHA, evidence="done")
        w.ctx.checkpoint = crash_at("cascade.done")
        with pytest.raises(Crash):
            review.accept(w.ctx, w.human, blocker.id)
        assert [w.reload(t.id).status for t in waiting].count(Status.READY) == 1
    else:
        approved, point, action = CASCADES[kind]
        spec = w.spec(approve=approved)
        for _ in range(3):
            w.task(spec_id=spec.id, spec_criteria=["AC-1.1"])
        w.ctx.checkpoint = crash_at(point)
        with pytest.raises(Crash):
            action(w, spec.id)
    w.ctx.checkpoint = lambda _: None
    assert consistent(w) != []  # the crash left work undone
    sweeper.sweep(w.ctx)
    assert consistent(w) == []


def test_an_accept_decides_risk_on_the_spec_as_committed(world: World) -> None:
    """A spec's risk raised while a delegated agent's batch accept is deciding: the accept's
    commit is conditioned on the spec it read, so it cannot land under the old risk."""
    w = world
    w.project()
    bob = w.agent("bob")
    carol = w.agent("carol", delegations=["human:alice"], on_behalf_of="human:alice")
    spec = w.spec(approve=False)
    t = w.task(spec_id=spec.id, spec_criteria=["AC-1.1"])
    _approve(w, spec.id)
    c = claims.claim(w.ctx, bob, "demo", task_id=t.id)
    claims.submit(w.ctx, bob, t.id, c.token, commit_sha=SHA, evidence="done")
    specs.revise(w.ctx, w.human, "demo", spec.id)
    raised = {"done": False}

    def raise_risk_once(ops: Sequence[Op]) -> None:
        if not raised["done"] and any(getattr(op, "item", None) is not None for op in ops):
            raised["done"] = True
            specs.update(w.ctx, w.human, "demo", spec.id, risk=Risk.HIGH)

    w.ctx.store = BeforeCommit(w.store, raise_risk_once)
    out = review.accept_batch(w.ctx, carol, [t.id])
    assert raised["done"]
    assert out.accepted == [] and out.refused[0]["code"] == ErrorCode.FORBIDDEN.value
    assert w.reload(t.id).status is Status.NEEDS_VERIFICATION


# -- defect 6: lowering risk is a human action ------------------------------------------------


def test_an_agent_may_raise_a_drafts_risk_but_never_lower_it(any_world: World) -> None:
    w = any_world
    w.project()
    architect = w.agent("arch", role=AgentRole.ARCHITECT)
    delegated = w.agent("dee", delegations=["human:alice"], on_behalf_of="human:alice")
    spec = w.spec(approve=False, risk=Risk.MEDIUM)
    before = dump(w.store)
    for who in (architect, delegated):
        with pytest.raises(TaskgateError) as refused:
            specs.update(w.ctx, who, "demo", spec.id, risk=Risk.LOW)
        assert refused.value.code is ErrorCode.FORBIDDEN
    assert dump(w.store) == before
    with pytest.raises(TaskgateError):  # so the architect can never approve it
        specs.approve(w.ctx, architect, "demo", spec.id)
    assert specs.update(w.ctx, architect, "demo", spec.id, risk=Risk.HIGH).risk is Risk.HIGH
    assert specs.update(w.ctx, w.human, "demo", spec.id, risk=Risk.LOW).risk is Risk.LOW  # a human may


# -- defect 7: expiry on every read -----------------------------------------------------------


def test_every_read_shows_a_lapsed_claim_as_lapsed(any_world: World) -> None:
    w = any_world
    w.project()
    bob = w.agent("bob")
    c = w.claimed(bob)
    w.clock.advance(minutes=31)
    ready, _ = tasks.list_tasks(w.ctx, w.human, "demo", status=Status.READY)
    assert [t.id for t in ready] == [c.task.id]
    claimed, _ = tasks.list_tasks(w.ctx, w.human, "demo", status=Status.CLAIMED)
    assert claimed == []
    w.claimed(bob)  # a second task, lapsed too
    w.clock.advance(minutes=31)
    everything, _ = tasks.list_tasks(w.ctx, w.human, "demo")
    assert {t.status for t in everything} == {Status.READY}
    assert all(t.claim is None for t in everything)
    # next_ready orders equal priority per caller (domain/spread.py): compare the tasks, not the order
    assert sorted(t.id for t in tasks.next_ready(w.ctx, bob, "demo", limit=5)) == sorted(
        t.id for t in everything
    )


def test_a_holders_write_is_refused_once_the_lease_lapsed_between_check_and_commit(any_world: World) -> None:
    """The conditional write itself checks the lease: time passing after the token check (a
    slow request, a paused process) cannot let a lapsed holder write."""
    w = any_world
    w.project()
    bob = w.agent("bob")
    c = w.claimed(bob)

    def late(point: str) -> None:
        if point == "holder.commit":
            w.clock.advance(minutes=31)

    w.ctx.checkpoint = late
    with pytest.raises(TaskgateError) as refused:
        claims.submit(w.ctx, bob, c.task.id, c.token, commit_sha=SHA, evidence="done")
    assert refused.value.code is ErrorCode.STALE_CLAIM
    after = w.reload(c.task.id)
    assert after.status is Status.READY and after.last_submission() is None


# -- defect 8 ---------------------------------------------------------------------------------


def test_agent_id_is_matched_without_regard_to_case(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    token = identity.bind(bob.principal)
    try:
        for named in ("Bob", "agent:Bob", "AGENT:BOB", " bob "):
            assert identity.who(named).actor == "agent:bob"
        with pytest.raises(TaskgateError) as other:
            identity.who("Carol")
        assert other.value.code is ErrorCode.IDENTITY_MISMATCH
    finally:
        identity.unbind(token)
    dee = world.agent("dee", delegations=["human:alice"])
    assert acting(dee.principal, on_behalf_of="human:Alice").on_behalf_of == "human:alice"


@pytest.mark.parametrize("action", ["cancel", "accept", "reopen"])
def test_a_human_action_racing_an_agents_write_is_retried_not_refused(any_world: World, action: str) -> None:
    w = any_world
    w.project()
    bob = w.agent("bob")
    if action == "cancel":
        c = w.claimed(bob)
        tid = c.task.id

        def racer() -> None:
            claims.heartbeat(w.ctx, bob, tid, c.token, note="still on it")
    else:
        tid = w.submitted(bob).id

        def racer() -> None:  # another write to the task item lands first (e.g. a run starting)
            task = w.ctx.task(tid)
            w.store.commit([put_task(task, task.model_copy(update={"updated_at": w.clock.now()}))])

    raced = {"done": False}

    def once(ops: Sequence[Op]) -> None:
        if not raced["done"]:
            raced["done"] = True
            racer()

    w.ctx.store = BeforeCommit(w.store, once)
    if action == "cancel":
        out = review.cancel(w.ctx, w.human, tid, reason="not needed")
        assert out.status is Status.CANCELLED
    elif action == "accept":
        assert review.accept(w.ctx, w.human, tid).status is Status.DONE
    else:
        assert review.reopen(w.ctx, w.human, tid, findings=["again"]).status is Status.READY
    assert raced["done"]


@pytest.mark.parametrize("what", ["task", "spec"])
def test_a_create_retried_with_its_request_id_answers_the_first_result(any_world: World, what: str) -> None:
    w = any_world
    w.project()
    bob = w.agent("bob")

    def create(request_id: str, title: str = "Once") -> str:
        if what == "task":
            return tasks.create(
                w.ctx, bob, "demo", title=title, criteria=[CriterionInput(text="x")], request_id=request_id
            ).task.id
        return specs.create(
            w.ctx, bob, "demo", title=title, criteria=[CriterionInput(text="x")], request_id=request_id
        ).id

    first = create("req-1")
    before = dump(w.store)
    assert create("req-1") == first  # the retry of a lost response
    assert dump(w.store) == before
    with pytest.raises(TaskgateError) as reused:
        create("req-1", title="Something else")
    assert reused.value.code is ErrorCode.CONFLICT
    assert dump(w.store) == before
    assert create("req-2") != first
    carol = w.agent("carol")  # request ids are per caller: another agent's req-1 is its own
    if what == "task":
        other = tasks.create(
            w.ctx, carol, "demo", title="Once", criteria=[CriterionInput(text="x")], request_id="req-1"
        ).task.id
    else:
        other = specs.create(
            w.ctx, carol, "demo", title="Once", criteria=[CriterionInput(text="x")], request_id="req-1"
        ).id
    assert other != first


def test_racing_retries_of_one_request_create_one_task(race_world: World) -> None:
    w = race_world
    w.project()
    bob = w.agent("bob")
    results: list[str] = []
    errors: list[BaseException] = []
    gate = threading.Barrier(8)

    def go() -> None:
        try:
            gate.wait()
            results.append(
                tasks.create(
                    w.ctx, bob, "demo", title="Once", criteria=[CriterionInput(text="x")], request_id="r"
                ).task.id
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(results)) == 1 and len(results) == 8
    listed, _ = tasks.list_tasks(w.ctx, w.human, "demo")
    assert [t.id for t in listed] == results[:1]


def test_list_tasks_filters_by_claimer(any_world: World) -> None:
    w = any_world
    w.project()
    bob, carol = w.agent("bob"), w.agent("carol")
    mine = w.claimed(bob).task.id
    w.claimed(carol)
    w.task()
    for name in ("agent:bob", "bob", "Bob"):
        found, _ = tasks.list_tasks(w.ctx, w.human, "demo", claimed_by=name)
        assert [t.id for t in found] == [mine]


# -- defect 2: notes capped, get_task paged -----------------------------------------------------


def test_notes_per_task_are_capped(any_world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    w = any_world
    w.project()
    t = w.task()
    monkeypatch.setattr(tasks, "MAX_NOTES", 5)  # the mechanism; the real cap is checked below
    for i in range(5):
        tasks.add_note(w.ctx, w.human, t.id, f"note {i}")
    before = dump(w.store)
    with pytest.raises(TaskgateError) as full:
        tasks.add_note(w.ctx, w.human, t.id, "one too many")
    assert full.value.code is ErrorCode.VALIDATION and "5" in full.value.message
    # No argument can fix a full task: the hint says what to do instead of "fix the arguments".
    assert full.value.hint == (
        "No call adds another note to this task: record what others need with log_decision, "
        "or ask a human to put it in the task's description."
    )
    assert dump(w.store) == before


def test_the_real_note_cap_is_a_hundred(world: World) -> None:
    world.project()
    t = world.task()
    for i in range(tasks.MAX_NOTES):
        tasks.add_note(world.ctx, world.human, t.id, f"note {i}")
    with pytest.raises(TaskgateError):
        tasks.add_note(world.ctx, world.human, t.id, "101st")
    assert tasks.MAX_NOTES == 100


def test_get_task_pages_notes_and_history(any_world: World) -> None:
    w = any_world
    w.project()
    t = w.task()
    for i in range(7):
        tasks.add_note(w.ctx, w.human, t.id, f"note {i}")
        tasks.update(w.ctx, w.human, t.id, title=f"title {i}")
    seen: list[str] = []
    cursor = None
    while True:
        page, cursor = tasks.notes_page(w.ctx, w.human, t.id, limit=3, cursor=cursor)
        assert len(page) <= 3
        seen += [n.body for n in page]
        if cursor is None:
            break
    assert seen == [f"note {i}" for i in range(7)]
    actions: list[str] = []
    cursor = None
    while True:
        events, cursor = tasks.history_page(w.ctx, w.human, t.id, limit=3, cursor=cursor)
        actions += [e.action for e in events]
        if cursor is None:
            break
    assert actions == ["create_ready"] + ["updated"] * 7


def test_a_claim_whose_brief_cannot_be_built_commits_nothing(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    t = world.task()
    before = dump(world.store)

    def broken(task: Any, project: Any, spec: Any) -> dict[str, Any]:
        raise RuntimeError("brief failed")

    with pytest.raises(RuntimeError):
        claims.claim(world.ctx, bob, "demo", task_id=t.id, brief_of=broken)
    assert dump(world.store) == before
    got = claims.claim(world.ctx, bob, "demo", task_id=t.id, brief_of=lambda task, p, s: {"id": task.id})
    assert got.brief == {"id": t.id}
