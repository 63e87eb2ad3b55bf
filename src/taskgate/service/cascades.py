"""Moves the system makes on its own: a spec approved, the last blocker done.

Each moved task is its own atomic commit (task + history event), retried on a version race;
the sweeper reconciles the same conditions, so a crash between commits loses nothing.
"""

from __future__ import annotations

from taskgate.domain.errors import ErrorCode, TaskgateError, invalid, not_found
from taskgate.domain.ids import parse_task_id
from taskgate.domain.lifecycle import Action
from taskgate.domain.models import OPEN_STATUSES, Risk, SpecStatus, Status, Task
from taskgate.service import records
from taskgate.service.context import SYSTEM, Context, event, put_event, put_task
from taskgate.service.transitions import move

MAX_BLOCKERS = 20


def check_blockers(ctx: Context, project: str, blocked_by: list[str], self_id: str | None) -> None:
    for b in blocked_by:
        p, _ = parse_task_id(b)
        if p != project:
            raise invalid(f"blocked_by {b}: blockers must be tasks of project {project}")
        if b == self_id:
            raise invalid("a task cannot block itself")
    if len(set(blocked_by)) != len(blocked_by):
        raise invalid("blocked_by lists a task twice")
    if len(blocked_by) > MAX_BLOCKERS:
        raise invalid(f"blocked_by: at most {MAX_BLOCKERS} tasks")
    found = {i.sk for i in ctx.store.get_many([records.task_key(b) for b in blocked_by])}
    for b in blocked_by:
        if records.task_key(b)[1] not in found:
            raise not_found(f"blocker task {b}")


def open_blockers(ctx: Context, task: Task) -> list[str]:
    if not task.blocked_by:
        return []
    items = ctx.store.get_many([records.task_key(b) for b in task.blocked_by])
    done = {records.load(Task, i).id for i in items if i.data.get("status") == Status.DONE.value}
    return [b for b in task.blocked_by if b not in done]


def settle(ctx: Context, task_id: str, from_status: Status) -> bool:
    """Move one task out of backlog/blocked if its conditions now hold. True if it moved."""

    def attempt() -> bool:
        task = ctx.task(task_id)
        if task.status is not from_status:
            return False
        project = ctx.project(task.project)
        blockers = open_blockers(ctx, task)
        if from_status is Status.BACKLOG:
            if task.spec_id is None or ctx.spec(task.project, task.spec_id).status is not SpecStatus.APPROVED:
                return False
            action = Action.SPEC_APPROVED_BLOCKED if blockers else Action.SPEC_APPROVED
        else:
            if blockers:
                return False
            action = Action.BLOCKERS_DONE
        new, ev = move(task, project, action, SYSTEM, ctx.clock.now())
        ctx.commit([put_task(task, new), put_event(ev)])
        return True

    try:
        return ctx.retrying(attempt)
    except TaskgateError as exc:
        if exc.code is ErrorCode.NOT_FOUND:
            return False
        raise


def spec_approved(ctx: Context, project: str, sid: str) -> list[str]:
    candidates = [t.id for t in ctx.tasks_in_status(project, Status.BACKLOG) if t.spec_id == sid]
    return [tid for tid in candidates if settle(ctx, tid, Status.BACKLOG)]


def task_done(ctx: Context, project: str, done_id: str) -> list[str]:
    candidates = [t.id for t in ctx.tasks_in_status(project, Status.BLOCKED) if done_id in t.blocked_by]
    return [tid for tid in candidates if settle(ctx, tid, Status.BLOCKED)]


def reconcile(ctx: Context, project: str) -> list[str]:
    """Everything a lost cascade could have left behind in one project (the sweeper calls this)."""
    moved = [t.id for t in ctx.tasks_in_status(project, Status.BACKLOG) if t.spec_id is not None]
    moved = [tid for tid in moved if settle(ctx, tid, Status.BACKLOG)]
    blocked = [t.id for t in ctx.tasks_in_status(project, Status.BLOCKED)]
    return moved + [tid for tid in blocked if settle(ctx, tid, Status.BLOCKED)]


def spec_revised(ctx: Context, project: str, sid: str) -> list[str]:
    """A spec back in draft takes its unclaimed tasks back to backlog, one commit each."""
    moved = []
    for status in (Status.READY, Status.BLOCKED):
        for t in [t for t in ctx.tasks_in_status(project, status) if t.spec_id == sid]:

            def attempt(tid: str = t.id, status: Status = status) -> bool:
                task = ctx.task(tid)
                if task.status is not status:
                    return False
                new, ev = move(
                    task, ctx.project(project), Action.SPEC_REVISED, SYSTEM, ctx.clock.now(), spec=sid
                )
                ctx.commit([put_task(task, new), put_event(ev)])
                return True

            if ctx.retrying(attempt):
                moved.append(t.id)
    return moved


def spec_risk_changed(ctx: Context, project: str, sid: str, risk: Risk) -> list[str]:
    """A task's risk is its spec's: follow a change of the spec's risk on every open task."""
    changed = []
    for status in OPEN_STATUSES:
        for t in [t for t in ctx.tasks_in_status(project, status) if t.spec_id == sid and t.risk is not risk]:

            def attempt(tid: str = t.id) -> bool:
                task = ctx.task(tid)
                if task.risk is risk:
                    return False
                now = ctx.clock.now()
                new = task.model_copy(update={"risk": risk, "updated_at": now})
                ev = event(
                    SYSTEM, "risk_changed", project=project, at=now, task=task, spec=sid, risk=risk.value
                )
                ctx.commit([put_task(task, new), put_event(ev)])
                return True

            if ctx.retrying(attempt):
                changed.append(t.id)
    return changed
