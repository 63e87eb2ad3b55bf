"""Task tools: create, edit, read, list, brief, notes, and batch acceptance of others' work."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from taskgate import runtime
from taskgate.domain import limits
from taskgate.domain.errors import invalid
from taskgate.domain.ids import parse_task_id
from taskgate.domain.models import CriterionInput, Risk, Status
from taskgate.domain.permissions import Op, authorize
from taskgate.mcp import views
from taskgate.mcp.args import (
    AgentId,
    Lines,
    OnBehalfOf,
    ProjectName,
    RequestId,
    ShortText,
    SpecId,
    TaskId,
    TaskIds,
    Text,
)
from taskgate.mcp.identity import who
from taskgate.mcp.registry import tool
from taskgate.service import batches, brief, landing, review, tasks
from taskgate.service.records import PRIORITY_MAX, PRIORITY_MIN

OwnCriteria = Annotated[
    list[CriterionInput] | None,
    Field(
        description="The task's own acceptance criteria, each {text, kind, verify_ref} (kind 'test': "
        "verify_ref names a test or group in the report; 'command': a shell command that must exit 0; "
        "'review': judged from the text). Needed when the task has no spec_id.",
        max_length=limits.CRITERIA,
    ),
]
SpecCriteria = Annotated[
    list[str] | None,
    Field(
        description="Ids of the spec's criteria this task delivers, e.g. ['AC-3.1', 'AC-3.2']. Attach a "
        "test or command criterion only to the task that completes it.",
        max_length=limits.CRITERIA,
    ),
]
Priority = Annotated[
    int,
    Field(
        description=f"Higher is claimed first ({PRIORITY_MIN}..{PRIORITY_MAX}).",
        ge=PRIORITY_MIN,
        le=PRIORITY_MAX,
    ),
]


@tool("Create a task")
def create_task(
    project: ProjectName,
    title: Annotated[ShortText, Field(description="What to do, in one line.")],
    description: Annotated[Text, Field(description="Details an agent without context needs.")] = "",
    spec_id: Annotated[SpecId | None, Field(description="The spec this task implements, if any.")] = None,
    spec_criteria: SpecCriteria = None,
    criteria: OwnCriteria = None,
    blocked_by: Annotated[
        list[TaskId] | None,
        Field(description="Tasks that must be done before this one can start.", max_length=limits.BLOCKERS),
    ] = None,
    priority: Priority = 0,
    risk: Annotated[
        Risk | None,
        Field(description="Only for a task without a spec (a spec's task takes the spec's risk)."),
    ] = None,
    verification_commands: Annotated[
        Lines | None, Field(description="Overrides the project's verification commands for this task.")
    ] = None,
    request_id: RequestId = None,
    agent_id: AgentId = None,
    on_behalf_of: OnBehalfOf = None,
) -> views.TaskWritten:
    """Create a task. It needs at least one acceptance criterion: its spec's (spec_id +
    spec_criteria) or its own (criteria).

    The task starts in backlog if its spec is still a draft, blocked if a blocked_by task is
    not done, else ready for any agent to claim. Returns the task and warnings (e.g. a test or
    command criterion that another open task also holds).
    """
    acting = who(agent_id, on_behalf_of)
    written = tasks.create(
        runtime.context(),
        acting,
        project,
        title=title,
        description=description,
        spec_id=spec_id,
        spec_criteria=spec_criteria,
        criteria=criteria,
        blocked_by=blocked_by,
        priority=priority,
        risk=risk,
        verification_commands=verification_commands,
        request_id=request_id,
    )
    return views.TaskWritten(task=views.task(written.task), warnings=written.warnings)


# The statuses a human's move can reach (the lifecycle table's human rows; a unit test holds
# this list to the table).
StatusMove = Literal[
    "ready", "blocked", "backlog", "needs_verification", "verified", "landing", "done", "cancelled"
]

FIXED_CRITERIA = (
    " Acceptance criteria are fixed once work can start: only a human (on the board) changes them, "
    "or an architect key while the task's spec is still a draft; anyone else is refused E_FORBIDDEN."
)


@tool("Update a task")
def update_task(
    task_id: TaskId,
    title: Annotated[ShortText | None, Field(description="New title; omit to keep.")] = None,
    description: Annotated[Text | None, Field(description="New description; omit to keep.")] = None,
    priority: Annotated[
        int | None, Field(description="New priority; omit to keep.", ge=PRIORITY_MIN, le=PRIORITY_MAX)
    ] = None,
    criteria: Annotated[
        list[CriterionInput] | None,
        Field(
            description="Replaces the task's own acceptance criteria, each {text, kind, verify_ref}."
            + FIXED_CRITERIA,
            max_length=limits.CRITERIA,
        ),
    ] = None,
    spec_criteria: Annotated[
        list[str] | None,
        Field(
            description="Replaces which of its spec's criteria the task holds, e.g. ['AC-3.1']."
            + FIXED_CRITERIA,
            max_length=limits.CRITERIA,
        ),
    ] = None,
    verification_commands: Annotated[
        Lines | None, Field(description="Replaces the task's verification commands; omit to keep.")
    ] = None,
    blocked_by: Annotated[
        list[TaskId] | None,
        Field(
            description="Tasks this one waits for. With status 'blocked': what a needs_human task "
            "now waits for. Without status: replaces the task's blockers (a ready task given an "
            "unfinished one becomes blocked).",
            max_length=limits.BLOCKERS,
        ),
    ] = None,
    status: Annotated[
        StatusMove | None,
        Field(
            description="Only for a move a human asked you to make for them, with on_behalf_of and "
            "nothing else to edit: 'cancelled' cancels; 'ready' reopens submitted, verified or done "
            "work (needs findings) or requeues a needs_human task; 'blocked' makes a needs_human "
            "task wait for blocked_by; 'backlog' sends a needs_human task's spec back to draft; "
            "'needs_verification' has a needs_human task verified again; 'done' accepts low-risk "
            "submitted work ('landing' too: where taskgate lands accepted work, it waits in the "
            "project's landing queue until it is on the base branch); 'verified' takes a task out "
            "of the landing queue (a human's, on the board: a delegated key is refused). Never for your own work: that moves by claim_task, submit_task, "
            "report_failure, escalate and release_task."
        ),
    ] = None,
    findings: Annotated[
        Lines | None,
        Field(
            description="With status 'ready' for submitted, verified or done work: what the next "
            "attempt must fix (at least one line)."
        ),
    ] = None,
    note: Annotated[
        ShortText | None,
        Field(
            description="With status 'cancelled', 'ready' (a requeue), 'blocked', 'backlog' or "
            "'needs_verification': why, for the task's history."
        ),
    ] = None,
    agent_id: AgentId = None,
    on_behalf_of: OnBehalfOf = None,
) -> views.TaskWritten:
    """Edit a task nobody is working on (status backlog, ready, blocked or needs_human): title,
    description, priority, blockers, verification commands. Lists you pass replace the current
    ones. Returns the task and any warnings.

    Acceptance criteria are the bar the work is verified against, and they are fixed once work
    can start: only a human changes them (on the board), or an architect key while the task's
    spec is still a draft. If a criterion is wrong or cannot be met, do not try to change it:
    claim the task and call report_failure(kind='spec_gap'), or escalate with a question.

    status is never for your own work, which moves by claim_task, submit_task, report_failure,
    escalate and release_task. It makes a human's move (cancel, reopen, requeue, block, revise,
    verify again, accept low risk) for them, only when a human explicitly asked you to in this
    conversation and delegated to your key: pass on_behalf_of='human:<name>' and status, with
    its findings, blocked_by or note. Refused with E_FORBIDDEN without on_behalf_of or the
    human's delegation, and for medium or high risk acceptance (a human accepts those on the
    board); refused with E_SELF_ACCEPT on any task your key claimed or submitted. The task's
    history records you and the human.
    """
    acting = who(agent_id, on_behalf_of)
    written = tasks.update(
        runtime.context(),
        acting,
        task_id,
        title=title,
        description=description,
        priority=priority,
        criteria=criteria,
        spec_criteria=spec_criteria,
        verification_commands=verification_commands,
        blocked_by=blocked_by,
        status=status,
        findings=findings,
        note=note,
    )
    return views.TaskWritten(task=views.task(written.task), warnings=written.warnings)


@tool("Get a task", read_only=True)
def get_task(
    task_id: TaskId,
    limit: Annotated[
        int, Field(description="How many notes and history events per page (1-100).", ge=1, le=100)
    ] = 20,
    notes_cursor: Annotated[
        str | None, Field(description="The notes_cursor a previous call returned, for the next notes.")
    ] = None,
    history_cursor: Annotated[
        str | None, Field(description="The history_cursor a previous call returned, for more history.")
    ] = None,
) -> views.TaskDetail:
    """Read a task in full: status, criteria, attempts (who, how each ended, findings),
    findings from reviews, the current claim, and its notes and history, oldest first, one
    page of each (pass notes_cursor / history_cursor on for more). To start work use
    claim_task; to read the working contract use get_task_brief."""
    ctx, acting = runtime.context(), who()
    task = tasks.get(ctx, acting, task_id)
    notes, next_notes = tasks.notes_page(ctx, acting, task_id, limit=limit, cursor=notes_cursor)
    history, next_history = tasks.history_page(ctx, acting, task_id, limit=limit, cursor=history_cursor)
    return views.TaskDetail(
        task=views.task(
            task, (p := ctx.project(task.project)).verification_on, p.base_tip, landing.place(ctx, task)
        ),
        notes=[
            views.NoteView(id=n.id, task_id=n.task_id, author=n.author, body=n.body, at=n.at) for n in notes
        ],
        notes_cursor=next_notes,
        history=[
            views.HistoryView(
                at=e.at,
                actor=e.actor,
                on_behalf_of=e.on_behalf_of,
                action=e.action,
                from_status=e.from_status,
                to_status=e.to_status,
                detail=e.detail,
            )
            for e in history
        ],
        history_cursor=next_history,
    )


@tool("List tasks", read_only=True)
def list_tasks(
    project: ProjectName,
    status: Annotated[
        Status | None, Field(description="Only tasks in this status (queue order: priority, then age).")
    ] = None,
    spec_id: Annotated[SpecId | None, Field(description="Only tasks of this spec.")] = None,
    claimed_by: Annotated[
        str | None,
        Field(
            description="Only tasks claimed by this agent ('agent:<name>' or '<name>'), e.g. your own.",
            max_length=100,
        ),
    ] = None,
    limit: Annotated[int, Field(description="Page size (1-200).", ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Field(description="The cursor a previous page returned.")] = None,
) -> views.TaskList:
    """List a project's tasks as short summaries, one page at a time (pass the returned cursor
    on). With a spec or claimed_by filter a page may hold fewer than limit tasks."""
    found, next_cursor = tasks.list_tasks(
        runtime.context(),
        who(),
        project,
        status=status,
        spec_id=spec_id,
        claimed_by=claimed_by,
        limit=limit,
        cursor=cursor,
    )
    return views.TaskList(tasks=[views.summary(t) for t in found], cursor=next_cursor)


@tool("Get next tasks", read_only=True)
def get_next_tasks(
    project: ProjectName,
    limit: Annotated[int, Field(description="How many (1-50).", ge=1, le=50)] = 5,
) -> views.NextTasks:
    """A look at the ready tasks, best first: highest priority first; tasks of equal priority in
    an order of your own, so agents reading this list at the same time see different first tasks.

    To start work call claim_task(project): it claims one of the best ready tasks for you, with
    no race to lose. Use claim_task(task_id=...) only when you must have one particular task.
    An empty list means nothing is ready right now.
    """
    return views.NextTasks(
        tasks=[views.summary(t) for t in tasks.next_ready(runtime.context(), who(), project, limit=limit)]
    )


@tool("Get a task brief", read_only=True)
def get_task_brief(task_id: TaskId) -> views.Brief:
    """The whole working contract for one task in under about 2,000 tokens: the task, its spec,
    acceptance criteria, conventions, verification commands, what the verifier will run, the
    test-ref rule, relevant decisions, dependencies, and findings of earlier attempts.
    claim_task already returns it; call this to re-read it."""
    return views.Brief(brief=brief.for_task(runtime.context(), who(), task_id))


@tool("Add a note")
def add_note(
    task_id: TaskId,
    body: Annotated[
        str,
        Field(
            description="The note (markdown, up to 20,000 characters).",
            min_length=1,
            max_length=limits.NOTE_CHARS,
        ),
    ],
    agent_id: AgentId = None,
    on_behalf_of: OnBehalfOf = None,
) -> views.NoteView:
    """Attach a note to a task, e.g. something the next agent should know. Notes appear in the
    task's brief (the newest ones) and in get_task. Works in any status; needs no claim. A task
    holds at most 100 notes: put lasting knowledge in a decision (log_decision) instead."""
    n = tasks.add_note(runtime.context(), who(agent_id, on_behalf_of), task_id, body)
    return views.NoteView(id=n.id, task_id=n.task_id, author=n.author, body=n.body, at=n.at)


@tool("Accept tasks (for a human)")
def accept_tasks(
    project: ProjectName,
    task_ids: Annotated[TaskIds, Field(description="Low-risk tasks of this project to accept (1-50).")],
    together: Annotated[
        bool,
        Field(
            description="Verify the tasks merged together onto the base branch first (at most 32, all "
            "verified, in this order), then accept what passes: nothing is accepted by this call."
        ),
    ] = False,
    agent_id: AgentId = None,
    on_behalf_of: OnBehalfOf = None,
) -> views.AcceptResult:
    """Accept submitted low-risk work as done, in a batch, on behalf of a human.

    Only when a human explicitly asks you to in this conversation: pass
    on_behalf_of='human:<name>' (they must have delegated to your key). Never accepts work you
    claimed or submitted yourself (E_SELF_ACCEPT), nor medium or high risk (a human accepts
    those on the board). Each task is accepted or refused on its own; returns both lists.

    With together=true, the tasks are first verified together: the verifier merges their commits
    in order onto the base branch's tip and runs the checks once. What passes together is then
    accepted for the human; a task that breaks the batch goes back to ready with a finding. The
    call returns the queued batch (accepted is empty) or refuses the whole batch: E_WRONG_STATE
    (a task not verified, verification off, or the project's merge setting is 'none'),
    E_FORBIDDEN (not low risk), E_CONFLICT (a task already waits in another batch),
    E_VALIDATION (empty, more than 32, repeated, or another project's task).
    """
    acting = who(agent_id, on_behalf_of)
    # Refuse the whole call up front when the caller may not accept at all (an agent without a
    # delegation), instead of returning the same refusal once per task.
    authorize(Op.ACCEPT, acting, project=project, risk=Risk.LOW)
    for tid in task_ids:
        if parse_task_id(tid)[0] != project:
            raise invalid(f"{tid} is not a task of project {project}")
    if together:
        queued = batches.request(runtime.context(), acting, project, list(task_ids))
        return views.AcceptResult(
            accepted=[],
            refused=[],
            batch=views.BatchQueued(
                id=queued.id,
                project=queued.project,
                task_ids=[e.task_id for e in queued.entries],
                status=queued.status,
                tip=queued.requested_tip,
            ),
        )
    result = review.accept_batch(runtime.context(), acting, task_ids)
    return views.AcceptResult(
        accepted=[views.summary(t) for t in result.accepted],
        refused=[views.Refusal.model_validate(r) for r in result.refused],
        warnings=result.warnings,
    )
