"""What a verdict leaves on the task, through the services: why a task waits for a
human, whichever move put it there; a spec error's path; evidence stored as plain text whatever a
verifier sends; a verifier's view of each project's queue; flags and states per attempt."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import FailedTest, FailureKind, Status, WhyHuman
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence, EvidenceSource, RunReport
from taskgate.domain.taskview import attempt_state, flags
from taskgate.mcp import views
from taskgate.service import claims, projects, review, tasks, verification
from tests.service.scenarios import new_scene, reach, verify
from tests.support.evidence import CHECK, REPORT_PATH
from tests.support.world import SHA, World
from tests.support.world import dump as snapshot


def test_an_escalation_says_its_question(world: World) -> None:
    scene = new_scene(world)
    reach(scene, Status.NEEDS_HUMAN)  # by escalate(question="which API?")
    task = world.reload(scene.task_id)
    assert task.needs_human is not None
    assert (task.needs_human.why, task.needs_human.reason) == (WhyHuman.ESCALATED, "escalated: which API?")
    assert task.needs_human.suggested is None
    assert task.needs_human.by == scene.agent.actor and task.needs_human.attempt == 1
    # Requeued, it no longer waits for a human, and says no reason.
    review.resolve(world.ctx, world.human, scene.task_id, review.Resolution.REQUEUE)
    assert world.reload(scene.task_id).needs_human is None


@pytest.mark.parametrize("kind", [FailureKind.SPEC_GAP, FailureKind.DESIGN_CONFLICT])
def test_a_reported_failure_says_its_kind_and_findings(world: World, kind: FailureKind) -> None:
    scene = new_scene(world)
    reach(scene, Status.CLAIMED)
    claims.report_failure(
        world.ctx,
        scene.agent,
        scene.task_id,
        scene.token,
        kind=kind,
        findings=["AC-1 contradicts AC-2", "why"],
    )
    why = world.reload(scene.task_id).needs_human
    assert why is not None and why.why is WhyHuman.REPORTED_FAILURE and why.failure_kind is kind
    assert why.reason == f"report_failure ({kind.value}): AC-1 contradicts AC-2; why"


def test_three_verifier_errors_say_so_with_the_last_error(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_HUMAN, with_submission=True)  # three "checkout failed" errors
    why = world.reload(scene.task_id).needs_human
    assert why is not None and why.why is WhyHuman.VERIFIER_ERRORS
    assert why.reason == "3 verifier errors in a row; the last: checkout failed"
    assert why.suggested == "reverify"
    assert scene.verifier is not None and why.by == scene.verifier.actor


def test_attempts_used_up_say_how_the_last_one_ended(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    projects.update_settings(world.ctx, world.human, "demo", max_attempts=1)
    reach(scene, Status.NEEDS_VERIFICATION)
    verify(scene, Evidence.FAIL)
    task = world.reload(scene.task_id)
    assert task.status is Status.NEEDS_HUMAN and task.needs_human is not None
    assert task.needs_human.why is WhyHuman.ATTEMPTS_USED_UP
    assert task.needs_human.reason.startswith(
        "attempts used up (1 of 1); the last failed verification: 1 criterion without positive evidence"
    )


def test_a_spec_error_waits_for_a_human_and_verify_again_resumes(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    verify(scene, Evidence.AMBIGUOUS)
    task = world.reload(scene.task_id)
    assert (task.status, task.attempts_used, task.findings) == (Status.NEEDS_HUMAN, 0, [])
    assert task.needs_human is not None and task.needs_human.why is WhyHuman.SPEC_ERROR
    assert task.needs_human.reason == "spec error: AC-demo-1.1 ambiguous in the report"
    assert task.needs_human.suggested is None  # its criteria are its own: no spec to revise
    assert [r.status for r in tasks.runs(world.ctx, world.human, scene.task_id)] == ["spec_error"]
    assert attempt_state(task, task.attempts[0], True) == "submitted, waiting for a human"
    # Once the spec is fixed the same submission can be verified again; no attempt was used.
    review.resolve(world.ctx, world.human, scene.task_id, review.Resolution.REVERIFY)
    verify(scene, Evidence.PASS)
    done = world.reload(scene.task_id)
    assert (done.status, done.attempts_used, done.needs_human) == (Status.VERIFIED, 0, None)


def test_a_missing_commit_goes_with_nothing_else(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    assert scene.verifier is not None
    started = verification.start(world.ctx, scene.verifier, task_id=scene.task_id)
    before = snapshot(world.store)
    with pytest.raises(TaskgateError) as err:
        verification.finish(
            world.ctx,
            scene.verifier,
            scene.task_id,
            started.run.id,
            RunReport(checks={CHECK: CheckResult(exit_code=0)}, results={}, commit_missing=True),
        )
    assert err.value.code is ErrorCode.VALIDATION and snapshot(world.store) == before
    run, task = verification.finish(
        world.ctx,
        scene.verifier,
        scene.task_id,
        started.run.id,
        RunReport(checks={}, results={}, commit_missing=True),
    )
    assert run.status == "failed" and task.status is Status.READY and task.attempts_used == 1
    assert task.findings[-1].summary == f"commit {SHA} is not in /tmp/repo: push it, then submit again"


def test_evidence_is_stored_plain_whatever_the_verifier_sends(world: World) -> None:
    """The server strips escapes itself: a verifier of another version (or a careless one)
    cannot store them."""
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    assert scene.verifier is not None
    started = verification.start(world.ctx, scene.verifier, task_id=scene.task_id)
    [c] = started.work["criteria"]
    red = "\x1b[31m"
    run, task = verification.finish(
        world.ctx,
        scene.verifier,
        scene.task_id,
        started.run.id,
        RunReport(
            checks={
                CHECK: CheckResult(exit_code=1, output_tail=f"{red}E   boom\x1b[0m\r\n\x1b]0;title\x07end")
            },
            results={
                c["id"]: CriterionResult(
                    result=Evidence.FAIL,
                    detail=f"1 test failed: {red}t\x1b[0m",
                    source=EvidenceSource(check=CHECK, report=REPORT_PATH, ref=c["verify_ref"]),
                    failures=[FailedTest(name=f"{red}t", message=f"{red}assert\x00 1 == 2\x1b[0m")],
                )
            },
        ),
    )
    assert run.checks[CHECK]["output_tail"] == "E   boom\nend"
    assert run.evidence[c["id"]]["detail"] == "1 test failed: t"
    assert run.evidence[c["id"]]["failures"] == [{"name": "t", "message": "assert 1 == 2"}]
    [finding] = task.findings
    assert finding.checks[0].output_end == "E   boom\nend"
    assert finding.criteria[0].tests[0].message == "assert 1 == 2"


def test_a_verifier_sees_each_projects_queue(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    assert scene.verifier is not None
    _, queues = verification.queues(world.ctx, scene.verifier)
    assert [(q.project, q.verification_on, q.waiting, q.running, q.for_human) for q in queues] == [
        ("demo", True, 1, 0, 0)
    ]
    verification.start(world.ctx, scene.verifier, task_id=scene.task_id)
    items, queues = verification.queues(world.ctx, scene.verifier, "demo")
    assert items == [] and (queues[0].waiting, queues[0].running) == (0, 1)
    projects.set_verification(world.ctx, world.human, "demo", False)
    items, queues = verification.queues(world.ctx, scene.verifier)
    assert items == [] and [(q.verification_on, q.for_human) for q in queues] == [(False, 1)]
    # A project with verification off and nothing submitted is left out, unless asked about.
    projects.create(world.ctx, world.human, "quiet", repo="/tmp/repo")
    assert [q.project for q in verification.queues(world.ctx, scene.verifier)[1]] == ["demo"]
    assert [q.project for q in verification.queues(world.ctx, scene.verifier, "quiet")[1]] == ["quiet"]


def test_flags_describe_the_current_attempt_and_states_say_where_work_waits(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.CLAIMED)
    cid = world.reload(scene.task_id).criteria[0].id
    claims.submit(
        world.ctx,
        scene.agent,
        scene.task_id,
        scene.token,
        commit_sha=SHA,
        evidence="ok",
        self_report={cid: "pass"},
    )
    task = world.reload(scene.task_id)
    assert attempt_state(task, task.attempts[0], True) == "submitted, waiting for verification"
    assert attempt_state(task, task.attempts[0], False) == "submitted, waiting for a human"
    verify(scene, Evidence.FAIL)
    task = world.reload(scene.task_id)
    assert [(f.kind, f.attempt, f.criteria) for f in flags(task)] == [("self_report_mismatch", 1, (cid,))]
    scene.token = claims.claim(world.ctx, scene.agent, "demo", task_id=scene.task_id).token
    task = world.reload(scene.task_id)
    assert flags(task) == []  # attempt 2 is under way; attempt 1 keeps its own
    view = views.task(task, True)
    assert [(a.number, a.state, a.self_report_mismatch) for a in view.attempts] == [
        (1, "verification failed", [cid]),
        (2, "in progress", []),
    ]
    claims.submit(world.ctx, scene.agent, scene.task_id, scene.token, commit_sha=SHA, evidence="ok")
    verify(scene, None, error="disk full")
    assert [(f.kind, f.count, f.attempt) for f in flags(world.reload(scene.task_id))] == [
        ("verifier_errors", 1, 2)
    ]
