"""Runs as the server keeps them: a revoked key's runs and runs nobody finishes end as errors
(counted toward three in a row), review criteria need the reviewer's answer, the attempt record
says how a submitted attempt ended, and a verifier finds work across its projects."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import (
    AttemptEnding,
    CredentialKind,
    CriterionInput,
    CriterionKind,
    Status,
    VerifierKind,
)
from taskgate.domain.principals import acting
from taskgate.domain.run_report import Evidence
from taskgate.service import claims, keys, projects, review, tasks, verification
from taskgate.service.sweeper import sweep
from tests.service.scenarios import Scene, new_scene, reach
from tests.support.evidence import CONFIG, run_verifier
from tests.support.world import SHA, World


def _verifying(world: World) -> tuple[Scene, str]:
    """A task in needs_verification with a run in progress."""
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    assert scene.verifier is not None
    started = verification.start(world.ctx, scene.verifier, task_id=scene.task_id)
    return scene, started.run.id


def _runs(world: World, task_id: str) -> list[str]:
    return [r.status for r in tasks.runs(world.ctx, world.human, task_id)]


def test_revoking_the_key_ends_its_runs_as_errors_at_once(world: World) -> None:
    scene, run_id = _verifying(world)
    assert world.reload(scene.task_id).live_run == run_id
    assert scene.verifier is not None
    _, warnings = keys.revoke(world.ctx, world.human, scene.verifier.credential_id)
    assert any(scene.task_id in w for w in warnings)
    task = world.reload(scene.task_id)
    assert task.status is Status.NEEDS_VERIFICATION and task.live_run is None
    assert task.verifier_errors_in_row == 1 and task.attempts_used == 0
    [run] = tasks.runs(world.ctx, world.human, scene.task_id)
    assert run.status == "error" and "revoked" in run.summary


def test_revoking_another_key_leaves_runs_alone(world: World) -> None:
    scene, _ = _verifying(world)
    other = keys.create(
        world.ctx, world.human, kind=CredentialKind.VERIFIER, name="other", verifier_kind=VerifierKind.LOCAL
    )
    keys.revoke(world.ctx, world.human, other.credential.id)
    assert _runs(world, scene.task_id) == ["running"]


def test_a_run_nobody_finishes_ends_as_an_error_when_another_verifier_starts(world: World) -> None:
    scene, first = _verifying(world)
    second = world.verifier(name="second")
    with pytest.raises(TaskgateError) as err:  # still within its budget: a live run is a live run
        verification.start(world.ctx, second, task_id=scene.task_id)
    assert err.value.code is ErrorCode.WRONG_STATE
    world.clock.advance(minutes=30 + 15 + 2 * 15)  # grace + the check + commands and reviewer
    again = verification.start(world.ctx, second, task_id=scene.task_id)
    statuses = {r.id: r.status for r in tasks.runs(world.ctx, world.human, scene.task_id)}
    assert statuses == {first: "error", again.run.id: "running"}
    assert world.reload(scene.task_id).verifier_errors_in_row == 1


def test_the_sweeper_ends_runs_nobody_finished_and_the_third_needs_a_human(world: World) -> None:
    scene, _ = _verifying(world)
    assert scene.verifier is not None
    assert sweep(world.ctx).abandoned_runs == []
    for n in range(1, 4):
        world.clock.advance(minutes=76)
        assert sweep(world.ctx).abandoned_runs == [scene.task_id]
        task = world.reload(scene.task_id)
        assert task.verifier_errors_in_row == n
        if n < 3:
            verification.start(world.ctx, scene.verifier, task_id=scene.task_id)
    assert task.status is Status.NEEDS_HUMAN and task.attempts_used == 0
    assert _runs(world, scene.task_id) == ["error", "error", "error"]


def test_review_criteria_without_the_reviewers_answer_end_as_an_error(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    t = world.task(
        criteria=[
            CriterionInput(text="unit", kind=CriterionKind.TEST, verify_ref="tests.test_x"),
            CriterionInput(text="readable"),
        ]
    )
    c = claims.claim(world.ctx, scene.agent, "demo", task_id=t.id)
    claims.submit(world.ctx, scene.agent, t.id, c.token, commit_sha=SHA, evidence="done")
    assert scene.verifier is not None
    run, after = run_verifier(world.ctx, scene.verifier, t.id, Evidence.FAIL)  # no reviewer
    assert run.status == "error" and run.summary == "no reviewer answer for AC-demo-1.2"
    assert after.status is Status.NEEDS_VERIFICATION and after.attempts_used == 0
    reviewer = world.verifier(VerifierKind.REVIEWER, name="rev")
    run, after = run_verifier(world.ctx, scene.verifier, t.id, Evidence.PASS, reviewer=reviewer)
    assert run.status == "passed" and after.status is Status.VERIFIED


def test_a_submitted_attempt_ends_with_its_fate_and_the_counter_agrees(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    assert scene.verifier is not None
    open_ = world.reload(scene.task_id).attempts[-1]
    assert open_.ended_at is None and open_.submission is not None
    run_verifier(world.ctx, scene.verifier, scene.task_id, Evidence.FAIL)
    failed = world.reload(scene.task_id)
    a1 = failed.attempts[0]
    assert (a1.ending, a1.used, failed.attempts_used) == (AttemptEnding.VERIFICATION_FAILED, True, 1)
    token = claims.claim(world.ctx, scene.agent, "demo", task_id=scene.task_id).token
    claims.submit(world.ctx, scene.agent, scene.task_id, token, commit_sha=SHA, evidence="again")
    run_verifier(world.ctx, scene.verifier, scene.task_id, Evidence.PASS)
    review.reopen(world.ctx, world.human, scene.task_id, findings=["also handle unicode"])
    reopened = world.reload(scene.task_id)
    assert [(a.ending, a.used) for a in reopened.attempts] == [
        (AttemptEnding.VERIFICATION_FAILED, True),
        (AttemptEnding.REOPENED, True),
    ]
    assert reopened.attempts_used == sum(a.used for a in reopened.attempts) == 2
    token = claims.claim(world.ctx, scene.agent, "demo", task_id=scene.task_id).token
    claims.submit(world.ctx, scene.agent, scene.task_id, token, commit_sha=SHA, evidence="third")
    run_verifier(world.ctx, scene.verifier, scene.task_id, Evidence.PASS)
    done = review.accept(world.ctx, world.human, scene.task_id)
    assert done.attempts[-1].ending is AttemptEnding.ACCEPTED and not done.attempts[-1].used
    assert done.attempts_used == 2


def test_cancelling_ends_an_open_submitted_attempt(world: World) -> None:
    scene = new_scene(world)
    reach(scene, Status.NEEDS_VERIFICATION)
    cancelled = review.cancel(world.ctx, world.human, scene.task_id, reason="dropped")
    assert (cancelled.attempts[-1].ending, cancelled.attempts[-1].used) == (AttemptEnding.CANCELLED, False)


def test_requeueing_after_three_verifier_errors_ends_the_attempt_unused(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_HUMAN, with_submission=True)
    stuck = world.reload(scene.task_id)
    assert stuck.attempts[-1].ended_at is None  # still waiting for a verdict: reverify may resume it
    requeued = review.resolve(world.ctx, world.human, scene.task_id, review.Resolution.REQUEUE)
    assert requeued.status is Status.READY
    assert (requeued.attempts[-1].ending, requeued.attempts[-1].used, requeued.attempts_used) == (
        AttemptEnding.RESOLVED,
        False,
        0,
    )


def test_a_verifier_finds_work_in_every_project_it_covers_with_verification_on(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    projects.create(world.ctx, world.human, "off", repo="/tmp/r")
    projects.create(world.ctx, world.human, "second", repo="/tmp/r")
    projects.set_verifier_config(world.ctx, world.human, "second", CONFIG)
    projects.set_verification(world.ctx, world.human, "second", True)
    t2 = world.task("second", criteria=[CriterionInput(text="u", kind=CriterionKind.TEST, verify_ref="t")])
    tok = claims.claim(world.ctx, scene.agent, "second", task_id=t2.id).token
    claims.submit(world.ctx, scene.agent, t2.id, tok, commit_sha=SHA, evidence="x")
    t3 = world.task("off")
    tok = claims.claim(world.ctx, scene.agent, "off", task_id=t3.id).token
    claims.submit(world.ctx, scene.agent, t3.id, tok, commit_sha=SHA, evidence="x")
    assert scene.verifier is not None
    assert [t.id for t in verification.waiting(world.ctx, scene.verifier)] == [scene.task_id, t2.id]
    assert [t.id for t in verification.waiting(world.ctx, scene.verifier, "second")] == [t2.id]
    verification.start(world.ctx, scene.verifier, task_id=scene.task_id)  # being verified: not waiting
    assert [t.id for t in verification.waiting(world.ctx, scene.verifier)] == [t2.id]
    scoped = world.verifier(name="scoped")
    keys.revoke(world.ctx, world.human, scoped.credential_id)
    narrow = keys.create(
        world.ctx,
        world.human,
        kind=CredentialKind.VERIFIER,
        name="narrow",
        verifier_kind=VerifierKind.LOCAL,
        projects_=["second"],
    )
    who = keys.authenticate(world.ctx, narrow.secret)
    assert [t.id for t in verification.waiting(world.ctx, acting(who))] == [t2.id]
