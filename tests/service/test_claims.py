"""Claims, leases and tokens: stale tokens are refused and change nothing; expiry needs no sweep."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import AttemptEnding, FailureKind, Phase, SelfReport, Status
from taskgate.service import claims, projects, tasks
from taskgate.service.sweeper import sweep
from tests.support.world import SHA, World, dump
from tests.verifier.support import AMBIGUOUS_PREFIX, ambiguous_commits


def _stale(world: World, call: object) -> None:
    snapshot = dump(world.store)
    with pytest.raises(TaskgateError) as err:
        call()  # type: ignore[operator]
    assert err.value.code is ErrorCode.STALE_CLAIM
    assert dump(world.store) == snapshot


@pytest.mark.parametrize("ending", ["release", "expiry", "submit", "failure", "escalate"])
def test_a_token_stops_working_the_instant_its_claim_ends(any_world: World, ending: str) -> None:
    w = any_world
    w.project()
    bob = w.agent("bob")
    c = w.claimed(bob)
    tid, token = c.task.id, c.token
    if ending == "release":
        claims.release(w.ctx, bob, tid, token)
    elif ending == "expiry":
        w.clock.advance(minutes=30)  # exactly at expiry: expired
    elif ending == "submit":
        claims.submit(w.ctx, bob, tid, token, commit_sha=SHA, evidence="done")
    elif ending == "failure":
        claims.report_failure(w.ctx, bob, tid, token, kind=FailureKind.OTHER, findings=["flaky"])
    else:
        claims.escalate(w.ctx, bob, tid, token, question="which db?")
    if ending == "expiry":
        # Expiry is enforced on access: the first refused call settles it (one commit), the next changes nothing.
        with pytest.raises(TaskgateError) as err:
            claims.heartbeat(w.ctx, bob, tid, token)
        assert err.value.code is ErrorCode.STALE_CLAIM
    for call in (
        lambda: claims.heartbeat(w.ctx, bob, tid, token),
        lambda: claims.release(w.ctx, bob, tid, token),
        lambda: claims.submit(w.ctx, bob, tid, token, commit_sha=SHA, evidence="late"),
        lambda: claims.report_failure(w.ctx, bob, tid, token, kind=FailureKind.OTHER, findings=["x"]),
        lambda: claims.escalate(w.ctx, bob, tid, token, question="?"),
    ):
        _stale(w, call)


def test_a_lapsed_agent_cannot_overwrite_a_newer_attempt(world: World) -> None:
    world.project()
    bob, carol = world.agent("bob"), world.agent("carol")
    first = world.claimed(bob)
    world.clock.advance(minutes=31)
    second = claims.claim(world.ctx, carol, "demo", task_id=first.task.id)
    assert second.task.claim is not None and second.task.claim.attempt == 2
    _stale(
        world, lambda: claims.submit(world.ctx, bob, first.task.id, first.token, commit_sha=SHA, evidence="x")
    )
    done = claims.submit(world.ctx, carol, first.task.id, second.token, commit_sha=SHA, evidence="mine")
    assert done.status is Status.NEEDS_VERIFICATION
    assert [a.ending for a in done.attempts] == [AttemptEnding.EXPIRED, None]  # open until its fate is known
    assert done.attempts[1].submission is not None and done.attempts[1].submission.evidence == "mine"
    assert done.attempts_used == 1  # the expired lease used one


def test_expiry_is_enforced_without_a_sweep(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    c = world.claimed(bob)
    world.clock.advance(minutes=29, seconds=59)
    assert tasks.get(world.ctx, bob, c.task.id).status is Status.CLAIMED
    world.clock.advance(seconds=1)
    t = tasks.get(world.ctx, bob, c.task.id)
    assert t.status is Status.READY and t.claim is None and t.attempts_used == 1
    # and the ready queue has it again: another agent can take it
    assert claims.claim(world.ctx, world.agent("carol"), "demo").task.id == c.task.id


def test_heartbeat_extends_the_lease_and_records_phase_changes(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    c = world.claimed(bob)
    world.clock.advance(minutes=25)
    t = claims.heartbeat(world.ctx, bob, c.task.id, c.token, phase=Phase.TESTING)
    assert t.claim is not None and t.claim.phase is Phase.TESTING
    world.clock.advance(minutes=25)  # 50 minutes after the claim, 25 after the heartbeat
    assert tasks.get(world.ctx, bob, c.task.id).status is Status.CLAIMED
    actions = [e.action for e in tasks.history(world.ctx, bob, c.task.id)]
    assert actions == ["create_ready", "claim", "heartbeat"]
    claims.heartbeat(world.ctx, bob, c.task.id, c.token)  # same phase: no history line
    assert len(tasks.history(world.ctx, bob, c.task.id)) == 3


def test_lease_length_is_bounded(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    t = world.task()
    for bad in (0, 121):
        with pytest.raises(TaskgateError) as err:
            claims.claim(world.ctx, bob, "demo", task_id=t.id, lease_minutes=bad)
        assert err.value.code is ErrorCode.VALIDATION
    c = claims.claim(world.ctx, bob, "demo", task_id=t.id, lease_minutes=120)
    assert c.task.claim is not None and c.task.claim.lease_minutes == 120


def test_claim_token_is_random_and_stored_only_hashed(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    c = world.claimed(bob)
    assert len(c.token) >= 4 + 32  # prefix + 24 random bytes in base64url (192 bits)
    assert all(c.token not in row[3] for row in dump(world.store))


def test_another_credential_cannot_use_the_holders_token(world: World) -> None:
    world.project()
    bob, carol = world.agent("bob"), world.agent("carol")
    c = world.claimed(bob)
    snapshot = dump(world.store)
    with pytest.raises(TaskgateError) as err:
        claims.submit(world.ctx, carol, c.task.id, c.token, commit_sha=SHA, evidence="stolen")
    assert err.value.code is ErrorCode.FORBIDDEN
    assert dump(world.store) == snapshot


def test_the_sweeper_returns_lapsed_tasks_to_the_queue(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    held = [world.claimed(bob).task.id for _ in range(3)]
    world.clock.advance(minutes=31)
    keep = world.claimed(bob).task.id  # claimed after the jump: still live
    report = sweep(world.ctx)
    assert sorted(report.expired) == sorted(held)
    assert world.reload(keep).status is Status.CLAIMED
    assert all(world.reload(t).status is Status.READY for t in held)


def test_a_lease_is_lapsed_exactly_at_its_expiry_for_claim_next_and_the_sweeper(any_world: World) -> None:
    """A claim is live while expires_at > now, so at expires_at == now it has lapsed: claim_task
    without an id and the sweeper must find it too (found by the model-based test)."""
    w = any_world
    w.project()
    bob, carol = w.agent("bob"), w.agent("carol")
    first = w.claimed(bob).task.id
    w.clock.advance(minutes=30)  # exactly the lease
    again = claims.claim(w.ctx, carol, "demo")
    assert again.task.id == first and again.task.attempts_used == 1
    second = w.claimed(bob).task.id
    w.clock.advance(minutes=30)  # both claims made 30 minutes ago
    assert sorted(sweep(w.ctx).expired) == sorted([first, second])
    assert w.reload(second).status is Status.READY and w.reload(first).attempts_used == 2


def test_submit_validates_and_records_who(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    s = world.spec()
    c = world.claimed(bob, spec_id=s.id)
    for kwargs in (
        {"commit_sha": "not-a-sha", "evidence": "x"},
        {"commit_sha": SHA, "evidence": "   "},
        {"commit_sha": SHA, "evidence": "x", "self_report": {"AC-9.9": SelfReport.PASS}},
    ):
        snapshot = dump(world.store)
        with pytest.raises(TaskgateError) as err:
            claims.submit(world.ctx, bob, c.task.id, c.token, **kwargs)  # type: ignore[arg-type]
        assert err.value.code is ErrorCode.VALIDATION
        assert dump(world.store) == snapshot
    t = claims.submit(
        world.ctx,
        bob,
        c.task.id,
        c.token,
        commit_sha=SHA.upper(),
        evidence="tests pass",
        self_report={"AC-1.1": SelfReport.PASS},
    )
    sub = t.last_submission()
    assert sub is not None
    assert (sub.commit_sha, sub.actor, sub.credential_id) == (SHA, bob.actor, bob.credential_id)


def test_report_failure_needs_findings_and_dependency_needs_blockers(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    c = world.claimed(bob)
    for kwargs in (
        {"kind": FailureKind.OTHER, "findings": [" "]},
        {"kind": FailureKind.DEPENDENCY, "findings": ["needs x"]},
        {"kind": FailureKind.OTHER, "findings": ["x"], "blocked_by": ["demo-1"]},
        {"kind": FailureKind.DEPENDENCY, "findings": ["x"], "blocked_by": ["demo-99"]},
    ):
        snapshot = dump(world.store)
        with pytest.raises(TaskgateError) as err:
            claims.report_failure(world.ctx, bob, c.task.id, c.token, **kwargs)  # type: ignore[arg-type]
        assert err.value.code in (ErrorCode.VALIDATION, ErrorCode.NOT_FOUND)
        assert dump(world.store) == snapshot


def test_attempts_exhausted_go_to_needs_human(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    t = world.task(max_attempts=2)
    c = claims.claim(world.ctx, bob, "demo", task_id=t.id)
    after = claims.report_failure(world.ctx, bob, t.id, c.token, kind=FailureKind.OTHER, findings=["one"])
    assert after.status is Status.READY
    c = claims.claim(world.ctx, bob, "demo", task_id=t.id)
    claims.release(world.ctx, bob, t.id, c.token)  # release never uses one
    c = claims.claim(world.ctx, bob, "demo", task_id=t.id)
    after = claims.report_failure(world.ctx, bob, t.id, c.token, kind=FailureKind.OTHER, findings=["two"])
    assert after.status is Status.NEEDS_HUMAN and after.attempts_used == 2
    assert [a.used for a in after.attempts] == [True, False, True]


def test_a_task_id_names_its_project(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    t = world.task()
    c = claims.claim(world.ctx, bob, task_id=t.id)
    assert c.task.id == t.id and c.task.status is Status.CLAIMED


def test_a_project_that_is_not_the_tasks_own_is_refused_and_nothing_is_written(world: World) -> None:
    world.project()
    world.project("other")
    bob = world.agent("bob")
    t = world.task()
    before = dump(world.ctx.store)
    for project, task_id in [("other", t.id), (None, None)]:
        with pytest.raises(TaskgateError) as err:
            claims.claim(world.ctx, bob, project, task_id=task_id)
        assert err.value.code is ErrorCode.VALIDATION
    assert dump(world.ctx.store) == before


def test_claiming_the_next_task_never_skips_a_higher_priority(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    for i in range(10):
        world.task(title=f"low{i}", priority=1)
    high = world.task(title="high", priority=2).id
    assert claims.claim(world.ctx, bob, "demo").task.id == high


def test_claim_next_takes_a_lapsed_claim_of_higher_priority_before_a_ready_task(any_world: World) -> None:
    """Expiry on every access: a claim whose lease ran out is ready again for claim_task
    without an id, ahead of lower-priority work, sweep or not (found by the model-based test)."""
    w = any_world
    w.project()
    bob, carol = w.agent("bob"), w.agent("carol")
    lapsed = w.claimed(bob, priority=1).task.id
    w.task(title="lower", priority=0)
    w.clock.advance(minutes=30)
    again = claims.claim(w.ctx, carol, "demo")
    assert (again.task.id, again.task.attempts_used) == (lapsed, 1)


def test_a_human_resolves_a_task_whose_last_lease_lapsed_without_a_sweep(any_world: World) -> None:
    """Expiry on every access: a lapsed last attempt is in needs_human for resolve too, sweep
    or not (found by the model-based test: resolve answered E_WRONG_STATE, "claimed")."""
    from taskgate.service import review

    w = any_world
    w.project()
    bob = w.agent("bob")
    held = w.claimed(bob, max_attempts=1).task.id
    w.clock.advance(minutes=30)
    after = review.resolve(w.ctx, w.human, held, review.Resolution.REQUEUE, note="try again")
    assert after.status is Status.READY and after.attempts_used == 1
    assert [a.ending for a in after.attempts] == [AttemptEnding.EXPIRED]


@pytest.mark.parametrize("ending", ["release", "failure", "expiry", "requeue"])
def test_a_claim_that_ends_under_a_revised_spec_waits_in_backlog(any_world: World, ending: str) -> None:
    """Tasks wait in backlog while their spec is a draft: a claim that ends after its
    spec was revised goes there, not to the queue, and approval brings it back (found by the
    model-based test: it landed in ready under the draft)."""
    from taskgate.service import review, specs

    w = any_world
    w.project()
    bob = w.agent("bob")
    spec = w.spec()
    c = w.claimed(bob, spec_id=spec.id)
    tid = c.task.id
    specs.revise(w.ctx, w.human, "demo", spec.id, body="clarified")
    assert w.reload(tid).status is Status.CLAIMED  # the holder keeps working
    if ending == "release":
        claims.release(w.ctx, bob, tid, c.token)
    elif ending == "failure":
        claims.report_failure(w.ctx, bob, tid, c.token, kind=FailureKind.OTHER, findings=["flaky"])
    elif ending == "expiry":
        w.clock.advance(minutes=30)
        assert tasks.get(w.ctx, bob, tid).status is Status.BACKLOG
    else:
        claims.escalate(w.ctx, bob, tid, c.token, question="which API?")
        review.resolve(w.ctx, w.human, tid, review.Resolution.REQUEUE, note="go on")
    assert w.reload(tid).status is Status.BACKLOG
    specs.approve(w.ctx, w.human, "demo", spec.id)
    assert w.reload(tid).status is Status.READY


def test_submit_says_an_abbreviation_two_commits_share_names_neither(world: World, tmp_path: Path) -> None:
    """Not "push it": the commit is there, twice. One digit more is taken."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    first, _ = ambiguous_commits(repo)
    projects.create(world.ctx, world.human, "amb", repo=str(repo))
    bob = world.agent("bob")
    c = world.claimed(bob, project="amb")
    snapshot = dump(world.store)
    with pytest.raises(TaskgateError) as err:
        claims.submit(world.ctx, bob, c.task.id, c.token, commit_sha=AMBIGUOUS_PREFIX, evidence="done")
    assert err.value.code is ErrorCode.VALIDATION
    assert err.value.message.startswith(f"commit {AMBIGUOUS_PREFIX} names more than one commit in {repo}")
    assert dump(world.store) == snapshot
    short = first[: len(AMBIGUOUS_PREFIX) + 1]  # the two differ in their 8th digit
    sub = claims.submit(
        world.ctx, bob, c.task.id, c.token, commit_sha=short, evidence="done"
    ).last_submission()
    assert sub is not None and sub.commit_sha == short
