"""The sweeper function with EventBridge Scheduler's event, on DynamoDB (moto): it expires
exactly the leases that are due, and leaves alone a lease its holder renews between the
sweeper's read and its write (a real interleaving of two threads, each with its own client)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from taskgate import runtime
from taskgate.cloud.sweeper import handler
from taskgate.domain.clock import ManualClock
from taskgate.domain.ids import parse_task_id
from taskgate.domain.models import AttemptEnding, CredentialKind, CriterionInput, Status
from taskgate.domain.principals import Acting, acting, human
from taskgate.service import claims, keys, projects, tasks
from taskgate.service.context import Context
from taskgate.store.dynamodb import DynamoDBStore
from tests.functions.stack import Stack, stack
from tests.support.sweeps import abandoned_run, scheduler_event

HUMAN = acting(human("alice"))


@pytest.fixture
def cloud() -> Iterator[Stack]:
    with stack() as s:
        yield s


def _agent(ctx: Context, name: str) -> Acting:
    return acting(
        keys.authenticate(ctx, keys.create(ctx, HUMAN, kind=CredentialKind.AGENT, name=name).secret)
    )


def test_the_sweeper_expires_exactly_the_leases_that_are_due(cloud: Stack) -> None:
    now = datetime.now(UTC)
    past = Context(cloud.ctx.store, ManualClock(now - timedelta(minutes=30)))  # claims made 30 min ago
    for name in ("shop", "site"):  # the sweep goes through every project's claimed queue
        projects.create(past, HUMAN, name, repo=f"https://git.example.com/{name}.git")
    agent = _agent(past, "builder")
    due, live = [], []
    for n, lease in enumerate([5, 45, 10, 60, 29, 31, 1, 120, 15, 90, 20, 40]):
        project = ("shop", "site")[n // 2 % 2]
        task = tasks.create(past, HUMAN, project, title=f"t{n}", criteria=[CriterionInput(text="ok")]).task
        claims.claim(past, agent, project, task_id=task.id, lease_minutes=lease)
        (due if lease < 30 else live).append(task.id)
    assert {parse_task_id(t)[0] for t in due} == {"shop", "site"}

    first = cloud.invoke(handler, scheduler_event(now))
    assert sorted(first["expired"]) == sorted(due)
    for tid in due:
        task = cloud.ctx.task(tid)
        assert task.status is Status.READY and task.claim is None
        assert task.attempts[-1].ending is AttemptEnding.EXPIRED
    for tid in live:
        assert cloud.ctx.task(tid).status is Status.CLAIMED

    # Warm invocation: nothing more is due.
    assert cloud.invoke(handler, scheduler_event(now + timedelta(minutes=1)))["expired"] == []

    logs = cloud.output.logs()
    expired_lines = [line for line in logs if line.get("message") == "lease expired"]
    assert sorted(line["task_id"] for line in expired_lines) == sorted(due)
    assert all(line["principal"] == "system:sweeper" for line in logs if line.get("message"))
    assert {line["correlation_id"] for line in logs} == {scheduler_event(now)["execution_id"]}
    assert cloud.output.metrics()[("LeaseExpiries", ())] == len(due)


def test_a_lease_renewed_between_the_sweepers_read_and_its_write_is_left_alone(cloud: Stack) -> None:
    clock = ManualClock(datetime.now(UTC) - timedelta(hours=1))
    ctx = cloud.ctx
    ctx.clock = clock  # the sweeper's Context (the function's process-wide one) on the test clock
    projects.create(ctx, HUMAN, "shop", repo="https://git.example.com/shop.git")
    agent = _agent(ctx, "builder")
    task = tasks.create(ctx, HUMAN, "shop", title="race", criteria=[CriterionInput(text="ok")]).task
    token = claims.claim(ctx, agent, "shop", task_id=task.id, lease_minutes=10).token
    clock.advance(minutes=10, seconds=-1)  # one second before the lease runs out

    # The holder works from another process in the cloud: its own client on the same table.
    holder_store = DynamoDBStore(cloud.table, region_name="us-east-1")
    holder = Context(holder_store, clock)
    holder_checked, sweeper_read, holder_wrote = threading.Event(), threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def pause_before_write(**_: Any) -> None:  # the holder has read and checked its lease
        holder_checked.set()
        assert sweeper_read.wait(30)

    def after_write(**_: Any) -> None:
        holder_wrote.set()

    holder_store._client.meta.events.register_first("before-call.dynamodb.PutItem", pause_before_write)
    holder_store._client.meta.events.register("after-call.dynamodb.PutItem", after_write)

    def paused_sweeper_write(**_: Any) -> None:  # the sweeper has read the task and decided
        sweeper_read.set()
        assert holder_wrote.wait(30)

    sweeper_client = ctx.store._client  # type: ignore[attr-defined]
    sweeper_client.meta.events.register_first("before-call.dynamodb.TransactWriteItems", paused_sweeper_write)

    def renew() -> None:
        try:
            claims.heartbeat(holder, agent, task.id, token)
        except BaseException as exc:
            failures.append(exc)

    results: list[dict[str, Any]] = []

    def sweep() -> None:
        try:
            results.append(cloud.invoke(handler, scheduler_event(clock.now())))
        except BaseException as exc:
            failures.append(exc)

    holder_thread = threading.Thread(target=renew)
    holder_thread.start()
    try:
        assert holder_checked.wait(30)
        clock.advance(seconds=2)  # now the lease is due, as the sweeper will see it
        sweeper_thread = threading.Thread(target=sweep)
        sweeper_thread.start()
        sweeper_thread.join(60)
        holder_thread.join(60)
    finally:
        sweeper_client.meta.events.unregister("before-call.dynamodb.TransactWriteItems", paused_sweeper_write)
        holder_store.close()
    assert not failures, failures
    assert sweeper_read.is_set() and holder_wrote.is_set()  # the interleaving really happened

    assert results == [{"expired": [], "cascaded": [], "abandoned_runs": []}]
    after = runtime.context().task(task.id)
    assert after.status is Status.CLAIMED
    assert after.claim is not None and after.claim.expires_at > clock.now()
    assert after.claim.last_heartbeat_at is not None
    history = tasks.history(runtime.context(), HUMAN, task.id)
    assert [e.action for e in history][-1] == "claim"  # no expiry was recorded
    assert not any(e.action == "expire" for e in history)
    assert cloud.output.metrics()[("LostRaces", ())] == 1


def test_the_sweeper_ends_a_verification_run_nobody_finished_as_an_error(cloud: Stack) -> None:
    now = datetime.now(UTC)
    past = Context(cloud.ctx.store, ManualClock(now - timedelta(hours=3)))
    task_id, run_id = abandoned_run(
        past, "shop", _agent(past, "builder"), "0123456789abcdef0123456789abcdef01234567"
    )

    assert cloud.invoke(handler, scheduler_event(now))["abandoned_runs"] == [task_id]
    after = cloud.ctx.task(task_id)
    assert after.live_run is None and after.status is Status.NEEDS_VERIFICATION  # waits for another run
    [ended] = [r for r in tasks.runs(cloud.ctx, HUMAN, task_id) if r.id == run_id]
    assert ended.status == "error"
    # Decided by the sweeper, signed in the same commit with the stack's KMS key: WARNED.
    from taskgate.service import attestations
    from taskgate.signing import bundle

    assert attestations.signed_by(cloud.ctx.attestor, ended.attestation)
    key = cloud.ctx.attestor.public_key()  # type: ignore[union-attr]
    lines = [json.dumps(e) for e in attestations.bundle(cloud.ctx, HUMAN, task_id)]
    [stmt] = bundle.verify(lines, key).statements
    assert stmt["predicate"]["result"] == "WARNED"
    assert stmt["predicate"]["taskgate"]["error"].startswith(f"run {run_id} got no answer within")
    assert after.attestation_head is not None
    assert cloud.output.metrics()[("Verdicts", (("outcome", "error"),))] == 1
    [line] = [
        line for line in cloud.output.logs() if line.get("message", "").startswith("verification run ended")
    ]
    assert line["task_id"] == task_id and line["principal"] == "system:sweeper"
