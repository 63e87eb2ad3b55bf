"""Moves the system makes on its own: a spec approved, revised or re-risked; the last blocker done.

A cascade touches many tasks, one commit each (task + its history event), so a crash can cut it
short. Each is made safe to interrupt:

- A spec's change (approve, revise, risk) marks its cascade pending in the same commit as the
  spec (one marker item per spec). The cascade marks it done only once every task of the spec
  is in line; the sweeper re-runs every cascade still pending. Every step is idempotent: it re-reads the
  task and its spec and moves only what is out of line.
- A task done (accept) needs no marker: the sweeper settles every blocked task whose blockers
  are all done anyway, so accepting stays one write. Which tasks to look at, the accepted task
  itself says: every change that makes a task wait for another (create, update, a dependency
  failure, a human's block) lists it in the blocker's `dependents`, writing the blocker in the
  same commit (conditioned on its version, which guards the decision as the check it replaces
  did). An accept decided on a stale list loses its race on the blocker's version and is decided
  again, so a task accepted with nobody listed looks for nothing, and nobody is missed. (A task
  made to wait before these lists existed is not listed: the sweeper releases it, as it does
  when a crash cuts a cascade short.)
- Guards where it matters. Claiming a task is conditioned on its spec still being approved (see
  claims.py), and accepting on the spec's risk as read, so a half-done cascade can never let
  work be claimed under a draft, or accepted at a risk the spec no longer has.
"""

from __future__ import annotations

from collections.abc import Callable

from taskgate.domain.errors import ErrorCode, TaskgateError, invalid, not_found
from taskgate.domain.ids import parse_task_id
from taskgate.domain.lifecycle import Action
from taskgate.domain.models import OPEN_STATUSES, Spec, SpecStatus, Status, Task
from taskgate.service import records
from taskgate.service.context import SYSTEM, Context, chained, event, put_event, put_task
from taskgate.service.transitions import move
from taskgate.store.port import Check, Item, Op, Put

MAX_BLOCKERS = 20

SPEC_POINT = "cascade.spec"  # checkpoint after each task a spec cascade settled
DONE_POINT = "cascade.done"  # checkpoint after each task a "blocker done" cascade settled


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
    if not blocked_by:
        return
    found = {i.sk for i in ctx.store.get_many([records.task_key(b) for b in blocked_by])}
    for b in blocked_by:
        if records.task_key(b)[1] not in found:
            raise not_found(f"blocker task {b}")


def wait_for(dependent: str, blockers: list[Task]) -> list[Op]:
    """What the commit that makes `dependent` wait for `blockers` (as read) writes to them: each
    unfinished one lists it among its dependents; a done one (or one listing it already) is
    only checked, so the decision to wait or not still holds when it commits."""
    ops: list[Op] = []
    for b in blockers:
        if b.status is Status.DONE or dependent in b.dependents:
            ops.append(Check(*records.task_key(b.id), b.version))
        else:
            ops.append(put_task(b, b.model_copy(update={"dependents": [*b.dependents, dependent]})))
    return ops


def refuse_cycle(ctx: Context, task_id: str, blocked_by: list[str]) -> None:
    """A task may not wait, directly or through others, for a task that waits for it: neither
    would ever become ready. Walks the open tasks reachable through blocked_by."""
    seen: set[str] = set()
    frontier = list(blocked_by)
    while frontier:
        seen.update(frontier)
        nxt: list[str] = []
        for item in ctx.store.get_many([records.task_key(b) for b in frontier]):
            other = records.load(Task, item)
            if other.status in (Status.DONE, Status.CANCELLED):
                continue
            if task_id in other.blocked_by:
                raise invalid(f"{other.id} already waits for {task_id}: blocked_by would make a cycle")
            nxt += [b for b in other.blocked_by if b not in seen]
        frontier = list(dict.fromkeys(nxt))


def open_blockers(ctx: Context, task: Task) -> list[str]:
    if not task.blocked_by:
        return []
    items = ctx.store.get_many([records.task_key(b) for b in task.blocked_by])
    done = {records.load(Task, i).id for i in items if i.data.get("status") == Status.DONE.value}
    return [b for b in task.blocked_by if b not in done]


# -- markers: the intent of a cascade, written with the change that starts it --------------------


def mark_spec(ctx: Context, spec: Spec) -> Put:
    """The marker write to add to the spec's commit: its cascade is pending (whatever an
    earlier, cut-short cascade left there is overwritten)."""
    key = records.cascade_key(spec.project, "SPEC", spec.number)
    current = ctx.store.get(*key)
    version = current.version if current is not None else None
    return Put(Item(*key, {"spec": spec.id, "pending": True}, (version or 0) + 1), version)


def _done(ctx: Context, marker: Item | None) -> None:
    """Mark a cascade finished (a conditional put, like every change here: taskgate never
    deletes). If a newer spec change re-marked it meanwhile, the put fails and the marker stays
    pending for that change's own cascade (or the sweeper)."""
    if marker is None or not marker.data.get("pending"):
        return
    done = Item(marker.pk, marker.sk, {**marker.data, "pending": False}, marker.version + 1)
    try:
        ctx.commit([Put(done, marker.version)])
    except TaskgateError as exc:
        if exc.code is not ErrorCode.CONFLICT:
            raise


# -- the spec cascade: every open task of a spec in line with the spec ---------------------------


def _spec_guard(spec: Spec) -> Check:
    return Check(*records.spec_key(spec.project, spec.number), spec.version)


def _moved(ctx: Context, attempt: Callable[[], bool]) -> bool:
    """A cascade step, retried on a version race; a task gone meanwhile is simply not moved."""
    try:
        return ctx.retrying(attempt)
    except TaskgateError as exc:
        if exc.code is ErrorCode.NOT_FOUND:
            return False
        raise


def sync_task(ctx: Context, task_id: str) -> bool:
    """Put one task in line with its spec as the spec is now: back to backlog while the spec is
    a draft, out of backlog once it is approved, and the spec's risk. One commit, conditioned
    on the spec as read. True if the task changed."""

    def attempt() -> bool:
        task = ctx.task(task_id)
        if task.spec_id is None or task.status not in OPEN_STATUSES:
            return False
        spec = ctx.spec(task.project, task.spec_id)
        action: Action | None = None
        if spec.status is SpecStatus.DRAFT and task.status in (Status.READY, Status.BLOCKED):
            action = Action.SPEC_REVISED
        elif spec.status is SpecStatus.APPROVED and task.status is Status.BACKLOG:
            action = Action.SPEC_APPROVED_BLOCKED if open_blockers(ctx, task) else Action.SPEC_APPROVED
        risk_changed = task.risk is not spec.risk
        if action is None and not risk_changed:
            return False
        now = ctx.clock.now()
        risk = {"risk": spec.risk} if risk_changed else {}
        if action is not None:
            new, ev = move(
                task,
                ctx.project(task.project),
                action,
                SYSTEM,
                now,
                changes=risk,
                spec=spec.id,
                risk=spec.risk.value if risk_changed else None,
            )
        else:
            new = task.model_copy(update={**risk, "updated_at": now})
            ev = event(
                SYSTEM,
                "risk_changed",
                project=task.project,
                at=now,
                task=task,
                spec=spec.id,
                risk=spec.risk.value,
            )
            new = chained(new, ev)
        ctx.commit([put_task(task, new), put_event(ev), _spec_guard(spec)])
        return True

    return _moved(ctx, attempt)


def spec_changed(ctx: Context, project: str, sid: str) -> list[str]:
    """Run the cascade a spec change started (approve, revise, risk): every open task of the
    spec in line, then the marker removed. Returns the ids of the tasks that changed."""
    spec = ctx.spec(project, sid)
    marker = ctx.store.get(*records.cascade_key(project, "SPEC", spec.number))
    moved = []
    for status in sorted(OPEN_STATUSES):
        for t in [t for t in ctx.tasks_in_status(project, status) if t.spec_id == sid]:
            if sync_task(ctx, t.id):
                moved.append(t.id)
                ctx.checkpoint(SPEC_POINT)
    _done(ctx, marker)
    return moved


# -- the "blocker done" cascade -----------------------------------------------------------------


def settle(ctx: Context, task_id: str, from_status: Status) -> bool:
    """Move one task out of backlog/blocked if its conditions now hold. True if it moved."""

    def attempt() -> bool:
        task = ctx.task(task_id)
        if task.status is not from_status:
            return False
        project = ctx.project(task.project)
        blockers = open_blockers(ctx, task)
        guard: list[Op] = []
        draft = False
        if from_status is Status.BACKLOG:
            if task.spec_id is None:
                return False
            spec = ctx.spec(task.project, task.spec_id)
            if spec.status is not SpecStatus.APPROVED:
                return False
            guard.append(_spec_guard(spec))
            action = Action.SPEC_APPROVED_BLOCKED if blockers else Action.SPEC_APPROVED
        else:
            if blockers:
                return False
            action = Action.BLOCKERS_DONE
            if task.spec_id is not None:  # under a draft spec it waits in backlog instead
                spec = ctx.spec(task.project, task.spec_id)
                guard.append(_spec_guard(spec))
                draft = spec.status is SpecStatus.DRAFT
        new, ev = move(task, project, action, SYSTEM, ctx.clock.now(), spec_draft=draft)
        ctx.commit([put_task(task, new), put_event(ev), *guard])
        return True

    return _moved(ctx, attempt)


def task_done(ctx: Context, done: Task) -> list[str]:
    """Run the cascade an accept started (`done`: the task as accepted): of the tasks waiting for
    it, those whose last open blocker it was become ready."""
    moved = []
    for tid in done.dependents:
        if settle(ctx, tid, Status.BLOCKED):
            moved.append(tid)
            ctx.checkpoint(DONE_POINT)
    return moved


# -- the sweeper's repair ------------------------------------------------------------------------


def reconcile(ctx: Context, project: str) -> list[str]:
    """Finish every cascade a crash cut short in one project (the sweeper calls this): every
    marked spec change, then every backlog or blocked task whose conditions now hold."""
    moved: list[str] = []
    pk = records.project_pk(project)
    for item in list(ctx.all_pages(lambda c: ctx.store.query(pk, sk_prefix="CASCADE#", limit=100, cursor=c))):
        if item.data.get("pending"):
            moved += spec_changed(ctx, project, str(item.data["spec"]))
    backlog = [t.id for t in ctx.tasks_in_status(project, Status.BACKLOG) if t.spec_id is not None]
    moved += [tid for tid in backlog if settle(ctx, tid, Status.BACKLOG)]
    blocked = [t.id for t in ctx.tasks_in_status(project, Status.BLOCKED)]
    moved += [tid for tid in blocked if settle(ctx, tid, Status.BLOCKED)]
    return list(dict.fromkeys(moved))
