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
    LandingEvidenceIn,
    LandingPushIn,
    ReviewIn,
    RunFinished,
    RunWork,
    StartRun,
    WaitingWork,
)
from taskgate.domain.batches import Batch
from taskgate.domain.landing import Step
from taskgate.domain.models import VerificationRun
from taskgate.service import batches, landing, staleness, verification
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

    def to_land(queues: list[verification.Queue]) -> list[str]:
        return [q.project for q in queues if landing.has_work(ctx, ctx.project(q.project))]

    waiting, queues, waited = verification.queues_waiting(
        ctx, caller(), project, wait or 0.0, more=lambda qs: bool(together(qs)) or bool(to_land(qs))
    )
    body = {
        "items": [t.id for t in waiting],
        "batches": together(queues),
        "landing": to_land(queues),
        "wait_s": waited,
    }
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


LANDING = "/api/verifier/projects/<project>/landing/runs"


@route(
    "POST",
    LANDING,
    Access.LOCAL_VERIFIER,
    summary="Start the next step of the project's landing queue: the head entries' commits, in "
    "order, to merge onto the base branch's tip, each prefix to test (one live step per queue)",
    status=201,
    tags=TAGS,
)
def start_landing_step(project: str) -> dict[str, Any]:
    return landing.start_step(runtime.context(), caller(), project)


@route(
    "POST",
    f"{LANDING}/<run_id>/evidence",
    Access.LOCAL_VERIFIER,
    summary="Send how each prefix of a landing step did; the server decides which prefix's commit "
    "to push (`push`), or applies what it decided at once when there is none",
    tags=TAGS,
    body=True,
)
def landing_evidence(project: str, run_id: str, body: LandingEvidenceIn) -> Step:
    ev = landing.Evidence(
        branch=body.branch,
        tip=body.tip,
        error=body.error,
        prefixes=tuple(
            landing.Prefix(
                task_id=p.task_id,
                head=p.head,
                tree=p.tree,
                already=p.already,
                reused=p.reused,
                conflict_paths=tuple(p.conflict_paths),
                checks=p.checks,
                results=p.results,
            )
            for p in body.prefixes
        ),
    )
    return landing.record_evidence(runtime.context(), caller(), project, run_id, ev)


@route(
    "POST",
    f"{LANDING}/<run_id>/push",
    Access.LOCAL_VERIFIER,
    summary="Say what the push of the decided commit did: landed (its tasks are done) or refused "
    "(the tip moved: nothing lands, the next step builds on the new tip)",
    tags=TAGS,
    body=True,
)
def landing_push(project: str, run_id: str, body: LandingPushIn) -> Step:
    return landing.record_push(
        runtime.context(), caller(), project, run_id, head=body.head, pushed=body.pushed, why=body.why
    )
