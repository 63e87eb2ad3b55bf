"""Batches verified together, through the services over each store adapter (DynamoDB through
moto): the records a batch writes, the bisection the server drives from each run's evidence, and
what it leaves on the tasks. The end-to-end proof with real git and pytest is
tests/verifier/test_batch.py; here the evidence is made up to drive every branch of the plan."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import Status
from taskgate.domain.principals import acting
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence
from taskgate.service import batches, keys, records, review
from taskgate.service.batches import StepReport
from tests.service.scenarios import new_scene, reach
from tests.support.evidence import CHECK
from tests.support.world import World
from tests.support.world import dump as snapshot

TIP = "d" * 40
TREE = "e" * 40


def verified(world: World, n: int) -> tuple[list[str], object]:
    scene = new_scene(world, verification_on=True)
    ids = []
    for _ in range(n):
        reach(scene, Status.VERIFIED)
        ids.append(scene.task_id)
    return ids, scene


def report(world: World, work: dict[str, object], breaks: set[str]) -> StepReport:
    """Evidence for one run: every criterion passes unless all of `breaks` were merged in it (the
    last of them then fails its criterion, and the check exits 1)."""
    tasks = [t["task_id"] for t in work["tasks"]]  # type: ignore[attr-defined, index]
    broken = bool(breaks) and breaks <= set(tasks)
    results = {}
    for t in work["tasks"]:  # type: ignore[attr-defined]
        fails = broken and t["task_id"] == max(breaks, key=tasks.index)
        results[t["task_id"]] = {
            c["id"]: CriterionResult(result=Evidence.FAIL if fails else Evidence.PASS, detail="x")
            for c in t["criteria"]
        }
    return StepReport(
        branch="main",
        tip=TIP,
        tree=TREE,
        checks={CHECK: CheckResult(exit_code=1 if broken else 0)},
        results=results,
    )


def drive(world: World, verifier: object, batch_id: str, breaks: set[str]) -> list[list[str]]:
    """Run the batch's steps until it is decided; the tasks of each run."""
    seen = []
    while True:
        try:
            step = batches.start_step(world.ctx, verifier, "demo", batch_id)  # type: ignore[arg-type]
        except TaskgateError:
            return seen
        seen.append([t["task_id"] for t in step.work["tasks"]])
        done = batches.finish_step(
            world.ctx,
            verifier,
            "demo",
            batch_id,
            step.work["run_id"],
            report(world, step.work, breaks),  # type: ignore[arg-type]
        )
        if done.status == "done":
            return seen


def test_a_failing_batch_is_bisected_on_each_adapter(any_world: World) -> None:
    w = any_world
    ids, scene = verified(w, 5)
    batch = batches.request(w.ctx, w.human, "demo", ids)
    assert w.ctx.store.get(*records.in_batch_key(ids[0])) is not None
    assert [i.sk for i in w.ctx.store.query(records.open_batch_key("demo", "")[0]).items] == [batch.id]
    runs = drive(w, scene.verifier, batch.id, breaks={ids[1], ids[3]})  # type: ignore[attr-defined]
    assert runs == [ids, ids[:2], ids[:3], ids[:4], [*ids[:3], ids[4]]]
    final = batches.get(w.ctx, w.human, "demo", batch.id)
    assert final.status == "done" and final.accepted == [ids[0], ids[1], ids[2], ids[4]]
    assert [c.task_id for c in final.culprits] == [ids[3]] and final.culprits[0].breaks_with == ids[:3]
    assert [w.reload(t).status for t in ids] == [Status.DONE] * 3 + [Status.READY, Status.DONE]
    assert w.reload(ids[3]).attempts_used == 0
    # the markers are gone: the tasks may go in another batch, and no verifier is offered it
    assert w.ctx.store.get(*records.in_batch_key(ids[0])) is None
    assert w.ctx.store.query(records.open_batch_key("demo", "")[0]).items == []
    # each task's share of each run it was merged in
    runs_of_last = [
        r for r in w.ctx.store.query(records.task_pk(ids[4]), sk_prefix="R#").items if r.data.get("batch")
    ]
    assert [r.data["status"] for r in runs_of_last] == ["failed", "passed"]


def test_a_task_that_breaks_on_the_tip_alone_is_the_first_culprit(world: World) -> None:
    ids, scene = verified(world, 3)
    batch = batches.request(world.ctx, world.human, "demo", ids)
    runs = drive(world, scene.verifier, batch.id, breaks={ids[0]})  # type: ignore[attr-defined]
    assert runs == [ids, ids[:1], ids[1:]]
    final = batches.get(world.ctx, world.human, "demo", batch.id)
    assert final.culprits[0].breaks_with == [] and final.accepted == ids[1:]
    assert (
        world.reload(ids[0])
        .findings[-1]
        .summary.startswith(
            f"batch {batch.id}: {ids[0]} passed alone but fails merged onto main at {TIP[:12]}"
        )
    )


def test_a_conflict_makes_its_task_a_culprit_at_once(world: World) -> None:
    ids, scene = verified(world, 3)
    batch = batches.request(world.ctx, world.human, "demo", ids)
    step = batches.start_step(world.ctx, scene.verifier, "demo", batch.id)  # type: ignore[arg-type]
    after = batches.finish_step(
        world.ctx,
        scene.verifier,  # type: ignore[arg-type]
        "demo",
        batch.id,
        step.work["run_id"],
        StepReport(
            branch="main",
            tip=TIP,
            tree=None,
            checks={},
            results={},
            conflict_task=ids[1],
            conflict_paths=("a.py",),
        ),
    )
    assert after.status == "queued" and after.remaining == [ids[0], ids[2]]
    assert drive(world, scene.verifier, batch.id, breaks=set()) == [[ids[0], ids[2]]]
    assert world.reload(ids[1]).status is Status.READY
    assert (
        world.reload(ids[1])
        .findings[-1]
        .summary.startswith(
            f"batch {batch.id}: {ids[1]} does not merge cleanly after {ids[0]} onto main at {TIP[:12]} (conflict: a.py)"
        )
    )


def test_three_errors_stop_the_batch_and_leave_its_tasks_verified(world: World) -> None:
    ids, scene = verified(world, 2)
    batch = batches.request(world.ctx, world.human, "demo", ids)
    for _ in range(3):
        step = batches.start_step(world.ctx, scene.verifier, "demo", batch.id)  # type: ignore[arg-type]
        out = batches.finish_step(
            world.ctx,
            scene.verifier,  # type: ignore[arg-type]
            "demo",
            batch.id,
            step.work["run_id"],
            StepReport(tip=None, tree=None, checks={}, results={}, error="checkout failed"),
        )
    assert out.status == "stopped" and out.accepted == []
    assert [world.reload(t).status for t in ids] == [Status.VERIFIED] * 2
    assert world.ctx.store.get(*records.in_batch_key(ids[0])) is None


def test_a_revoked_requester_accepts_nothing(world: World) -> None:
    ids, scene = verified(world, 2)
    lead = world.agent("lead", delegations=["human:alice"], on_behalf_of="human:alice")
    batch = batches.request(world.ctx, lead, "demo", ids)
    keys.revoke(world.ctx, world.human, lead.credential_id)
    drive(world, scene.verifier, batch.id, breaks=set())  # type: ignore[attr-defined]
    final = batches.get(world.ctx, world.human, "demo", batch.id)
    assert final.accepted == [] and [world.reload(t).status for t in ids] == [Status.VERIFIED] * 2
    assert (
        final.skipped[ids[0]]
        == f"not accepted: the key {lead.credential_id} that asked for the batch was revoked"
    )


def test_an_agent_without_a_delegation_is_refused(world: World) -> None:
    ids, _ = verified(world, 1)
    plain = world.agent("plain")
    with pytest.raises(TaskgateError) as err:
        batches.request(world.ctx, plain, "demo", ids)
    assert err.value.code is ErrorCode.FORBIDDEN


def test_an_executor_with_a_delegation_cannot_batch_its_own_work(world: World) -> None:
    scene = new_scene(world, verification_on=True)
    scene.agent = world.agent("both", delegations=["human:alice"])
    reach(scene, Status.VERIFIED)
    # the key that submitted it, acting for the human who delegated to it: refused, nothing written
    submitter = acting(scene.agent.principal, on_behalf_of="human:alice")
    before = snapshot(world.ctx.store)
    with pytest.raises(TaskgateError) as err:
        batches.request(world.ctx, submitter, "demo", [scene.task_id])
    assert err.value.code is ErrorCode.SELF_ACCEPT and snapshot(world.ctx.store) == before
    # another delegated key may ask for it
    other = world.agent("lead", delegations=["human:alice"], on_behalf_of="human:alice")
    assert [e.task_id for e in batches.request(world.ctx, other, "demo", [scene.task_id]).entries] == [
        scene.task_id
    ]


def test_a_task_reopened_while_the_batch_waits_is_left_out(world: World) -> None:
    ids, scene = verified(world, 3)
    batch = batches.request(world.ctx, world.human, "demo", ids)
    review.reopen(world.ctx, world.human, ids[1], findings=["not like this"])
    assert drive(world, scene.verifier, batch.id, breaks=set()) == [[ids[0], ids[2]]]  # type: ignore[attr-defined]
    final = batches.get(world.ctx, world.human, "demo", batch.id)
    assert final.accepted == [ids[0], ids[2]]
    assert final.skipped == {ids[1]: f"{ids[1]} moved on (ready) while the batch waited"}
    assert world.reload(ids[1]).status is Status.READY
