"""Tasks: create, update, read, list, and what is ready next."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from taskgate.domain.errors import ErrorCode, TaskgateError, invalid, not_found
from taskgate.domain.human_actions import EDITABLE_STATUSES
from taskgate.domain.ids import own_criterion_id, parse_spec_id, parse_task_id, task_id
from taskgate.domain.lifecycle import Action, find_move
from taskgate.domain.models import (
    Criterion,
    CriterionInput,
    HistoryEvent,
    Note,
    Risk,
    Spec,
    SpecStatus,
    Status,
    Task,
    VerificationRun,
    check_max_attempts,
)
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting, actor_id
from taskgate.domain.specs import KEPT_CHANGES, criteria_change, criteria_of, numbered
from taskgate.domain.spread import spread
from taskgate.service import cascades, counters, human_moves, records, refs, requests
from taskgate.service.claims import settle_expiry, settle_project
from taskgate.service.context import Context, chained, event, put_event, put_task, storable
from taskgate.service.records import PRIORITY_MAX, PRIORITY_MIN
from taskgate.service.transitions import move
from taskgate.store.port import Check, Item, Put
from taskgate.store.port import Op as StoreOp
from taskgate.store.schema import IndexName

# Ready tasks a caller's next-task list is chosen from (keys only, so a wide window is cheap):
# wide enough that agents asking at once rarely share a first choice (domain/spread.py).
SPREAD_WINDOW = 64


@dataclass
class Written:
    task: Task
    warnings: list[str] = field(default_factory=list)


def _own_criteria(tid: str, given: list[CriterionInput]) -> list[Criterion]:
    return numbered(given, lambda index: own_criterion_id(tid, index))


def _check_priority(priority: int) -> None:
    if not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise invalid(f"priority must be between {PRIORITY_MIN} and {PRIORITY_MAX} (higher is taken first)")


def _resolve_spec(ctx: Context, project: str, spec_id: str | None, spec_criteria: list[str]) -> Spec | None:
    if spec_id is None:
        if spec_criteria:
            raise invalid("spec_criteria needs spec_id")
        return None
    spec = ctx.spec(project, spec_id)
    _check_spec_criteria(spec, spec_criteria)
    return spec


def _check_spec_criteria(spec: Spec, spec_criteria: list[str]) -> None:
    known = {c.id for c in spec.criteria}
    unknown = [c for c in spec_criteria if c not in known]
    if unknown:
        raise invalid(f"{', '.join(unknown)} not in {spec.id} (it has {', '.join(sorted(known))})")


def create(
    ctx: Context,
    who: Acting,
    project: str,
    *,
    title: str,
    description: str = "",
    spec_id: str | None = None,
    spec_criteria: list[str] | None = None,
    criteria: list[CriterionInput] | None = None,
    blocked_by: list[str] | None = None,
    priority: int = 0,
    risk: Risk | None = None,
    verification_commands: list[str] | None = None,
    max_attempts: int | None = None,
    request_id: str | None = None,
) -> Written:
    """Create a task. With request_id, a retry answers with the task the first call created."""
    authorize(Op.CREATE_TASK, who, project=project)
    if not title.strip():
        raise invalid("title must not be empty")
    storable(title, "title")
    _check_priority(priority)
    check_max_attempts(max_attempts)
    spec_criteria = spec_criteria or []
    blocked_by = blocked_by or []
    request = requests.begin(
        who,
        project,
        request_id,
        "task",
        title=title,
        description=description,
        spec_id=spec_id,
        spec_criteria=spec_criteria,
        criteria=[c.model_dump(mode="json") for c in criteria or []],
        blocked_by=blocked_by,
        priority=priority,
        risk=risk,
        verification_commands=verification_commands,
        max_attempts=max_attempts,
    )
    # The project's counter: read once up front, it is the check that the project exists and
    # the first try's number (a retry after a lost race reads it again). Read with it, in the
    # same request, what the duplicate-criterion warning needs first (refs.py).
    first_read = refs.read(ctx, [records.counter_key(project), *_index_keys(project, spec_id, criteria)])
    counter_item = first_read[records.counter_key(project)]
    if counter_item is None:
        raise not_found(f"project {project}")
    counter_read = [counter_item]
    index_read = [first_read]
    if request is not None and (first := _replayed(ctx, request)) is not None:
        return first
    spec = _resolve_spec(ctx, project, spec_id, spec_criteria)
    spec_read = [spec] if spec is not None else []
    if spec is None and not criteria:
        raise TaskgateError(
            ErrorCode.EMPTY_CRITERIA, "a task needs at least one acceptance criterion, its own or its spec's"
        )
    if spec is not None and risk is not None and risk is not spec.risk:
        raise invalid(f"risk comes from {spec.id} ({spec.risk.value}); omit it")
    cascades.check_blockers(ctx, project, blocked_by, None)

    def attempt() -> Written:
        if request is not None and (first := _replayed(ctx, request)) is not None:
            return first  # a racing retry of the same request created it meanwhile
        counter, number = counters.next_number(
            ctx, project, "task", counter_read.pop() if counter_read else None
        )
        tid = task_id(project, number)
        now = ctx.clock.now()
        # What the new task's status was decided from must still hold when it is written: a
        # spec approved or a blocker done in between would otherwise leave it stranded. (The
        # first try decides on the spec as read above; a retry reads it again.)
        guards: list[StoreOp] = []
        current = spec_read.pop() if spec_read else ctx.spec(project, spec.id) if spec is not None else None
        if current is not None:
            guards.append(Check(*records.spec_key(project, current.number), current.version))
        blockers = ctx.store.get_many([records.task_key(b) for b in blocked_by]) if blocked_by else []
        guards += cascades.wait_for(tid, [records.load(Task, b) for b in blockers])
        if current is not None and current.status is SpecStatus.DRAFT:
            action = Action.CREATE_DRAFT
        elif any(b.data.get("status") != Status.DONE.value for b in blockers):
            action = Action.CREATE_BLOCKED
        else:
            action = Action.CREATE_READY
        target = find_move(None, action).target
        task = Task(
            id=tid,
            project=project,
            number=number,
            title=title,
            description=description,
            status=target,
            priority=priority,
            risk=spec.risk if spec is not None else (risk or Risk.LOW),
            spec_id=spec.id if spec is not None else None,
            spec_criteria=spec_criteria,
            criteria=_own_criteria(tid, criteria or []),
            blocked_by=blocked_by,
            verification_commands=verification_commands,
            max_attempts=max_attempts,
            created_by=who.actor,
            created_at=now,
            updated_at=now,
            status_changed_at=now,
        )
        given = index_read.pop() if index_read else None
        indexed = refs.for_task(ctx, task, current, given=given, list_it=True)
        if current is not None:
            indexed.ops.append(refs.list_under_spec(ctx, project, current.number, tid, given))
        warnings = indexed.warnings
        ev = event(
            who, action.value, project=project, at=now, task=task, to_status=target, warnings=warnings or None
        )
        marker = [request.record(tid, warnings=warnings)] if request is not None else []
        task = chained(task, ev)
        ctx.commit([counter, put_task(None, task), put_event(ev), *guards, *marker, *indexed.ops])
        return Written(task.model_copy(update={"version": 1}), warnings)

    return ctx.retrying(attempt)


def _index_keys(
    project: str, spec_id: str | None, criteria: list[CriterionInput] | None
) -> list[tuple[str, str]]:
    """The index items a create will read (refs.py) that its input names: its own refs' and its
    spec's task list. Input that is not valid names none (the create refuses it later, in order)."""
    try:
        own = refs.keys_for(project, _own_criteria(task_id(project, 1), criteria or []))
        spec = [records.spec_tasks_key(project, parse_spec_id(spec_id))] if spec_id is not None else []
    except TaskgateError:
        return []
    return [*own, *spec]


def _replayed(ctx: Context, request: requests.Request) -> Written | None:
    first = request.replay(ctx)
    if first is None:
        return None
    return Written(ctx.task(str(first["id"])), [str(w) for w in first.get("warnings", [])])


def update(
    ctx: Context,
    who: Acting,
    tid: str,
    *,
    title: str | None = None,
    description: str | None = None,
    priority: int | None = None,
    criteria: list[CriterionInput] | None = None,
    spec_criteria: list[str] | None = None,
    verification_commands: list[str] | None = None,
    blocked_by: list[str] | None = None,
    status: Status | str | None = None,
    findings: list[str] | None = None,
    note: str | None = None,
) -> Written:
    """Edit a task that nobody is working on. Status is never written directly: it moves only
    by the lifecycle's actions. A `status` asks for a human's move to it (human_moves.py), alone
    (with the move's findings, blocked_by or note). The one edit that moves it is `blocked_by`:
    a ready task given an unfinished blocker becomes blocked, a blocked task left with none
    becomes ready, in the same commit as the edit (guarded on the blockers it was decided from).

    Criteria (the task's own, or which of its spec's it holds) are the goalposts: only a human
    changes them, or an architect while the task's spec is a draft (permissions.CHANGE_CRITERIA).
    A change after work on the task began is kept on the task for the next brief, and the
    history event holds the criteria before and after."""
    project, _ = parse_task_id(tid)
    if status is not None:
        edits = {
            "title": title,
            "description": description,
            "priority": priority,
            "criteria": criteria,
            "spec_criteria": spec_criteria,
            "verification_commands": verification_commands,
        }
        given_edits = sorted(k for k, v in edits.items() if v is not None)
        if given_edits:
            authorize(Op.SET_STATUS, who, project=project)  # an agent's answer is the same either way
            raise invalid(
                f"status goes alone (with findings, blocked_by or note for its move); "
                f"send {', '.join(given_edits)} in a call of its own"
            )
        moved, said = human_moves.move_to(
            ctx, who, tid, status, findings=findings, blocked_by=blocked_by, note=note
        )
        return Written(moved, said)
    authorize(Op.UPDATE_TASK, who, project=project)
    if findings is not None or note is not None:
        raise invalid("findings and note go with a status move (reopen, cancel, resolve)")
    edits_criteria = criteria is not None or spec_criteria is not None
    if edits_criteria:
        # Refused before anything is read when no spec state could allow it (an executor, a
        # delegated key); an architect's answer depends on the spec, read below.
        authorize(Op.CHANGE_CRITERIA, who, project=project, spec_draft=True)
    if priority is not None:
        _check_priority(priority)
    if title is not None and not title.strip():
        raise invalid("title must not be empty")
    storable(title, "title")
    if blocked_by is not None:
        cascades.check_blockers(ctx, project, blocked_by, tid)

    def attempt() -> Written:
        old = settle_expiry(ctx, ctx.task(tid))  # a lapsed claim is over, sweep or not
        if old.status not in EDITABLE_STATUSES:
            raise TaskgateError(
                ErrorCode.WRONG_STATE,
                f"{tid} is {old.status.value}; it can be edited only in backlog, ready, blocked or needs_human",
                current_status=old.status.value,
            )
        spec = ctx.spec(project, old.spec_id) if old.spec_id else None
        if edits_criteria:
            authorize(
                Op.CHANGE_CRITERIA,
                who,
                project=project,
                spec_draft=spec is not None and spec.status is SpecStatus.DRAFT,
            )
        given = {
            "title": title,
            "description": description,
            "priority": priority,
            "verification_commands": verification_commands,
        }
        changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        if spec_criteria is not None:
            if spec is None:
                raise invalid("spec_criteria needs a task linked to a spec")
            _check_spec_criteria(spec, spec_criteria)
            changes["spec_criteria"] = spec_criteria
        if criteria is not None:
            changes["criteria"] = _own_criteria(tid, criteria)
        guards: list[StoreOp] = []
        action: Action | None = None
        if blocked_by is not None:
            cascades.refuse_cycle(ctx, tid, blocked_by)
            changes["blocked_by"] = blocked_by
            blockers = ctx.store.get_many([records.task_key(b) for b in blocked_by])
            guards = cascades.wait_for(tid, [records.load(Task, b) for b in blockers])
            waiting = any(b.data.get("status") != Status.DONE.value for b in blockers)
            if old.status is Status.READY and waiting:
                action = Action.BLOCKERS_ADDED
            elif old.status is Status.BLOCKED and not waiting:
                action = Action.BLOCKERS_DONE
        if not changes:
            raise invalid("nothing to update")
        now = ctx.clock.now()
        new = old.model_copy(update={**changes, "updated_at": now})
        if not criteria_of(new, spec):
            raise TaskgateError(
                ErrorCode.EMPTY_CRITERIA, "a task must keep at least one acceptance criterion"
            )
        indexed = refs.for_task(ctx, new, spec, list_it=True) if edits_criteria else refs.TaskRefs()
        if edits_criteria and spec is not None:  # the warning, the index and the right to edit
            guards.append(Check(*records.spec_key(project, spec.number), spec.version))
        warnings = indexed.warnings
        detail: dict[str, Any] = {"fields": sorted(changes), "warnings": warnings or None}
        if edits_criteria:
            detail |= _criteria_detail(old, new, spec, who, now, changes)
        if action is not None:
            new, ev = move(old, ctx.project(project), action, who, now, changes=changes, **detail)
        else:
            new = new.model_copy(update=changes)
            ev = event(who, "updated", project=project, at=now, task=old, **detail)
            new = chained(new, ev)
        ctx.commit([put_task(old, new), put_event(ev), *guards, *indexed.ops])
        return Written(new.model_copy(update={"version": old.version + 1}), warnings)

    return ctx.retrying(attempt)


def _criteria_detail(
    old: Task, new: Task, spec: Spec | None, who: Acting, now: datetime, changes: dict[str, Any]
) -> dict[str, Any]:
    """The criteria the task must meet before and after an edit, for its history; and, when
    the task has had an attempt and the edit changed what it asks, the short record the next
    brief shows (put into `changes`)."""
    before, after = criteria_of(old, spec), criteria_of(new, spec)
    last = old.current_attempt()
    change = (
        criteria_change(before, after, after_attempt=last.number, by=who.actor, at=now)
        if last is not None
        else None
    )
    if change is not None:
        changes["criteria_changes"] = [*old.criteria_changes, change][-KEPT_CHANGES:]
    return {
        "criteria_before": [c.model_dump(mode="json", exclude_none=True) for c in before],
        "criteria_after": [c.model_dump(mode="json", exclude_none=True) for c in after],
        "criteria_changed_after_attempt": change.after_attempt if change is not None else None,
    }


def get(ctx: Context, who: Acting, tid: str) -> Task:
    project, _ = parse_task_id(tid)
    authorize(Op.READ, who, project=project)
    return settle_expiry(ctx, ctx.task(tid))


R = TypeVar("R", HistoryEvent, Note, VerificationRun)

MAX_NOTES = 100  # per task: a note is for the next agent, not a log (heartbeat notes go to history)
# The code's general advice (fix the arguments) cannot help here: no argument adds a note.
NOTES_FULL_HINT = (
    "No call adds another note to this task: record what others need with log_decision, "
    "or ask a human to put it in the task's description."
)
BRIEF_NOTES = 20  # the newest notes a brief considers; it may keep fewer to stay in budget


def _task_records(ctx: Context, who: Acting, tid: str, prefix: str, model: type[R]) -> list[R]:
    """Every record kept in a task's own partition under one prefix, oldest first."""
    project, _ = parse_task_id(tid)
    authorize(Op.READ, who, project=project)
    pk = records.task_pk(tid)
    items = ctx.all_pages(lambda c: ctx.store.query(pk, sk_prefix=prefix, limit=200, cursor=c))
    return [records.load(model, i) for i in items]


def _task_page(
    ctx: Context,
    who: Acting,
    tid: str,
    prefix: str,
    model: type[R],
    *,
    limit: int,
    cursor: str | None,
    newest_first: bool = False,
) -> tuple[list[R], str | None]:
    project, _ = parse_task_id(tid)
    authorize(Op.READ, who, project=project)
    if not 1 <= limit <= 200:
        raise invalid("limit must be between 1 and 200")
    page = ctx.store.query(
        records.task_pk(tid), sk_prefix=prefix, limit=limit, cursor=cursor, descending=newest_first
    )
    return [records.load(model, i) for i in page.items], page.cursor


def history(ctx: Context, who: Acting, tid: str) -> list[HistoryEvent]:
    return _task_records(ctx, who, tid, "H#", HistoryEvent)


def history_page(
    ctx: Context, who: Acting, tid: str, *, limit: int = 50, cursor: str | None = None
) -> tuple[list[HistoryEvent], str | None]:
    """A task's history one page at a time, oldest first."""
    return _task_page(ctx, who, tid, "H#", HistoryEvent, limit=limit, cursor=cursor)


def notes_page(
    ctx: Context, who: Acting, tid: str, *, limit: int = 50, cursor: str | None = None
) -> tuple[list[Note], str | None]:
    """A task's notes one page at a time, oldest first."""
    return _task_page(ctx, who, tid, "N#", Note, limit=limit, cursor=cursor)


def latest_notes(ctx: Context, who: Acting, tid: str, limit: int = BRIEF_NOTES) -> tuple[list[Note], int]:
    """The newest `limit` notes, oldest first, and how many the task has in all."""
    newest, _ = _task_page(ctx, who, tid, "N#", Note, limit=limit, cursor=None, newest_first=True)
    if len(newest) < limit:  # all of them: no need to read the count
        return newest[::-1], len(newest)
    counter = ctx.store.get(*records.notes_counter_key(tid))
    total = int(counter.data["count"]) if counter is not None else len(newest)
    return newest[::-1], max(total, len(newest))


def runs(ctx: Context, who: Acting, tid: str) -> list[VerificationRun]:
    return _task_records(ctx, who, tid, records.RUN_PREFIX, VerificationRun)


def list_tasks(
    ctx: Context,
    who: Acting,
    project: str,
    *,
    status: Status | None = None,
    spec_id: str | None = None,
    claimed_by: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> tuple[list[Task], str | None]:
    """Tasks of a project: by status in queue order (priority, then age; claimed ones by lease
    expiry), else by number. Lapsed leases are settled first, so every status shown is current.
    A spec or claimer filter applies to the page read, so a page may hold fewer than `limit`
    tasks; claimed_by ('agent:<name>' or '<name>') implies status claimed."""
    authorize(Op.READ, who, project=project)
    ctx.project(project)
    holder = actor_id(claimed_by) if claimed_by is not None else None
    if holder is not None:
        if status not in (None, Status.CLAIMED):
            raise invalid("claimed_by lists claimed tasks; omit status or pass 'claimed'")
        status = Status.CLAIMED
    settle_project(ctx, project)
    if status is not None:
        page = ctx.store.query_index(
            IndexName.QUEUE, records.queue_pk(project, status), limit=limit, cursor=cursor
        )
    else:
        page = ctx.store.query(
            records.project_pk(project), sk_prefix=records.TASK_SK_PREFIX, limit=limit, cursor=cursor
        )
    tasks = [records.load(Task, i) for i in page.items]
    if spec_id is not None:
        tasks = [t for t in tasks if t.spec_id == spec_id]
    if holder is not None:
        tasks = [t for t in tasks if t.claim is not None and t.claim.actor == holder]
    return tasks, page.cursor


def next_ready(ctx: Context, who: Acting, project: str, *, limit: int = 5) -> list[Task]:
    """The tasks this caller should take next: highest priority first, and among equal priority
    the caller's own order (domain/spread.py), ranked over the first SPREAD_WINDOW ready tasks
    (their queue keys only) so that agents asking at the same time get different first tasks;
    a task another caller was just shown first (offers.py) goes to the back of its band."""
    authorize(Op.READ, who, project=project)
    if not 1 <= limit <= 50:
        raise invalid("limit must be between 1 and 50")
    settle_project(ctx, project)  # lapsed leases count as ready, sweep or not
    pk = records.queue_pk(project, Status.READY)
    window = max(limit, SPREAD_WINDOW)
    keys = ctx.store.query_index_keys(IndexName.QUEUE, pk, limit=window)
    if not keys:
        ctx.project(project)  # an unknown project is E_NOT_FOUND, not an empty list
        return []
    # A queued task means its project exists (projects are never deleted): no read needed.
    store, caller = id(ctx.store), who.credential_id
    taken = ctx.offers.to_others(store, caller, [(k.pk, k.sk) for k in keys])
    # A queue entry's sort key (TASK#<n>) names its task within the project: hash that directly.
    chosen = spread(
        keys,
        caller,
        band=records.queued_band,
        task_id=lambda k: k.sk,
        offered={sk for _, sk in taken},
    )[:limit]
    found = ctx.store.get_many([(k.pk, k.sk) for k in chosen])
    # Read consistently: an index entry may be stale (DynamoDB), the item is not.
    ready = [(i, t) for i, t in ((i, records.load(Task, i)) for i in found) if t.status is Status.READY]
    if ready:
        ctx.offers.offer(store, caller, (ready[0][0].pk, ready[0][0].sk))
    return [t for _, t in ready]


def add_note(ctx: Context, who: Acting, tid: str, body: str) -> Note:
    """Attach a note; a task holds at most MAX_NOTES (a counter item moves with each note)."""
    project, _ = parse_task_id(tid)
    authorize(Op.ADD_NOTE, who, project=project)
    if not body.strip():
        raise invalid("note body must not be empty")
    if len(body) > 20_000:
        raise invalid("a note holds at most 20000 characters")
    ctx.task(tid)

    def attempt() -> Note:
        key = records.notes_counter_key(tid)
        counter = ctx.store.get(*key)
        if counter is not None:
            count = int(counter.data["count"])
        else:  # a task from before the counter: count its notes once
            pk = records.task_pk(tid)
            count = sum(
                1 for _ in ctx.all_pages(lambda c: ctx.store.query(pk, sk_prefix="N#", limit=200, cursor=c))
            )
        if count >= MAX_NOTES:
            raise TaskgateError(
                ErrorCode.VALIDATION,
                f"{tid} already has {MAX_NOTES} notes, the most a task holds; put lasting knowledge "
                "in the task description or log_decision",
                hint=NOTES_FULL_HINT,
            )
        now = ctx.clock.now()
        note = Note(id=records.stamp(now), task_id=tid, project=project, author=who.actor, body=body, at=now)
        version = counter.version if counter is not None else None
        ctx.commit(
            [
                Put(Item(*key, {"count": count + 1}, (version or 0) + 1), version),
                Put(records.note_item(note)),
            ]
        )
        return note

    return ctx.retrying(attempt)
