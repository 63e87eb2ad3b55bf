"""Tasks: list and create per project, read one with its history, runs and notes, edit one
nobody holds, add a note; and what humans do with submitted work: accept (one, or a low-risk
batch), reopen, cancel, resolve."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from taskgate import runtime
from taskgate.api.access import Access, caller, route
from taskgate.api.errors import HINTS
from taskgate.api.schemas import (
    Accepted,
    BatchAccept,
    BatchResult,
    CancelIn,
    NoteIn,
    QueuePlace,
    ReopenIn,
    ResolveIn,
    TaskCreate,
    TaskDetail,
    TaskOut,
    TaskPage,
    TaskPatch,
    TaskWritten,
)
from taskgate.domain.batches import Batch
from taskgate.domain.errors import ErrorCode
from taskgate.domain.ids import parse_task_id
from taskgate.domain.models import Note, Status
from taskgate.service import attestations, batches, landing, review, staleness, tasks

H = Access.HUMAN
TAGS = ("tasks",)


@route("GET", "/api/projects/<project>/tasks", H, summary="List tasks (by status: queue order)", tags=TAGS)
def list_tasks(
    project: str,
    status: Annotated[Status | None, Query()] = None,
    spec_id: Annotated[str | None, Query()] = None,
    claimed_by: Annotated[str | None, Query(description="'agent:<name>' or '<name>'")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query()] = None,
) -> TaskPage:
    items, next_cursor = tasks.list_tasks(
        runtime.context(),
        caller(),
        project,
        status=status,
        spec_id=spec_id,
        claimed_by=claimed_by,
        limit=limit,
        cursor=cursor,
    )
    ctx = runtime.context()
    p = staleness.seen_base(ctx, ctx.project(project), items)
    return TaskPage(items=[TaskOut.of(t, p.verification_on, p.base_tip) for t in items], cursor=next_cursor)


@route("POST", "/api/projects/<project>/tasks", H, summary="Create a task", status=201, tags=TAGS, body=True)
def create_task(project: str, body: TaskCreate) -> TaskWritten:
    written = tasks.create(
        runtime.context(),
        caller(),
        project,
        title=body.title,
        description=body.description,
        spec_id=body.spec_id,
        spec_criteria=body.spec_criteria,
        criteria=body.criteria,
        blocked_by=body.blocked_by,
        priority=body.priority,
        risk=body.risk,
        verification_commands=body.verification_commands,
        max_attempts=body.max_attempts,
        request_id=body.request_id,
    )
    return TaskWritten(task=TaskOut.of(written.task), warnings=written.warnings)


@route(
    "GET",
    "/api/tasks/<task_id>",
    H,
    summary="A task with its runs, and a page of its history and notes (oldest first)",
    tags=TAGS,
)
def get_task(
    task_id: str,
    limit: Annotated[int, Query(ge=1, le=200, description="History events and notes per page")] = 50,
    history_cursor: Annotated[str | None, Query()] = None,
    notes_cursor: Annotated[str | None, Query()] = None,
) -> TaskDetail:
    ctx, who = runtime.context(), caller()
    task = tasks.get(ctx, who, task_id)
    history, next_history = tasks.history_page(ctx, who, task_id, limit=limit, cursor=history_cursor)
    notes, next_notes = tasks.notes_page(ctx, who, task_id, limit=limit, cursor=notes_cursor)
    runs = tasks.runs(ctx, who, task_id)
    return TaskDetail(
        task=TaskOut.of(
            task,
            (p := staleness.seen_base(ctx, ctx.project(task.project), [task])).verification_on,
            p.base_tip,
        ).model_copy(
            update={
                "queue": QueuePlace.model_validate(place) if (place := landing.place(ctx, task)) else None
            }
        ),
        history=history,
        history_cursor=next_history,
        runs=runs,
        signed_runs=[r.id for r in runs if attestations.signed_by(ctx.attestor, r.attestation, run=r)],
        notes=notes,
        notes_cursor=next_notes,
    )


@route(
    "PATCH",
    "/api/tasks/<task_id>",
    H,
    summary="Edit a task nobody holds: title, description, priority, blockers, criteria",
    tags=TAGS,
    body=True,
)
def edit_task(task_id: str, body: TaskPatch) -> TaskWritten:
    written = tasks.update(
        runtime.context(),
        caller(),
        task_id,
        title=body.title,
        description=body.description,
        priority=body.priority,
        blocked_by=body.blocked_by,
        criteria=body.criteria,
        spec_criteria=body.spec_criteria,
        verification_commands=body.verification_commands,
    )
    return TaskWritten(task=TaskOut.of(written.task), warnings=written.warnings)


@route(
    "POST", "/api/tasks/<task_id>/notes", H, summary="Add a note to a task", status=201, tags=TAGS, body=True
)
def add_note(task_id: str, body: NoteIn) -> Note:
    return tasks.add_note(runtime.context(), caller(), task_id, body.body)


@route(
    "POST",
    "/api/tasks/<task_id>/accept",
    H,
    summary="Accept one task (any risk); warnings say when the verdict accepted was stale",
    tags=TAGS,
)
def accept_task(task_id: str) -> Accepted:
    done, warning = review.accept_saying(runtime.context(), caller(), task_id)
    return Accepted.model_validate(
        {**TaskOut.of(done).model_dump(), "warnings": [warning] if warning else []}
    )


@route(
    "POST",
    "/api/projects/<project>/accept",
    H,
    summary="Accept low-risk tasks in a batch; medium and high risk are refused (accept them one by "
    "one). With together: verify them merged together first, then accept what passes",
    tags=TAGS,
    body=True,
)
def accept_batch(project: str, body: BatchAccept) -> BatchResult:
    if body.together:
        queued = batches.request(runtime.context(), caller(), project, body.task_ids)
        return BatchResult(accepted=[], refused=[], batch=queued)
    out = review.accept_batch(runtime.context(), caller(), body.task_ids, project=project)
    refused = [{**r, "hint": HINTS[ErrorCode(r["code"])]} for r in out.refused]
    return BatchResult.model_validate(
        {"accepted": [TaskOut.of(t) for t in out.accepted], "refused": refused, "warnings": out.warnings}
    )


@route(
    "POST",
    "/api/tasks/<task_id>/reopen",
    H,
    summary="Send submitted, verified or done work back with findings",
    tags=TAGS,
    body=True,
)
def reopen_task(task_id: str, body: ReopenIn) -> TaskOut:
    return TaskOut.of(review.reopen(runtime.context(), caller(), task_id, findings=body.findings))


@route("POST", "/api/tasks/<task_id>/cancel", H, summary="Cancel a task", tags=TAGS, body=True)
def cancel_task(task_id: str, body: Annotated[CancelIn | None, Body()] = None) -> TaskOut:
    reason = body.reason if body is not None else ""
    return TaskOut.of(review.cancel(runtime.context(), caller(), task_id, reason=reason))


@route(
    "POST",
    "/api/tasks/<task_id>/resolve",
    H,
    summary="Answer a task in needs_human: requeue, block, revise_spec, reverify or cancel",
    tags=TAGS,
    body=True,
)
def resolve_task(task_id: str, body: ResolveIn) -> TaskOut:
    return TaskOut.of(
        review.resolve(
            runtime.context(),
            caller(),
            task_id,
            body.resolution,
            blocked_by=body.blocked_by,
            note=body.note,
        )
    )


@route(
    "GET",
    "/api/projects/<project>/batches/<batch_id>",
    H,
    summary="A batch verified together: its tasks, runs, culprits and what was accepted",
    tags=TAGS,
)
def get_batch(project: str, batch_id: str) -> Batch:
    return batches.get(runtime.context(), caller(), project, batch_id)


@route(
    "GET",
    "/api/projects/<project>/queue",
    H,
    summary="The project's landing queue: accepted tasks in the order they land, each one's state "
    "(waiting, testing on top of the ones ahead, landing), the live step and the last few",
    tags=TAGS,
)
def landing_queue(project: str) -> dict[str, Any]:
    return landing.show(runtime.context(), caller(), project)


@route(
    "POST",
    "/api/tasks/<task_id>/queue/head",
    H,
    summary="Move a task to the head of its landing queue (a hotfix), behind a push in flight",
    tags=TAGS,
)
def queue_head(task_id: str) -> dict[str, Any]:
    landing.hotfix(runtime.context(), caller(), task_id)
    return landing.show(runtime.context(), caller(), parse_task_id(task_id)[0])


@route(
    "POST",
    "/api/tasks/<task_id>/queue/leave",
    H,
    summary="Take a task out of its landing queue: it is verified again, neither accepted nor landed",
    tags=TAGS,
)
def queue_leave(task_id: str) -> dict[str, Any]:
    task = landing.leave(runtime.context(), caller(), task_id)
    return {"task_id": task.id, "status": task.status.value}
