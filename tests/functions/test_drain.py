"""Draining verifier slots on the stack (moto): leases that lapse and are taken over, the
scheduled sweep, dispatchers racing for slots, and the task's own renewal (cloud/drain_lease.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from taskgate.cloud import dispatcher
from taskgate.cloud.dispatcher import handler
from taskgate.cloud.drain_lease import StoreLease
from taskgate.domain.clock import ManualClock
from taskgate.domain.models import CredentialKind, CriterionInput, CriterionKind, Status, VerifierKind
from taskgate.domain.principals import Acting, acting, human
from taskgate.domain.run_report import Evidence
from taskgate.service import batches, claims, dispatch, keys, projects, records, tasks
from taskgate.service.context import Context
from taskgate.service.dispatch import DispatchOutcome, Lease, Slot, SlotState
from taskgate.store.dynamodb import DynamoDBStore
from tests.functions.stack import Stack, stack
from tests.support import evidence
from tests.support.dynamo import MOTO_LOCK, SerializedClient
from tests.support.world import SHA

HUMAN = acting(human("alice"))


@pytest.fixture
def cloud() -> Iterator[Stack]:
    with stack(verifier_concurrency=1) as s:
        yield s


def _project(s: Stack, name: str = "shop") -> None:
    projects.create(s.ctx, HUMAN, name, repo=f"https://git.example.com/{name}.git")
    keys.create(
        s.ctx, HUMAN, kind=CredentialKind.VERIFIER, name=f"{name}-ci", verifier_kind=VerifierKind.LOCAL
    )
    projects.set_verifier_config(s.ctx, HUMAN, name, {"checks": {"unit": {"command": "pytest"}}})
    projects.set_verification(s.ctx, HUMAN, name, True)


def _agent(s: Stack) -> Acting:
    return acting(
        keys.authenticate(s.ctx, keys.create(s.ctx, HUMAN, kind=CredentialKind.AGENT, name="b").secret)
    )


def _submit(s: Stack, agent: Acting, project: str = "shop") -> str:
    task = tasks.create(s.ctx, HUMAN, project, title="Cart", criteria=[CriterionInput(text="works")]).task
    token = claims.claim(s.ctx, agent, project, task_id=task.id).token
    claims.submit(s.ctx, agent, task.id, token, commit_sha=SHA, evidence="did it")
    return task.id


def _slot(s: Stack, project: str = "shop", n: int = 0) -> tuple[int, Slot] | None:
    item = s.ctx.store.get(*records.drain_key(project, n))
    return None if item is None else (item.version, Slot.model_validate(item.data))


def _running(s: Stack) -> int:
    return len(s.ecs.list_tasks(cluster=s.cluster)["taskArns"])


def _ensure(ctx: Context, s: Stack, start_id: str, project: str = "shop") -> dispatch.DrainStarted:
    return dispatch.ensure(
        ctx,
        project,
        dispatcher.launcher().launch_drain,
        base=s.task_definition,
        start_id=start_id,
        stack_concurrency=1,
    )


def _lease(s: Stack, n: int = 0) -> Lease:
    got = _slot(s, "shop", n)
    assert got is not None
    return Lease(project="shop", slot=n, holder=got[1].holder)


def test_a_renewed_lease_holds_the_slot_and_a_lapsed_one_is_taken_over(cloud: Stack) -> None:
    _project(cloud)
    agent = _agent(cloud)
    _submit(cloud, agent)
    t0 = datetime.now(UTC)
    clock = ManualClock(t0)
    ctx = Context(cloud.ctx.store, clock)
    assert _ensure(ctx, cloud, "a").outcome is DispatchOutcome.STARTED
    first = _lease(cloud)
    _submit(cloud, agent)

    # The task renews (its first renewal marks it running) and keeps renewing: no second task.
    assert dispatch.renew(ctx, first) is True
    assert _slot(cloud)[1].state is SlotState.RUNNING  # type: ignore[index]
    for _ in range(4):
        clock.advance(seconds=(dispatch.LEASE - timedelta(seconds=10)).total_seconds())
        assert _ensure(ctx, cloud, "b").outcome is DispatchOutcome.DRAINING
        assert dispatch.renew(ctx, first) is True
    assert _running(cloud) == 1

    # It stops renewing (crashed, stopped by Spot, stuck): once the lease lapses the next
    # dispatch takes the slot over and starts a task, and the old holder learns it lost it.
    clock.advance(seconds=(dispatch.LEASE + timedelta(seconds=1)).total_seconds())
    taken = _ensure(ctx, cloud, "c")
    assert (taken.outcome, taken.slot) == (DispatchOutcome.STARTED, 0)
    assert _running(cloud) == 2
    second = _lease(cloud)
    assert second.holder != first.holder
    assert dispatch.renew(ctx, first) is False
    dispatch.release(ctx, first)  # the old task, leaving: it must not free the new one's slot
    assert _slot(cloud)[1].holder == second.holder  # type: ignore[index]
    assert _ensure(ctx, cloud, "d").outcome is DispatchOutcome.DRAINING
    assert dispatch.reacquire(ctx, first) is False


def test_a_task_that_never_started_holds_its_slot_for_the_start_lease_only(cloud: Stack) -> None:
    _project(cloud)
    _submit(cloud, _agent(cloud))
    clock = ManualClock(datetime.now(UTC))
    ctx = Context(cloud.ctx.store, clock)
    assert _ensure(ctx, cloud, "a").outcome is DispatchOutcome.STARTED
    clock.advance(seconds=(dispatch.START_LEASE - timedelta(seconds=1)).total_seconds())
    assert _ensure(ctx, cloud, "b").outcome is DispatchOutcome.DRAINING
    clock.advance(seconds=1)  # a lease ending now has lapsed
    assert _ensure(ctx, cloud, "c").outcome is DispatchOutcome.STARTED


def test_the_sweep_starts_a_task_where_work_waits_behind_a_lost_one_and_logs_it_once(cloud: Stack) -> None:
    _project(cloud)
    _project(cloud, "quiet")  # verification on, nothing waiting: nothing starts there
    _submit(cloud, _agent(cloud))
    # A task started an hour ago that never renewed: its slot lapsed long since.
    past = Context(cloud.ctx.store, ManualClock(datetime.now(UTC) - timedelta(hours=1)))
    assert _ensure(past, cloud, "lost").outcome is DispatchOutcome.STARTED
    assert _running(cloud) == 1

    event = {"sweep": True, "execution_id": "e-1", "scheduled_time": "2026-01-01T00:05:00Z"}
    report = cloud.invoke(handler, event)
    assert report["lapsed"] == ["shop#0"]
    assert list(report["started"]) == ["shop"]
    assert _running(cloud) == 2
    version, slot = _slot(cloud)  # type: ignore[misc]
    assert slot.state is SlotState.STARTING and slot.holder.startswith("sweep|e-1|shop#0#")
    warnings = [line for line in cloud.output.logs() if line.get("level") == "WARNING"]
    assert [(w["project"], w["slot"]) for w in warnings] == [("shop", 0)]
    assert warnings[0]["message"].startswith("verifier slot lapsed")

    # The next sweep: the new task's slot is live; nothing lapsed, nothing started.
    again = cloud.invoke(handler, {**event, "execution_id": "e-2"})
    assert again == {"started": {}, "lapsed": []}
    assert _running(cloud) == 2
    assert _slot(cloud) == (version, slot)
    assert _slot(cloud, "quiet") is None


def test_racing_dispatchers_start_exactly_the_concurrency() -> None:
    """Eight dispatchers at once for a project with eight submissions and a concurrency of 3:
    three tasks, one per slot. moto's requests are serialized (moto is not atomic under
    concurrency); the threads interleave between a read and its conditional write,
    which is where the slot logic could let a fourth through."""
    with stack(verifier_concurrency=3) as s:
        _project(s)
        agent = _agent(s)
        for _ in range(8):
            _submit(s, agent)
        ctx = Context(DynamoDBStore(s.table, client=SerializedClient(s.dynamodb)))
        launcher = dispatcher.launcher()

        def launch(start: str, project: str, definition: str, lease: Lease) -> str:
            with MOTO_LOCK:
                return launcher.launch_drain(start, project, definition, lease)

        barrier = threading.Barrier(8)
        outcomes: list[DispatchOutcome] = []
        errors: list[BaseException] = []

        def racer(i: int) -> None:
            barrier.wait()
            try:
                got = dispatch.ensure(
                    ctx, "shop", launch, base=s.task_definition, start_id=f"r{i}", stack_concurrency=3
                )
                outcomes.append(got.outcome)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert sorted(outcomes) == sorted([DispatchOutcome.STARTED] * 3 + [DispatchOutcome.DRAINING] * 5)
        assert _running(s) == 3
        holders = {_slot(s, "shop", n)[1].holder for n in range(3)}  # type: ignore[index]
        assert len(holders) == 3
        assert _slot(s, "shop", 3) is None


def test_the_tasks_lease_renews_itself_and_stops_when_taken_over(cloud: Stack) -> None:
    _project(cloud)
    _submit(cloud, _agent(cloud))
    assert _ensure(cloud.ctx, cloud, "a").outcome is DispatchOutcome.STARTED
    mine = StoreLease(cloud.ctx.store, _lease(cloud), every_s=0.05)
    assert mine.held() is True
    deadline = time.monotonic() + 10
    while _slot(cloud)[1].state is not SlotState.RUNNING:  # type: ignore[index]
        assert time.monotonic() < deadline, "the lease was never renewed"
        time.sleep(0.02)
    first_version = _slot(cloud)[0]  # type: ignore[index]
    deadline = time.monotonic() + 30
    while _slot(cloud)[0] <= first_version:  # type: ignore[index]  # renewed again and again
        assert time.monotonic() < deadline, "the lease was renewed only once"
        time.sleep(0.02)

    # Another dispatcher, an hour later by its clock, finds the lease lapsed and takes over.
    later = Context(cloud.ctx.store, ManualClock(datetime.now(UTC) + timedelta(hours=1)))
    assert _ensure(later, cloud, "b").outcome is DispatchOutcome.STARTED
    taker = _slot(cloud)[1].holder  # type: ignore[index]
    while mine.held():
        assert time.monotonic() < deadline + 10, "the old task never learned it lost its slot"
        time.sleep(0.02)
    mine.release()
    assert _slot(cloud)[1].holder == taker  # type: ignore[index]
    assert mine.reacquire() is False


def test_a_task_gives_its_slot_back_and_takes_it_again_if_nobody_did(cloud: Stack) -> None:
    _project(cloud)
    _submit(cloud, _agent(cloud))
    assert _ensure(cloud.ctx, cloud, "a").outcome is DispatchOutcome.STARTED
    mine = StoreLease(cloud.ctx.store, _lease(cloud), every_s=0.05)
    assert mine.held() is True
    mine.release()
    assert _slot(cloud)[1].state is SlotState.RELEASED  # type: ignore[index]
    assert mine.held() is False
    assert mine.reacquire() is True
    assert mine.held() is True
    assert _slot(cloud)[1].state is SlotState.RUNNING  # type: ignore[index]
    mine.release()
    # Given back, the slot is free: the next submission's dispatch starts a task at once.
    assert _ensure(cloud.ctx, cloud, "b").outcome is DispatchOutcome.STARTED


def test_the_sweep_starts_a_verifier_for_a_batch_waiting_to_be_verified_together(cloud: Stack) -> None:
    """A batch moves no task (the stream announces nothing): the scheduled sweep starts the
    verifier that runs it."""
    _project(cloud)
    projects.set_verifier_config(cloud.ctx, HUMAN, "shop", evidence.CONFIG)
    agent = _agent(cloud)
    ci = acting(
        keys.authenticate(
            cloud.ctx,
            keys.create(
                cloud.ctx, HUMAN, kind=CredentialKind.VERIFIER, name="ci2", verifier_kind=VerifierKind.LOCAL
            ).secret,
        )
    )
    criteria = [CriterionInput(text="works", kind=CriterionKind.TEST, verify_ref="tests.test_cart")]
    task = tasks.create(cloud.ctx, HUMAN, "shop", title="Cart", criteria=criteria).task
    token = claims.claim(cloud.ctx, agent, "shop", task_id=task.id).token
    claims.submit(cloud.ctx, agent, task.id, token, commit_sha=SHA, evidence="did it")
    evidence.run_verifier(cloud.ctx, ci, task.id, Evidence.PASS, base=evidence.BASE0)
    assert cloud.ctx.task(task.id).status is Status.VERIFIED
    event = {"sweep": True, "execution_id": "b-1", "scheduled_time": "2026-01-01T00:05:00Z"}
    assert cloud.invoke(handler, event) == {"started": {}, "lapsed": []}  # nothing waits yet
    batches.request(cloud.ctx, HUMAN, "shop", [task.id])
    report = cloud.invoke(handler, {**event, "execution_id": "b-2"})
    assert list(report["started"]) == ["shop"] and _running(cloud) == 1
