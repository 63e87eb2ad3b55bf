"""Dispatch (cloud): verifier tasks that drain a project's queue, at most N of them at once.

A task entering `needs_verification` (a submission, or a human's "verify again") needs a verifier
running for its project, not a container of its own: a container bills a minute at least and
spends most of it starting. So each project has up to N *slots* (N: the project's verifier config
`concurrency`, else the stack's VerifierConcurrency), one item each in the project's drain
partition. A verifier task holds a slot under a lease; it verifies the project's waiting work
until none is left, waits a little for more, gives the slot back and exits.

The base branch moving makes verified tasks stale (service/staleness.py); they are the
verifier's work as well, after the submissions, and count toward the same slots (`restale`, on
the stream's record of the move; `sweep`). `ensure(project)` is the one way a verifier task
starts (the stream, the nightly run and the sweep all call it):

1. with fewer live slots (their lease not lapsed) than N and than the submissions in the queue,
   take the first free or lapsed slot with a conditional write (must not exist, or the lapsed item's version): of racing dispatchers one
   wins each slot, so never more than N tasks hold one;
2. start the container with the slot's holder id (its lease reference, and the start's
   idempotency token), then note what started;
3. else start nothing: the running tasks pick the work up (`DispatchOutcome.DRAINING`), so a submission
   arriving while a task drains (or waits for more) is verified by that task.

The lease is what keeps a lost task from holding work back. A starting slot is leased for
START_LEASE (image pull and start), and the task renews it every LEASE / 4 while it runs
(cloud/drain_lease.py, through this module's `renew`). A task that crashed, was stopped by Spot,
or hangs without renewing leaves a lapsed slot, which the next `ensure` takes over and the
scheduled sweep (`sweep`) marks (logged once), starting a task wherever work waits with no live
slot. Nothing here deletes: a given-back or lapsed slot stays as an item whose lease has ended
(at most N per project), so neither the dispatcher nor the task needs a delete permission.

A task whose slot was taken over while it still ran (a renewal lost on the network) learns so on
its next renewal and stops after its current run; two tasks verifying one project never verify
the same submission twice (starting a run is the one atomic claim).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from taskgate import telemetry
from taskgate.domain.clock import iso
from taskgate.domain.models import Project, Status
from taskgate.service import batches, images, landing, records, staleness
from taskgate.service.context import Context
from taskgate.store.port import ConflictError, Item, Put, lapsed
from taskgate.store.schema import IndexName
from taskgate.telemetry import Metric

LEASE = timedelta(minutes=2)
# From the start request to the task's first renewal: Fargate's image pull and container start.
START_LEASE = timedelta(minutes=5)
DEFAULT_CONCURRENCY = 2


class SlotState(StrEnum):
    STARTING = "starting"  # the start was requested; the task has not renewed yet
    RUNNING = "running"  # the task renewed its lease at least once
    RELEASED = "released"  # the task gave it back (its lease ends at once)
    LAPSED = "lapsed"  # its task stopped renewing: found by the sweep, logged once


class Slot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: str
    slot: int
    holder: str  # who holds it: unique per acquisition, the task's lease reference
    state: SlotState
    at: datetime
    started: str | None = None  # what the launcher started (the ECS task ARN)
    renewed_at: datetime | None = None


class DispatchOutcome(StrEnum):
    STARTED = "started"
    DRAINING = "draining"  # as many tasks as allowed hold a live slot: they pick the work up
    VERIFICATION_OFF = "verification_off"
    NOTHING_STALE = "nothing_stale"  # the base moved, and no verified task waits for it
    NOTHING_TO_LAND = "nothing_to_land"  # the landing queue changed, and no step waits in it


@dataclass(frozen=True)
class Entered:
    """A task that entered needs_verification: at which attempt, in which version of the task."""

    task_id: str
    project: str
    attempt: int
    version: int


@dataclass(frozen=True)
class Lease:
    """What a draining task needs to renew and give back its slot."""

    project: str
    slot: int
    holder: str


@dataclass(frozen=True)
class DrainStarted:
    outcome: DispatchOutcome
    slot: int | None = None
    started: str | None = None
    task_definition: str | None = None


# (start id, project, task definition, lease) -> what was started (e.g. the ECS task ARN). The
# start id is the lease's holder: a launcher uses it as the start's idempotency token.
LaunchDrain = Callable[[str, str, str, Lease], str]
# Told when a project's image revision was copied from an older stack task definition.
Stale = Callable[[str, str], None]


def _no_note(_project: str, _task_definition: str) -> None:
    return None


class Contended(RuntimeError):
    """Every free slot was taken by a racing dispatcher while this one tried: retried later."""


def concurrency(ctx: Context, project: str, stack_default: int) -> int:
    config = ctx.project(project).verifier_config
    if config is not None and config.concurrency is not None:
        return config.concurrency
    return max(1, stack_default)


def slots(ctx: Context, project: str) -> list[tuple[Item, Slot]]:
    pk, _ = records.drain_key(project, 0)
    page = ctx.store.query(pk, sk_prefix="SLOT#", limit=100)
    return [(item, Slot.model_validate(item.data)) for item in page.items]


def live_slots(ctx: Context, project: str) -> list[Slot]:
    now = iso(ctx.clock.now())
    return [s for item, s in slots(ctx, project) if not lapsed(item.expires, now)]


def ensure(
    ctx: Context,
    project: str,
    launch: LaunchDrain,
    *,
    base: str,
    start_id: str,
    stack_concurrency: int = DEFAULT_CONCURRENCY,
    stale: Stale = _no_note,
) -> DrainStarted:
    """A verifier task draining `project` if fewer than its concurrency hold a live slot.
    `base`: the stack's task definition, for projects whose config names no image; `start_id`:
    what asked (a stream record, a schedule's run), stable when the same request comes again."""
    p = ctx.project(project)
    if not p.verification_on:
        return DrainStarted(DispatchOutcome.VERIFICATION_OFF)
    task_definition, old = images.task_definition_for(ctx, p, base)  # NotRegistered: retried
    if old:
        stale(project, task_definition)
    cap = concurrency(ctx, project, stack_concurrency)
    # One task per waiting submission or stale verified task, up to the cap: a second task helps
    # only when the queue holds more than the running ones take. At least one, for the
    # submission that asked (the queue index may not show it yet).
    demand = max(1, work(ctx, p, cap))
    # Each pass loses at most one slot to a racer, so cap + 1 passes see every slot settled.
    for _ in range(cap + 1):
        now = ctx.clock.now()
        held = {s.slot: (item, s) for item, s in slots(ctx, project)}
        alive = {n for n, (item, _) in held.items() if not lapsed(item.expires, iso(now))}
        if len(alive) >= min(cap, demand):
            return DrainStarted(DispatchOutcome.DRAINING)
        free = min(n for n in range(cap) if n not in alive)
        before = held.get(free)
        version = before[0].version + 1 if before else 1
        holder = f"{start_id}#{free}#{version}"
        record = Slot(project=project, slot=free, holder=holder, state=SlotState.STARTING, at=now)
        pk, sk = records.drain_key(project, free)
        item = Item(pk, sk, record.model_dump(mode="json"), version, expires=iso(now + START_LEASE))
        try:
            ctx.store.commit([Put(item, before[0].version if before else None)])
        except ConflictError:
            continue  # another dispatcher took this slot first: look again
        lease = Lease(project=project, slot=free, holder=holder)
        try:
            started = launch(holder, project, task_definition, lease)
        except Exception:
            release(ctx, lease)  # a start that failed holds nothing back; the caller retries
            raise
        _note_started(ctx, lease, started)
        telemetry.count(Metric.VERIFIER_TASKS)
        return DrainStarted(
            DispatchOutcome.STARTED, slot=free, started=started, task_definition=task_definition
        )
    raise Contended(f"project {project}: every free verifier slot was taken while starting one")


def _note_started(ctx: Context, lease: Lease, started: str) -> None:
    """Records what started, for an operator; the task may have renewed first, which wins."""
    got = _holding(ctx, lease)
    if got is None:
        return
    item, slot = got
    done = slot.model_copy(update={"started": started})
    try:
        ctx.store.commit(
            [
                Put(
                    Item(
                        item.pk, item.sk, done.model_dump(mode="json"), item.version + 1, expires=item.expires
                    ),
                    item.version,
                )
            ]
        )
    except ConflictError:
        return


def _holding(ctx: Context, lease: Lease) -> tuple[Item, Slot] | None:
    pk, sk = records.drain_key(lease.project, lease.slot)
    item = ctx.store.get(pk, sk)
    if item is None:
        return None
    slot = Slot.model_validate(item.data)
    return (item, slot) if slot.holder == lease.holder else None


def _rewrite(ctx: Context, item: Item, slot: Slot, update: dict[str, object], until: datetime) -> bool:
    """Write the slot back changed, its lease ending at `until`, only if nobody wrote it since it
    was read; False when somebody did."""
    changed = slot.model_copy(update=update)
    put = Put(
        Item(item.pk, item.sk, changed.model_dump(mode="json"), item.version + 1, expires=iso(until)),
        item.version,
    )
    try:
        ctx.store.commit([put])
    except ConflictError:
        return False
    return True


def renew(ctx: Context, lease: Lease) -> bool:
    """Push the lease to now + LEASE; False once the slot is no longer this holder's (taken over
    after it lapsed, or given back), and the task then stops after its current run."""
    for _ in range(3):
        got = _holding(ctx, lease)
        if got is None:
            return False
        item, slot = got
        now = ctx.clock.now()
        if _rewrite(ctx, item, slot, {"state": SlotState.RUNNING, "renewed_at": now}, now + LEASE):
            return True
        # else: the dispatcher noting what it started, between the read and the write
    return False


def release(ctx: Context, lease: Lease) -> None:
    """Give the slot back (a draining task that found nothing more to do): its lease ends now."""
    _end(ctx, lease, SlotState.RELEASED)


def _end(ctx: Context, lease: Lease, state: SlotState) -> None:
    for _ in range(3):
        got = _holding(ctx, lease)
        if got is None:
            return
        item, slot = got
        if _rewrite(ctx, item, slot, {"state": state}, ctx.clock.now()):
            return


def reacquire(ctx: Context, lease: Lease) -> bool:
    """Take the given-back slot again (work arrived as the task was leaving): only if nobody
    took it over meanwhile, who would then drain that work."""
    got = _holding(ctx, lease)
    if got is None:
        return False
    item, slot = got
    now = ctx.clock.now()
    return _rewrite(ctx, item, slot, {"state": SlotState.RUNNING, "renewed_at": now}, now + LEASE)


def queued(ctx: Context, project: str, up_to: int) -> int:
    """Submissions waiting for or under verification in `project`, counted up to `up_to`."""
    page = ctx.store.query_index(
        IndexName.QUEUE, records.queue_pk(project, Status.NEEDS_VERIFICATION), limit=up_to
    )
    return len(page.items)


def waiting(ctx: Context, project: str) -> bool:
    """A submission waits, or a batch a human asked to verify together, or accepted work to
    land (which no stream record announces: the scheduled sweep starts a verifier for them)."""
    p = ctx.project(project)
    return queued(ctx, project, 1) > 0 or bool(batches.open_batches(ctx, p)) or landing.has_work(ctx, p)


def work(ctx: Context, project: Project, up_to: int) -> int:
    """What a verifier would take in `project`: submissions, then stale verified tasks (the same
    work the verifier route hands out), counted up to `up_to`."""
    n = queued(ctx, project.name, up_to)
    if n < up_to and not project.lands():
        # every verified task is read to find the stale ones: only when it can matter (with
        # landing on, a stale verdict is re-checked in the landing queue, not re-verified)
        n += len(staleness.stale_tasks(ctx, project))
    if n < up_to and landing.has_work(ctx, project):  # one step at a time: one task's work
        n += 1
    return min(n, up_to)


def restale(
    ctx: Context,
    project: str,
    launch: LaunchDrain,
    *,
    base: str,
    start_id: str,
    stack_concurrency: int = DEFAULT_CONCURRENCY,
    stale: Stale = _no_note,
) -> DrainStarted:
    """The base branch moved (a push webhook, a verifier's read): a verifier draining `project`
    for the verified tasks that are stale now, under the same slots as submissions. A move that
    left nothing stale starts nothing."""
    p = ctx.project(project)
    if not p.verification_on:
        return DrainStarted(DispatchOutcome.VERIFICATION_OFF)
    # With landing on, stale verdicts wait for the landing queue to re-check them: a move (often
    # the queue's own landing) is work only while the queue has a step to take.
    if p.lands() and not landing.has_work(ctx, p):
        return DrainStarted(DispatchOutcome.NOTHING_STALE)
    if not p.lands() and not staleness.stale_tasks(ctx, p):
        return DrainStarted(DispatchOutcome.NOTHING_STALE)
    return ensure(
        ctx, project, launch, base=base, start_id=start_id, stack_concurrency=stack_concurrency, stale=stale
    )


def land(
    ctx: Context,
    project: str,
    launch: LaunchDrain,
    *,
    base: str,
    start_id: str,
    stack_concurrency: int = DEFAULT_CONCURRENCY,
    stale: Stale = _no_note,
) -> DrainStarted:
    """The landing queue changed (an accepted task joined it): a verifier draining `project`
    when a landing step waits, under the same slots as submissions."""
    p = ctx.project(project)
    if not p.verification_on:
        return DrainStarted(DispatchOutcome.VERIFICATION_OFF)
    if not landing.has_work(ctx, p):
        return DrainStarted(DispatchOutcome.NOTHING_TO_LAND)
    return ensure(
        ctx, project, launch, base=base, start_id=start_id, stack_concurrency=stack_concurrency, stale=stale
    )


class Why(StrEnum):
    """Why a scheduled run wanted a verifier for a project."""

    SUBMISSIONS = "submissions"  # submissions wait for verification
    STALE = "stale"  # verified tasks wait to be verified again on the moved base
    READ_TIP = "read_tip"  # nightly: verdicts hold for a base tip the server may not know moved


@dataclass
class Sweep:
    started: list[tuple[str, DrainStarted]]
    failed: dict[str, str]  # project -> why nothing started for it
    lapsed: list[tuple[str, int]]  # slots whose task stopped renewing, found this time
    why: dict[str, Why] = field(default_factory=dict)  # project -> why a verifier was wanted


def wanted(ctx: Context, project: Project, *, read_tips: bool) -> Why | None:
    """Whether a scheduled run needs a verifier draining `project`, and why. The cloud learns a
    base tip only from a push webhook or a verifier reading the repository, so the nightly run
    (`read_tips`) also starts one wherever verdicts hold for a tip: the task reads the tip on
    its first look at the queue and re-verifies what the move made stale."""
    if not project.verification_on:
        return None
    if waiting(ctx, project.name):
        return Why.SUBMISSIONS
    if staleness.stale_tasks(ctx, project):
        return Why.STALE
    if read_tips and staleness.tip_to_read(ctx, project):
        return Why.READ_TIP
    return None


def sweep(
    ctx: Context,
    run_id: str,
    launch: LaunchDrain,
    *,
    base: str,
    stack_concurrency: int = DEFAULT_CONCURRENCY,
    stale: Stale = _no_note,
    prefix: str = "sweep",
    read_tips: bool = False,
) -> Sweep:
    """Mark lapsed slots, and make sure a verifier drains every project with verification on
    and work waiting (submissions, stale verified tasks). The nightly run is this (prefix
    "nightly", `read_tips`: see `wanted`); so is the scheduled sweep that keeps a lost task from
    holding work back. `run_id` is the schedule's execution id: a retried invocation sends the
    same start ids. One project failing starts the others and is reported."""
    out = Sweep(started=[], failed={}, lapsed=[])
    now = iso(ctx.clock.now())
    for name in ctx.project_names():
        for item, slot in slots(ctx, name):
            if lapsed(item.expires, now) and slot.state in (SlotState.STARTING, SlotState.RUNNING):
                lost = slot.model_copy(update={"state": SlotState.LAPSED})
                try:
                    ctx.store.commit(
                        [
                            Put(
                                Item(
                                    item.pk,
                                    item.sk,
                                    lost.model_dump(mode="json"),
                                    item.version + 1,
                                    expires=item.expires,
                                ),
                                item.version,
                            )
                        ]
                    )
                    out.lapsed.append((name, slot.slot))
                except ConflictError:
                    pass  # renewed or taken over meanwhile: it is live again
        project = ctx.project(name)
        why = wanted(ctx, project, read_tips=read_tips)
        if why is None:
            continue
        out.why[name] = why
        try:
            result = ensure(
                ctx,
                name,
                launch,
                base=base,
                start_id=f"{prefix}|{run_id}|{name}",
                stack_concurrency=stack_concurrency,
                stale=stale,
            )
        except Exception as exc:  # reported per project; the run goes on with the next one
            out.failed[name] = f"{type(exc).__name__}: {exc}"
            continue
        out.started.append((name, result))
    return out
