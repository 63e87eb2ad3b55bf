"""Dispatch (cloud): start one verifier run for each submission, when verification is on.

A task entering `needs_verification` (a submission, or a human's "verify again") is worth one
verifier container, never two: streams deliver a record at least once, and a failed batch is
delivered again. The guard is a dispatch record in the task's own partition, keyed by the
attempt and by the task version that entered the status (a stream retry or a duplicate record
carries the same pair; a later "verify again" of the same attempt is a new version):

1. write it as `starting` (must not exist), then start the container, then mark it `started`;
2. a delivery that finds it `started` starts nothing;
3. one that finds it `starting` comes after a try that stopped between its record and the
   answer of its start (a crash, a timeout, a refused start): it starts again with the same
   dispatch id, which the launcher turns into the start request's idempotency token, so a
   start that did land is not repeated.

The project's verification switch lives on the project, not on the task, so it is read here:
with verification off nothing is started and nothing is written (the nightly run and the
local worker find the task later if it is switched on). So is its verifier image: the container
starts from the task definition registered for it (service/images.py), or the stack's own.

The nightly run (`nightly`) starts one container per project that has verification on and work
waiting, each `verify --once --project <p>` in that project's image. Per project, not per image:
a container then only ever sees one project's checkouts, and a project whose image changed
never has its work picked up by a container of another image. Projects without waiting work
start nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from taskgate import telemetry
from taskgate.domain.models import Status
from taskgate.service import images, records
from taskgate.service.context import Context
from taskgate.store.port import ConflictError, Item, Put
from taskgate.store.schema import IndexName
from taskgate.telemetry import Metric


class State(StrEnum):
    STARTING = "starting"
    STARTED = "started"


class Dispatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    attempt: int
    version: int
    state: State
    at: datetime
    started_at: datetime | None = None
    started: str | None = None  # what the launcher started (e.g. the ECS task ARN)


class Outcome(StrEnum):
    STARTED = "started"
    DUPLICATE = "duplicate"  # this submission's verifier was started before
    VERIFICATION_OFF = "verification_off"


@dataclass(frozen=True)
class Entered:
    """A task that entered needs_verification: at which attempt, in which version of the task."""

    task_id: str
    project: str
    attempt: int
    version: int


# (dispatch id, task id, task definition) -> what was started. The dispatch id is stable
# across retries of the same submission; a launcher uses it as its idempotency token.
Launch = Callable[[str, str, str], str]
# (start id, project, task definition) -> what was started; the start id as above.
LaunchProject = Callable[[str, str, str], str]
# Told when a project's image revision was copied from an older stack task definition.
Stale = Callable[[str, str], None]


def _no_note(_project: str, _task_definition: str) -> None:
    return None


def dispatch(
    ctx: Context, entered: Entered, launch: Launch, *, base: str, stale: Stale = _no_note
) -> Outcome:
    """`base`: the stack's verifier task definition, for projects whose config names no image."""
    project = ctx.project(entered.project)
    if not project.verification_on:
        return Outcome.VERIFICATION_OFF
    task_definition, old = images.task_definition_for(ctx, project, base)  # NotRegistered: retried
    if old:
        stale(project.name, task_definition)
    pk, sk = records.dispatch_key(entered.task_id, entered.attempt, entered.version)
    now = ctx.clock.now()
    record = Dispatch(
        task_id=entered.task_id,
        attempt=entered.attempt,
        version=entered.version,
        state=State.STARTING,
        at=now,
    )
    stored_version = 1
    try:
        ctx.store.commit([Put(Item(pk, sk, record.model_dump(mode="json")))])
    except ConflictError:
        item = ctx.store.get(pk, sk)
        if item is None:  # pragma: no cover - dispatch records are never deleted
            raise
        previous = Dispatch.model_validate(item.data)
        if previous.state is State.STARTED:
            return Outcome.DUPLICATE
        record, stored_version = previous, item.version
    started = launch(f"{pk}|{sk}", entered.task_id, task_definition)
    done = record.model_copy(
        update={"state": State.STARTED, "started_at": ctx.clock.now(), "started": started}
    )
    try:
        ctx.store.commit(
            [Put(Item(pk, sk, done.model_dump(mode="json"), stored_version + 1), stored_version)]
        )
    except ConflictError:
        # A concurrent delivery of the same record marked it first (its start carried the same
        # idempotency token, so there is still one container).
        return Outcome.DUPLICATE
    telemetry.count(Metric.VERIFIER_TASKS)
    return Outcome.STARTED


@dataclass(frozen=True)
class NightlyStart:
    project: str
    task_definition: str
    started: str


@dataclass
class Nightly:
    started: list[NightlyStart]
    failed: dict[str, str]  # project -> why nothing started for it


def _waiting(ctx: Context, project: str) -> bool:
    page = ctx.store.query_index(
        IndexName.QUEUE, records.queue_pk(project, Status.NEEDS_VERIFICATION), limit=1
    )
    return bool(page.items)


def nightly(
    ctx: Context, run_id: str, launch: LaunchProject, *, base: str, stale: Stale = _no_note
) -> Nightly:
    """One container per project with verification on and work waiting. `run_id` is the
    schedule's execution id: a retried invocation sends the same start ids, so ECS answers a
    start that already happened with the task it started. One project failing (an image never
    registered, ECS refusing) starts the others and is reported."""
    out = Nightly(started=[], failed={})
    for name in ctx.project_names():
        project = ctx.project(name)
        if not project.verification_on or not _waiting(ctx, name):
            continue
        try:
            task_definition, old = images.task_definition_for(ctx, project, base)
            if old:
                stale(name, task_definition)
            arn = launch(f"nightly|{run_id}|{name}", name, task_definition)
        except Exception as exc:  # reported per project; the run goes on with the next one
            out.failed[name] = f"{type(exc).__name__}: {exc}"
            continue
        telemetry.count(Metric.VERIFIER_TASKS)
        out.started.append(NightlyStart(project=name, task_definition=task_definition, started=arn))
    return out
