"""The landing queue's rules through the services: order and hotfix, the window, a push in
flight that nobody may move, evidence that does not fit the step refused whole (nothing
written), a verdict reused only on its own tree, an abandoned step, and work already on the
branch landing as it is there."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import Status
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence
from taskgate.service import landing, review
from tests.service.scenarios import Scene, new_scene, reach
from tests.support.evidence import CHECK, OK, TIP0, land_step
from tests.support.world import World, dump


def queued(world: World, n: int) -> tuple[Scene, list[str]]:
    """`n` verified tasks accepted, in order, into the landing queue of a project that lands."""
    scene = new_scene(world, verification_on=True, land=True)
    ids = []
    for _ in range(n):
        reach(scene, Status.VERIFIED)
        review.accept(world.ctx, world.human, scene.task_id)
        ids.append(scene.task_id)
    return scene, ids


def order(world: World) -> list[str]:
    return [e.task_id for e in landing.load(world.ctx, "demo").entries]


def prefix(work: dict[str, object], i: int, *, tree: str | None = None, ok: bool = True) -> landing.Prefix:
    t = work["tasks"][i]  # type: ignore[index]
    return landing.Prefix(
        task_id=t["task_id"],
        head=f"{i + 1:02x}" * 20,
        tree=tree or f"{i + 1:02x}" * 19 + "ee",
        checks={CHECK: OK if ok else CheckResult(exit_code=1)},
        results={
            c["id"]: CriterionResult(result=Evidence.PASS if ok else Evidence.FAIL, detail="ran")
            for c in t["criteria"]
        },
    )


def test_accepts_queue_in_order_and_a_hotfix_goes_to_the_head(world: World) -> None:
    _, ids = queued(world, 3)
    assert [world.reload(t).status for t in ids] == [Status.LANDING] * 3
    assert order(world) == ids
    landing.hotfix(world.ctx, world.human, ids[2])
    assert order(world) == [ids[2], ids[0], ids[1]]
    assert landing.load(world.ctx, "demo").entries[0].hotfix is True


def test_a_step_lands_the_passing_prefix_and_sends_the_first_failure_back(world: World) -> None:
    scene, ids = queued(world, 4)
    assert scene.verifier is not None
    step = land_step(world.ctx, scene.verifier, "demo", failing=ids[2])
    assert step["outcome"] == "landed" and step["landed"] == ids[:2] and step["culprit"] == ids[2]
    assert [world.reload(t).status for t in ids] == [Status.DONE, Status.DONE, Status.READY, Status.LANDING]
    culprit = world.reload(ids[2])
    assert culprit.attempts_used == 0 and culprit.verified_base is None
    assert culprit.findings[-1].summary.startswith(
        f"landing queue: {ids[2]} passed alone but breaks landing on top of {ids[0]}, {ids[1]} onto main at {TIP0[:12]}"
    )
    done = world.reload(ids[1])
    assert done.landed is not None and done.landed.from_tip == "01" * 20 and done.landed.commit == "02" * 20
    assert order(world) == [ids[3]]
    assert landing.load(world.ctx, "demo").window == 2  # halved by the culprit
    # the server learned the tip from its own landing
    known = world.ctx.project("demo").base_tip
    assert known is not None and known.tip == "02" * 20


def test_a_clean_step_widens_the_window_and_a_refused_push_lands_nothing(world: World) -> None:
    scene, ids = queued(world, 2)
    assert scene.verifier is not None
    work = landing.start_step(world.ctx, scene.verifier, "demo")
    step = landing.record_evidence(
        world.ctx, scene.verifier, "demo", work["run_id"],
        landing.Evidence(branch="main", tip=TIP0, prefixes=(prefix(work, 0), prefix(work, 1))),
    )  # fmt: skip
    assert step.phase == "pushing" and step.push == "02" * 20
    # nobody moves or takes out an entry a push may be landing
    for refused in (
        lambda: landing.hotfix(world.ctx, world.human, ids[1]),
        lambda: landing.leave(world.ctx, world.human, ids[0]),
        lambda: review.cancel(world.ctx, world.human, ids[1]),
    ):
        before = dump(world.store)
        with pytest.raises(TaskgateError) as err:
            refused()
        assert err.value.code is ErrorCode.WRONG_STATE
        assert dump(world.store) == before
    out = landing.record_push(
        world.ctx, scene.verifier, "demo", work["run_id"], head=step.push, pushed=False, why="x"
    )
    assert out.outcome == "refused" and out.landed == []
    assert [world.reload(t).status for t in ids] == [Status.LANDING] * 2
    assert landing.load(world.ctx, "demo").window == 4  # a refusal decides nothing
    again = land_step(world.ctx, scene.verifier, "demo")
    assert again["landed"] == ids and landing.load(world.ctx, "demo").window == 8


def test_evidence_that_does_not_fit_the_step_is_refused_whole(world: World) -> None:
    scene, _ = queued(world, 2)
    assert scene.verifier is not None
    work = landing.start_step(world.ctx, scene.verifier, "demo")
    bad = [
        # out of order
        landing.Evidence(branch="main", tip=TIP0, prefixes=(prefix(work, 1), prefix(work, 0))),
        # a verdict reused on another tree than its own
        landing.Evidence(
            branch="main",
            tip=TIP0,
            prefixes=(
                landing.Prefix(
                    task_id=work["tasks"][0]["task_id"], head="01" * 20, tree="ab" * 20, reused=True
                ),
            ),
        ),
        # another branch
        landing.Evidence(branch="develop", tip=TIP0, prefixes=(prefix(work, 0),)),
        # no tip
        landing.Evidence(branch="main", tip=None, prefixes=(prefix(work, 0),)),
    ]
    for ev in bad:
        before = dump(world.store)
        with pytest.raises(TaskgateError) as err:
            landing.record_evidence(world.ctx, scene.verifier, "demo", work["run_id"], ev)
        assert err.value.code is ErrorCode.VALIDATION, ev
        assert dump(world.store) == before
    # another verifier key may not finish it; a second start waits for it
    other = world.verifier(name="ci2")
    with pytest.raises(TaskgateError) as err:
        landing.record_evidence(world.ctx, other, "demo", work["run_id"], bad[0])
    assert err.value.code is ErrorCode.FORBIDDEN
    with pytest.raises(TaskgateError) as err:
        landing.start_step(world.ctx, other, "demo")
    assert err.value.code is ErrorCode.WRONG_STATE


def test_a_verdict_is_reused_on_the_tree_it_was_reached_on(world: World) -> None:
    scene, ids = queued(world, 1)
    assert scene.verifier is not None
    work = landing.start_step(world.ctx, scene.verifier, "demo")
    [task] = work["tasks"]
    tree = world.reload(ids[0]).verified_base.tree  # type: ignore[union-attr]
    assert task["reuse_tree"] == tree
    reused = landing.Prefix(task_id=ids[0], head="01" * 20, tree=tree, reused=True)
    step = landing.record_evidence(
        world.ctx,
        scene.verifier,
        "demo",
        work["run_id"],
        landing.Evidence(branch="main", tip=TIP0, prefixes=(reused,)),
    )
    step = landing.record_push(
        world.ctx, scene.verifier, "demo", work["run_id"], head="01" * 20, pushed=True, why=None
    )
    landed = world.reload(ids[0]).landed
    assert step.outcome == "landed" and landed is not None
    assert landed.run_id is None and landed.reused_run is not None and landed.tree == tree


def test_an_abandoned_step_is_taken_over_and_work_already_on_the_branch_lands(world: World) -> None:
    scene, ids = queued(world, 2)
    assert scene.verifier is not None
    landing.start_step(world.ctx, scene.verifier, "demo")  # the verifier dies here
    with pytest.raises(TaskgateError):
        landing.start_step(world.ctx, scene.verifier, "demo")
    world.clock.advance(minutes=24 * 60)
    work = landing.start_step(world.ctx, scene.verifier, "demo")
    assert landing.load(world.ctx, "demo").recent[-1].outcome == "error"
    # its push had gone through: the first is on the branch already, merged by 01..01
    already = landing.Prefix(task_id=ids[0], head="01" * 20, already=True)
    step = landing.record_evidence(
        world.ctx, scene.verifier, "demo", work["run_id"],
        landing.Evidence(branch="main", tip="01" * 20, prefixes=(already, prefix(work, 1))),
    )  # fmt: skip
    assert step.push == "02" * 20
    landing.record_push(
        world.ctx, scene.verifier, "demo", work["run_id"], head="02" * 20, pushed=True, why=None
    )
    first, second = world.reload(ids[0]).landed, world.reload(ids[1]).landed
    assert first is not None and first.already and first.commit == "01" * 20
    assert second is not None and second.from_tip == "01" * 20
    assert order(world) == []
