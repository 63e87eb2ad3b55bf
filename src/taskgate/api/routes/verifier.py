"""Verifier endpoints: verifier keys only. A local key finds waiting work, starts and finishes
runs; a reviewer key records its judgement of review criteria. The server decides the outcome."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query

from taskgate import runtime, telemetry
from taskgate.api.access import Access, caller, route
from taskgate.api.schemas import (
    BaseMoved,
    BaseMovedIn,
    BatchFinishIn,
    FinishIn,
    ReviewIn,
    RunFinished,
    RunWork,
    StartRun,
    WaitingWork,
)
from taskgate.domain.batches import Batch
from taskgate.domain.models import VerificationRun
from taskgate.service import batches, staleness, verification
from taskgate.telemetry import Metric

TAGS = ("verifier",)
RUN = "/api/verifier/runs/<task_id>/<run_id>"


@route(
    "GET",
    "/api/verifier/work",
    Access.LOCAL_VERIFIER,
    summary="Tasks waiting for verification: of one project, or of every project the key covers "
    "that has verification on",
    tags=TAGS,
)
def waiting_work(
    project: Annotated[str | None, Query()] = None,
    wait: Annotated[
        float | None,
        Query(
            description="With nothing to start, wait up to this many seconds (at most 20) for a "
            "submission before answering; the answer's wait_s says what was honoured"
        ),
    ] = None,
) -> WaitingWork:
    ctx = runtime.context()

    def together(queues: list[verification.Queue]) -> list[dict[str, str]]:
        return [
            {"project": q.project, "id": b}
            for q in queues
            for b in batches.open_batches(ctx, ctx.project(q.project))
        ]

    waiting, queues, waited = verification.queues_waiting(
        ctx, caller(), project, wait or 0.0, more=lambda qs: bool(together(qs))
    )
    body = {"items": [t.id for t in waiting], "batches": together(queues), "wait_s": waited}
    return WaitingWork.model_validate(body | {"projects": [vars(q) for q in queues]})


@route(
    "POST",
    "/api/verifier/runs",
    Access.LOCAL_VERIFIER,
    summary="Start a run on one waiting task (one live run per task)",
    status=201,
    tags=TAGS,
    body=True,
)
def start_run(body: StartRun) -> RunWork:
    started = verification.start(runtime.context(), caller(), task_id=body.task_id)
    return RunWork.model_validate(started.work)


@route(
    "POST",
    f"{RUN}/review",
    Access.REVIEWER,
    summary="Record the reviewer's results for review criteria",
    tags=TAGS,
    body=True,
)
def review_run(task_id: str, run_id: str, body: ReviewIn) -> VerificationRun:
    return verification.record_review(runtime.context(), caller(), task_id, run_id, body.results)


@route(
    "POST",
    f"{RUN}/finish",
    Access.LOCAL_VERIFIER,
    summary="Send checks and evidence; the server decides passed, failed or error",
    tags=TAGS,
    body=True,
)
def finish_run(task_id: str, run_id: str, body: FinishIn) -> RunFinished:
    # The body is the run's report (FinishIn is the domain's RunReport, checked as a body).
    run, task = verification.finish(runtime.context(), caller(), task_id, run_id, body)
    telemetry.count(Metric.VERDICTS, outcome=run.status)
    return RunFinished(run=run, task_status=task.status, needs_human=task.needs_human)


@route(
    "POST",
    "/api/verifier/projects/<project>/base",
    Access.LOCAL_VERIFIER,
    summary="The base branch moved: its new tip ({ref, tip}), from a verifier's poll, a CI step or a "
    "git host's push webhook (ref, after); verified tasks on an older tip become stale and are "
    "verified again",
    tags=TAGS,
    body=True,
)
def base_moved(project: str, body: BaseMovedIn) -> BaseMoved:
    moved = staleness.base_moved(runtime.context(), caller(), project, ref=body.ref, tip=body.new_tip)
    return BaseMoved.model_validate(vars(moved))


BATCH = "/api/verifier/projects/<project>/batches/<batch_id>/runs"


@route(
    "POST",
    BATCH,
    Access.LOCAL_VERIFIER,
    summary="Start the next run of a batch verified together: its tasks' commits, in order, to merge "
    "onto one tip (one live run per batch)",
    status=201,
    tags=TAGS,
)
def start_batch_run(project: str, batch_id: str) -> dict[str, Any]:
    return batches.start_step(runtime.context(), caller(), project, batch_id).work


@route(
    "POST",
    f"{BATCH}/<run_id>/finish",
    Access.LOCAL_VERIFIER,
    summary="Send a batch run's checks and each task's evidence; the server decides the run, bisects "
    "a failing batch, and at the end accepts what passed together and sends culprits back",
    tags=TAGS,
    body=True,
)
def finish_batch_run(project: str, batch_id: str, run_id: str, body: BatchFinishIn) -> Batch:
    report = batches.StepReport(
        tip=body.tip,
        tree=body.tree,
        branch=body.branch,
        checks=body.checks,
        results=body.results,
        conflict_task=body.conflict_task,
        conflict_paths=tuple(body.conflict_paths),
        error=body.error,
    )
    return batches.finish_step(runtime.context(), caller(), project, batch_id, run_id, report)
