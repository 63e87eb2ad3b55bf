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
local worker find the task later if it is switched on).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from taskgate import telemetry
from taskgate.service import records
from taskgate.service.context import Context
from taskgate.store.port import ConflictError, Item, Put
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


# (dispatch id, task id) -> what was started. The dispatch id is stable across retries of
# the same submission; a launcher uses it as its idempotency token.
Launch = Callable[[str, str], str]


def dispatch(ctx: Context, entered: Entered, launch: Launch) -> Outcome:
    if not ctx.project(entered.project).verification_on:
        return Outcome.VERIFICATION_OFF
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
    started = launch(f"{pk}|{sk}", entered.task_id)
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
