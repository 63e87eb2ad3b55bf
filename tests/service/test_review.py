"""Accepting work: who may, in which state, and what moves with it."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.lifecycle import Action
from taskgate.domain.models import Risk, Status, WhyHuman
from taskgate.domain.principals import acting
from taskgate.domain.run_report import Evidence
from taskgate.service import brief, projects, review, verification
from tests.service.scenarios import new_scene, reach, reverify, verify
from tests.support.world import World, dump


def test_the_submitting_credential_cannot_accept_whatever_it_names(world: World) -> None:
    world.project()
    bob = world.agent("bob", delegations=["human:alice"])
    t = world.submitted(bob)
    as_alice = acting(bob.principal, on_behalf_of="human:alice")
    snapshot = dump(world.store)
    for who in (bob, as_alice):
        with pytest.raises(TaskgateError) as err:
            review.accept(world.ctx, who, t.id)
        assert err.value.code in (ErrorCode.SELF_ACCEPT, ErrorCode.FORBIDDEN)
    # with the delegation the rule that answers is self-accept, not a missing permission
    with pytest.raises(TaskgateError) as err:
        review.accept(world.ctx, as_alice, t.id)
    assert err.value.code is ErrorCode.SELF_ACCEPT
    result = review.accept_batch(world.ctx, as_alice, [t.id])
    assert result.accepted == [] and result.refused[0]["code"] == "E_SELF_ACCEPT"
    assert dump(world.store) == snapshot


def test_an_argument_naming_another_agent_is_an_identity_mismatch(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    with pytest.raises(TaskgateError) as err:
        acting(bob.principal, claimed_actor="agent:carol")
    assert err.value.code is ErrorCode.IDENTITY_MISMATCH
    assert acting(bob.principal, claimed_actor="agent:bob").actor == "agent:bob"


def test_on_behalf_of_needs_a_delegation(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    with pytest.raises(TaskgateError) as err:
        acting(bob.principal, on_behalf_of="human:alice")
    assert err.value.code is ErrorCode.FORBIDDEN


def test_a_delegated_agent_accepts_low_risk_work_of_others_only(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    carol = world.agent("carol", delegations=["human:alice"], on_behalf_of="human:alice")
    low = world.submitted(bob)
    medium_spec = world.spec(risk=Risk.MEDIUM)
    medium = world.submitted(bob, spec_id=medium_spec.id)
    with pytest.raises(TaskgateError) as err:
        review.accept(world.ctx, carol, medium.id)
    assert err.value.code is ErrorCode.FORBIDDEN
    done = review.accept(world.ctx, carol, low.id)
    assert done.status is Status.DONE
    from taskgate.service import tasks

    ev = tasks.history(world.ctx, world.human, low.id)[-1]
    assert (ev.actor, ev.on_behalf_of) == ("agent:carol", "human:alice")


def test_an_agent_without_delegation_cannot_accept(world: World) -> None:
    world.project()
    bob, carol = world.agent("bob"), world.agent("carol")
    t = world.submitted(bob)
    with pytest.raises(TaskgateError) as err:
        review.accept(world.ctx, carol, t.id)
    assert err.value.code is ErrorCode.FORBIDDEN


def test_batch_accept_takes_low_risk_only(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    lows = [world.submitted(bob).id for _ in range(3)]
    high = world.submitted(bob, spec_id=world.spec(risk=Risk.HIGH).id).id
    result = review.accept_batch(world.ctx, world.human, [*lows, high])
    assert sorted(t.id for t in result.accepted) == sorted(lows)
    assert result.refused == [
        {
            "task_id": high,
            "code": "E_FORBIDDEN",
            "message": f"{high} is high risk: accept it on its own, not in a batch",
        }
    ]
    assert world.reload(high).status is Status.NEEDS_VERIFICATION
    assert review.accept(world.ctx, world.human, high).status is Status.DONE


def test_verification_on_refuses_accept_from_needs_verification(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    with pytest.raises(TaskgateError) as err:
        review.accept(world.ctx, world.human, scene.task_id)
    assert err.value.code is ErrorCode.WRONG_STATE and "verification is on" in err.value.message
    verify(scene, Evidence.PASS)
    assert review.accept(world.ctx, world.human, scene.task_id).status is Status.DONE


def test_verification_cannot_be_switched_on_without_key_and_config(world: World) -> None:
    world.project()
    with pytest.raises(TaskgateError) as err:
        projects.set_verification(world.ctx, world.human, "demo", True)
    assert "verifier key" in err.value.message and "config" in err.value.message
    world.verifier()
    with pytest.raises(TaskgateError) as err:
        projects.set_verification(world.ctx, world.human, "demo", True)
    assert "verifier key" not in err.value.message and "config" in err.value.message
    projects.set_verifier_config(world.ctx, world.human, "demo", {"checks": {"unit": {"command": "pytest"}}})
    assert projects.set_verification(world.ctx, world.human, "demo", True).verification_on
    hist, _ = projects.history(world.ctx, world.human, "demo")
    assert [e.action for e in hist][:2] == ["verification_on", "verifier_config_changed"]
    assert hist[0].actor == "human:alice"


def test_switching_off_with_work_in_flight(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    waiting = reach(scene, Status.NEEDS_VERIFICATION).task_id
    reach(scene, Status.NEEDS_VERIFICATION)
    running = scene.task_id
    assert scene.verifier is not None
    started = verification.start(world.ctx, scene.verifier, task_id=running)
    reach(scene, Status.VERIFIED)
    verified = scene.task_id
    projects.set_verification(world.ctx, world.human, "demo", False)
    assert review.accept(world.ctx, world.human, waiting).status is Status.DONE
    assert review.accept(world.ctx, world.human, verified).status is Status.DONE
    reopened = review.reopen(world.ctx, world.human, running, findings=["wrong endpoint"])
    assert reopened.status is Status.READY and reopened.live_run is None
    from taskgate.service import tasks

    runs = tasks.runs(world.ctx, world.human, running)
    assert [(r.id, r.status) for r in runs] == [(started.run.id, "superseded")]


def test_a_verifier_never_verifies_its_own_submission(world: World) -> None:
    """A verifier key cannot claim work, so the rule is checked on the run's start directly."""
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    task = world.reload(scene.task_id)
    sub = task.last_submission()
    assert sub is not None and scene.verifier is not None
    from dataclasses import replace

    impostor = acting(replace(scene.verifier.principal, credential_id=sub.credential_id))
    with pytest.raises(TaskgateError) as err:
        verification.start(world.ctx, impostor, task_id=scene.task_id)
    assert err.value.code is ErrorCode.SELF_VERIFY


def test_failed_verification_feeds_the_next_brief_and_flags_self_report_mismatch(world: World) -> None:
    from taskgate.domain.models import SelfReport
    from taskgate.service import claims
    from tests.support.world import SHA

    scene = new_scene(world, verification_on=True)
    reach(scene, Status.CLAIMED)
    task = world.reload(scene.task_id)
    cid = task.criteria[0].id
    claims.submit(
        world.ctx,
        scene.agent,
        scene.task_id,
        scene.token,
        commit_sha=SHA,
        evidence="all green",
        self_report={cid: SelfReport.PASS},
    )
    verify(scene, Evidence.FAIL)
    after = world.reload(scene.task_id)
    assert after.status is Status.READY and after.attempts_used == 1
    assert after.findings[-1].self_report_mismatch == [cid]
    b = brief.for_task(world.ctx, scene.agent, scene.task_id)
    assert b["findings"][0]["self_report_mismatch"] == [cid]
    assert [c["id"] for c in b["findings"][0]["criteria"]] == [cid]


def test_three_verifier_errors_in_a_row_go_to_needs_human_and_reverify_resumes(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    verify(scene, None, error="clone failed")
    verify(scene, None, error="clone failed")
    assert world.reload(scene.task_id).status is Status.NEEDS_VERIFICATION
    verify(scene, None, error="clone failed")
    t = world.reload(scene.task_id)
    assert t.status is Status.NEEDS_HUMAN and t.attempts_used == 0
    review.resolve(world.ctx, world.human, scene.task_id, review.Resolution.REVERIFY)
    verify(scene, Evidence.PASS)
    assert world.reload(scene.task_id).status is Status.VERIFIED


def test_three_re_verification_errors_in_a_row_are_a_humans_and_stop_the_loop(world: World) -> None:
    """A stale verified task whose re-verification errs stays verified (and stale) twice; the
    third error in a row hands it to a human, and the verifier is offered it no more."""
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.VERIFIED)
    assert scene.verifier is not None
    for n in (1, 2, 3):
        if n > 1:  # still stale and verified: offered again
            assert scene.task_id in [w.id for w in verification.waiting(world.ctx, scene.verifier, "demo")]
        reverify(scene, Action.STALE_ERROR)
        t = world.reload(scene.task_id)
        assert (t.status, t.verifier_errors_in_row) == (
            (Status.VERIFIED, n) if n < 3 else (Status.NEEDS_HUMAN, 3)
        ), n
    offered = verification.waiting(world.ctx, scene.verifier, "demo")
    assert scene.task_id not in [w.id for w in offered], offered
    assert t.needs_human is not None and t.needs_human.why is WhyHuman.VERIFIER_ERRORS
    assert t.needs_human.reason == "3 verifier errors in a row; the last: checkout failed"
    review.resolve(world.ctx, world.human, scene.task_id, review.Resolution.REVERIFY)
    verify(scene, Evidence.PASS)
    assert world.reload(scene.task_id).status is Status.VERIFIED


def test_done_cascades_to_blocked_tasks_when_all_blockers_are_done(world: World) -> None:
    world.project()
    bob = world.agent("bob")
    a, b = world.task(title="a"), world.task(title="b")
    waiting = world.task(title="c", blocked_by=[a.id, b.id])
    assert waiting.status is Status.BLOCKED
    from taskgate.service import claims
    from tests.support.world import SHA

    for t in (a, b):
        c = claims.claim(world.ctx, bob, "demo", task_id=t.id)
        claims.submit(world.ctx, bob, t.id, c.token, commit_sha=SHA, evidence="ok")
    review.accept(world.ctx, world.human, a.id)
    assert world.reload(waiting.id).status is Status.BLOCKED
    review.accept(world.ctx, world.human, b.id)
    assert world.reload(waiting.id).status is Status.READY


def test_switch_on_is_human_only_even_with_a_delegation(world: World) -> None:
    world.project()
    carol = world.agent("carol", delegations=["human:alice"], on_behalf_of="human:alice")
    with pytest.raises(TaskgateError) as err:
        projects.set_verification(world.ctx, carol, "demo", False)
    assert err.value.code is ErrorCode.FORBIDDEN
