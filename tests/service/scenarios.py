"""Drive a task into any status through the real services, and perform any lifecycle action.

Used by the table-driven lifecycle tests: nothing here writes the store directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from taskgate.domain.baseline import BaselineEvidence
from taskgate.domain.lifecycle import Action
from taskgate.domain.merging import MergeConflict, MergedBase
from taskgate.domain.models import CriterionInput, CriterionKind, FailureKind, Status
from taskgate.domain.principals import Acting
from taskgate.domain.run_report import CheckResult, Evidence
from taskgate.service import claims, landing, projects, review, specs, staleness, tasks
from tests.support.evidence import BASE0, BASE1, CHECK, CONFIG, FAILING, TIP0, TIP1, land_step, run_verifier
from tests.support.world import SHA, World


@dataclass
class Scene:
    world: World
    agent: Acting
    verifier: Acting | None = None
    task_id: str = ""
    token: str = ""
    spec_id: str | None = None
    blocker_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ctx(self) -> Any:
        return self.world.ctx


def new_scene(world: World, *, verification_on: bool = False, land: bool = False) -> Scene:
    world.project()
    scene = Scene(world, world.agent("exec"))
    if verification_on or land:
        switch_on(scene, land=land)
    return scene


def switch_on(scene: Scene, *, land: bool = False) -> None:
    w = scene.world
    if scene.verifier is None:
        scene.verifier = w.verifier()
    projects.set_verifier_config(w.ctx, w.human, "demo", {**CONFIG, "land": land})
    projects.set_verification(w.ctx, w.human, "demo", True)


def _criteria() -> list[CriterionInput]:
    return [CriterionInput(text="unit tests pass", kind=CriterionKind.TEST, verify_ref="tests.test_x")]


def reach(scene: Scene, status: Status, *, with_submission: bool = False, held: bool = False) -> Scene:
    """Put a fresh task of `scene` into `status` by real calls; `held`: into needs_human by a
    run whose submission changes a protected path."""
    w, a = scene.world, scene.agent
    if status is Status.BACKLOG:
        spec = w.spec(approve=False)
        scene.spec_id = spec.id
        scene.task_id = w.task(spec_id=spec.id).id
    elif status is Status.READY:
        scene.task_id = w.task(criteria=_criteria()).id
    elif status is Status.BLOCKED:
        scene.blocker_id = w.task(title="blocker").id
        scene.task_id = w.task(criteria=_criteria(), blocked_by=[scene.blocker_id]).id
    elif status is Status.CLAIMED:
        reach(scene, Status.READY)
        scene.token = claims.claim(w.ctx, a, "demo", task_id=scene.task_id).token
    elif status is Status.NEEDS_VERIFICATION:
        reach(scene, Status.CLAIMED)
        claims.submit(w.ctx, a, scene.task_id, scene.token, commit_sha=SHA, evidence="done")
    elif status is Status.VERIFIED:
        was_on = w.ctx.project("demo").verification_on
        if not was_on:
            switch_on(scene)
        reach(scene, Status.NEEDS_VERIFICATION)
        verify(scene, Evidence.PASS)
    elif status is Status.LANDING:
        if not w.ctx.project("demo").lands():
            switch_on(scene, land=True)
        reach(scene, Status.VERIFIED)
        review.accept(w.ctx, w.human, scene.task_id)
    elif status is Status.DONE:
        reach(scene, Status.NEEDS_VERIFICATION)
        if w.ctx.project("demo").verification_on:
            verify(scene, Evidence.PASS)
        review.accept(w.ctx, w.human, scene.task_id)
    elif status is Status.NEEDS_HUMAN:
        if held:
            if not w.ctx.project("demo").verification_on:
                switch_on(scene)
            reach(scene, Status.NEEDS_VERIFICATION)
            verify(scene, Evidence.PASS, baseline=HARNESS_CHANGED)
        elif with_submission:
            if not w.ctx.project("demo").verification_on:
                switch_on(scene)
            reach(scene, Status.NEEDS_VERIFICATION)
            for _ in range(3):
                verify(scene, None, error="checkout failed")
        else:
            spec = w.spec()
            scene.spec_id = spec.id
            scene.task_id = w.task(spec_id=spec.id).id
            scene.token = claims.claim(w.ctx, a, "demo", task_id=scene.task_id).token
            claims.escalate(w.ctx, a, scene.task_id, scene.token, question="which API?")
    elif status is Status.CANCELLED:
        reach(scene, Status.READY)
        review.cancel(w.ctx, w.human, scene.task_id, reason="not needed")
    else:
        raise AssertionError(status)
    assert w.reload(scene.task_id).status is status
    return scene


# A submission whose change to the test harness holds its run for a human.
HARNESS_CHANGED = BaselineEvidence(branch="main", commit="b" * 40, changed=["conftest.py"], changed_total=1)


def verify(
    scene: Scene,
    evidence: Evidence | None,
    *,
    error: str | None = None,
    baseline: BaselineEvidence | None = None,
    base: MergedBase | None = BASE0,
    checks: dict[str, CheckResult] | None = None,
) -> None:
    """A run on the submission merged onto main at TIP0 (unless told otherwise)."""
    assert scene.verifier is not None
    run_verifier(
        scene.ctx,
        scene.verifier,
        scene.task_id,
        evidence,
        error=error,
        baseline=baseline,
        base=base,
        checks=checks,
    )


CONFLICT = MergeConflict(mode="merge", branch="main", tip=TIP0, paths=["src/app.py"])
STALE = (
    Action.STALE_PASS,
    Action.STALE_FAIL,
    Action.STALE_BREAK,
    Action.STALE_CONFLICT,
    Action.STALE_ERROR,
)


def move_base(scene: Scene) -> None:
    """main moves on to TIP1: a task verified on TIP0 is stale."""
    assert scene.verifier is not None
    staleness.base_moved(scene.ctx, scene.verifier, "demo", ref="refs/heads/main", tip=TIP1)


def reverify(scene: Scene, action: Action) -> None:
    """The verifier's run on a stale verified task, ending as `action` says."""
    assert scene.verifier is not None
    move_base(scene)
    conflict = CONFLICT.model_copy(update={"tip": TIP1})
    if action is Action.STALE_PASS:
        verify(scene, Evidence.PASS, base=BASE1)
    elif action is Action.STALE_FAIL:
        verify(scene, Evidence.FAIL, base=BASE1)
    elif action is Action.STALE_BREAK:  # its criteria pass, another test of the check fails
        verify(scene, Evidence.PASS, base=BASE1, checks={CHECK: FAILING})
    elif action is Action.STALE_CONFLICT:
        run_verifier(scene.ctx, scene.verifier, scene.task_id, None, conflict=conflict)
    else:
        verify(scene, None, error="checkout failed", base=None)


def prepare(scene: Scene, action: Action) -> None:
    """Create what `action` needs besides the task (done before a test's snapshot)."""
    if action in (Action.BLOCK, Action.FAIL_DEPENDENCY, Action.BLOCKERS_ADDED):
        scene.extra["other"] = scene.world.task(title="first this").id


def perform(scene: Scene, action: Action) -> None:
    """Take `action` on the scene's task, the way its actor would."""
    if action in (Action.BLOCK, Action.FAIL_DEPENDENCY, Action.BLOCKERS_ADDED) and "other" not in scene.extra:
        prepare(scene, action)
    w, a, ctx, tid = scene.world, scene.agent, scene.ctx, scene.task_id
    fail = {
        Action.FAIL_OTHER: FailureKind.OTHER,
        Action.FAIL_SPEC_GAP: FailureKind.SPEC_GAP,
        Action.FAIL_DESIGN_CONFLICT: FailureKind.DESIGN_CONFLICT,
    }
    if action is Action.CLAIM:
        scene.token = claims.claim(ctx, a, "demo", task_id=tid).token
    elif action is Action.RELEASE:
        claims.release(ctx, a, tid, scene.token)
    elif action in fail:
        claims.report_failure(ctx, a, tid, scene.token, kind=fail[action], findings=["broke"])
    elif action is Action.FAIL_DEPENDENCY:
        dep = scene.extra["other"]
        claims.report_failure(
            ctx, a, tid, scene.token, kind=FailureKind.DEPENDENCY, findings=["needs dep"], blocked_by=[dep]
        )
    elif action is Action.EXPIRE:
        w.clock.advance(minutes=31)
        tasks.get(ctx, a, tid)
    elif action is Action.ESCALATE:
        claims.escalate(ctx, a, tid, scene.token, question="unclear")
    elif action is Action.SUBMIT:
        claims.submit(ctx, a, tid, scene.token, commit_sha=SHA, evidence="done")
    elif action is Action.ACCEPT:
        review.accept(ctx, w.human, tid)
    elif action is Action.VERIFY_PASS:
        verify(scene, Evidence.PASS)
    elif action is Action.VERIFY_FAIL:
        verify(scene, Evidence.FAIL)
    elif action is Action.VERIFY_ERROR:
        verify(scene, None, error="checkout failed")
    elif action is Action.VERIFY_SPEC_ERROR:
        verify(scene, Evidence.AMBIGUOUS)
    elif action is Action.VERIFY_HOLD:
        verify(scene, Evidence.PASS, baseline=HARNESS_CHANGED)
    elif action is Action.VERIFY_CONFLICT:
        assert scene.verifier is not None
        run_verifier(ctx, scene.verifier, tid, None, conflict=CONFLICT)
    elif action in STALE:
        reverify(scene, action)
    elif action in (Action.LAND, Action.LAND_CULPRIT):
        assert scene.verifier is not None
        land_step(ctx, scene.verifier, "demo", failing=tid if action is Action.LAND_CULPRIT else None)
    elif action is Action.LEAVE_QUEUE:
        landing.leave(ctx, w.human, tid)
    elif action is Action.REOPEN:
        review.reopen(ctx, w.human, tid, findings=["missing test"])
    elif action is Action.CANCEL:
        review.cancel(ctx, w.human, tid, reason="dropped")
    elif action is Action.SPEC_REVISED:
        assert scene.spec_id is not None
        specs.revise(ctx, w.human, "demo", scene.spec_id, body="clarified")
    elif action is Action.SPEC_APPROVED or action is Action.SPEC_APPROVED_BLOCKED:
        assert scene.spec_id is not None
        specs.approve(ctx, w.human, "demo", scene.spec_id)
    elif action is Action.BLOCKERS_DONE:
        assert scene.blocker_id is not None
        other = Scene(w, a, scene.verifier, task_id=scene.blocker_id)
        other.token = claims.claim(ctx, a, "demo", task_id=scene.blocker_id).token
        claims.submit(ctx, a, scene.blocker_id, other.token, commit_sha=SHA, evidence="done")
        review.accept(ctx, w.human, scene.blocker_id)
    elif action is Action.BLOCKERS_ADDED:
        tasks.update(ctx, w.human, tid, blocked_by=[scene.extra["other"]])
    elif action in (Action.REQUEUE, Action.BLOCK, Action.REVISE_SPEC, Action.REVERIFY):
        kw: dict[str, Any] = {}
        if action is Action.BLOCK:
            kw["blocked_by"] = [scene.extra["other"]]
        review.resolve(ctx, w.human, tid, review.Resolution(action.value), **kw)
    else:
        raise AssertionError(f"no way to perform {action}")
