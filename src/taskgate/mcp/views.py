"""What the MCP tools return: pydantic models, so each tool publishes an exact output schema.

Built from domain records; secrets (the claim token's hash) never leave. Kept free of the
`mcp` package so it stays cheap to import and easy to test.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taskgate.domain.commit_ids import Sha
from taskgate.domain.merging import BaseTip, held_for, stale_line, stale_on
from taskgate.domain.models import (
    Attempt,
    CriteriaChange,
    Criterion,
    Decision,
    ExecutionDefaults,
    Finding,
    NeedsHuman,
    Phase,
    Project,
    Risk,
    Spec,
    Status,
    Task,
)
from taskgate.domain.taskview import attempt_state, mismatches


class View(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProjectView(View):
    name: str
    repo: str
    description: str
    max_attempts: int = Field(description="Attempts a task gets before it goes to a human")
    lease_minutes: int = Field(description="Default claim lease; heartbeat before it runs out")
    verification_on: bool = Field(description="Whether a verifier must pass submitted work before acceptance")
    execution_defaults: ExecutionDefaults
    verifier_checks: list[str] = Field(description="Names of the checks the verifier runs, if configured")


class ProjectList(View):
    projects: list[ProjectView]


class ClaimView(View):
    actor: str
    attempt: int
    claimed_at: datetime
    expires_at: datetime
    lease_minutes: int
    phase: Phase
    last_heartbeat_at: datetime | None = None


class TaskSummary(View):
    id: str
    title: str
    status: Status
    priority: int
    risk: Risk
    spec_id: str | None
    blocked_by: list[str]
    attempts_used: int
    claimed_by: str | None = Field(description="Who holds the claim, while the task is claimed")
    lease_expires_at: datetime | None
    updated_at: datetime


class AttemptView(Attempt):
    state: str = Field(
        description="How it ended, or 'in progress', or where its submission waits "
        "('submitted, waiting for verification', 'submitted, waiting for a human')"
    )
    self_report_mismatch: list[str] = Field(
        description="Criteria reported as pass in this attempt that a verifier failed"
    )


class TaskView(View):
    id: str
    project: str
    title: str
    description: str
    status: Status
    priority: int
    risk: Risk
    spec_id: str | None
    spec_criteria: list[str] = Field(description="Ids of the spec's criteria this task holds")
    criteria: list[Criterion] = Field(description="Criteria of the task's own")
    blocked_by: list[str]
    verification_commands: list[str] | None
    attempts_used: int
    max_attempts: int | None
    attempts: list[AttemptView]
    findings: list[Finding]
    criteria_changes: list[CriteriaChange] = Field(
        description="Changes of the criteria made after work on the task began, oldest first"
    )
    claim: ClaimView | None
    needs_human: NeedsHuman | None = Field(
        description="While the task is in needs_human: why it waits for a human, and the reason"
    )
    verified_on: str | None = Field(
        default=None,
        description="While verified: what the verdict holds for, e.g. the commit merged onto main at <tip>",
    )
    stale: str | None = Field(
        default=None,
        description="While verified on a base tip the base branch has moved on from: where it is now "
        "(the verifier checks the task again on that tip by itself)",
    )
    queue: str | None = Field(
        default=None,
        description="While landing (accepted, waiting to be landed on the base branch by taskgate): its "
        "place in the landing queue and its state, e.g. '2 of 3, waiting'. Dependants start once it lands",
    )
    landed: str | None = Field(
        default=None,
        description="Once landed: the commit on the base branch its work landed as, e.g. "
        "'main at <sha> (from <tip>)'",
    )
    created_by: str
    created_at: datetime
    updated_at: datetime
    status_changed_at: datetime


class HistoryView(View):
    at: datetime
    actor: str
    on_behalf_of: str | None
    action: str
    from_status: Status | None
    to_status: Status | None
    detail: dict[str, Any]


class NoteView(View):
    id: str
    task_id: str
    author: str
    body: str
    at: datetime


class TaskWritten(View):
    task: TaskView
    warnings: list[str] = Field(
        description="Non-fatal problems, e.g. a criterion also held by another open task"
    )


class TaskDetail(View):
    task: TaskView
    notes: list[NoteView]
    notes_cursor: str | None = Field(
        description="Pass back as notes_cursor for the next notes; null: no more"
    )
    history: list[HistoryView]
    history_cursor: str | None = Field(
        description="Pass back as history_cursor for more history; null: no more"
    )


class TaskList(View):
    tasks: list[TaskSummary]
    cursor: str | None = Field(description="Pass to the next call for the next page; null on the last page")


class NextTasks(View):
    tasks: list[TaskSummary]


class Claimed(View):
    task_id: str
    claim_token: str = Field(description="Secret proof of your claim; every later call on this task needs it")
    attempt: int
    lease_minutes: int
    expires_at: datetime
    brief: dict[str, Any] = Field(description="Everything needed to do the task (same as get_task_brief)")
    next: str


class HeartbeatDone(View):
    task_id: str
    expires_at: datetime
    phase: Phase
    next: str


class TaskMoved(View):
    task: TaskSummary
    next: str


class Brief(View):
    brief: dict[str, Any]


class SpecApproved(View):
    spec: Spec
    tasks_moved: list[str] = Field(description="Tasks that left backlog because of this approval")


class SpecList(View):
    specs: list[Spec]
    cursor: str | None


class DecisionList(View):
    decisions: list[Decision]


class SearchHit(View):
    kind: str = Field(description="decision, spec or task")
    id: str
    title: str
    status: str | None = None
    score: float


class SearchResults(View):
    results: list[SearchHit]


class Refusal(View):
    task_id: str
    code: str
    message: str
    current_status: str | None = None


class AcceptResult(View):
    accepted: list[TaskSummary]
    refused: list[Refusal]
    warnings: list[str] = Field(
        default_factory=list,
        description="Said about accepted tasks: a verdict that was stale (the base branch moved since)",
    )
    batch: BatchQueued | None = Field(
        default=None, description="With together=true: the batch queued to be verified together"
    )


class BatchQueued(View):
    id: str
    project: str
    task_ids: list[str] = Field(description="In the order their commits are merged")
    status: str
    tip: Sha | None = Field(default=None, description="The base branch's tip as known when it was asked for")


# -- builders ---------------------------------------------------------------------------------


def project(p: Project) -> ProjectView:
    return ProjectView(
        name=p.name,
        repo=p.repo,
        description=p.description,
        max_attempts=p.max_attempts,
        lease_minutes=p.lease_minutes,
        verification_on=p.verification_on,
        execution_defaults=p.execution_defaults,
        verifier_checks=sorted(p.verifier_config.checks) if p.verifier_config else [],
    )


def summary(t: Task) -> TaskSummary:
    return TaskSummary(
        id=t.id,
        title=t.title,
        status=t.status,
        priority=t.priority,
        risk=t.risk,
        spec_id=t.spec_id,
        blocked_by=t.blocked_by,
        attempts_used=t.attempts_used,
        claimed_by=t.claim.actor if t.claim else None,
        lease_expires_at=t.claim.expires_at if t.claim else None,
        updated_at=t.updated_at,
    )


def task(
    t: Task,
    verification_on: bool | None = None,
    base_tip: BaseTip | None = None,
    queue: dict[str, Any] | None = None,
) -> TaskView:
    """`base_tip`: the project's base branch tip as last reported, when the caller read it;
    `queue`: the task's place in its landing queue (service/landing.place), when it has one."""
    verified = t.status is Status.VERIFIED and t.verified_base is not None
    claim = (
        ClaimView(
            actor=t.claim.actor,
            attempt=t.claim.attempt,
            claimed_at=t.claim.claimed_at,
            expires_at=t.claim.expires_at,
            lease_minutes=t.claim.lease_minutes,
            phase=t.claim.phase,
            last_heartbeat_at=t.claim.last_heartbeat_at,
        )
        if t.claim
        else None
    )
    return TaskView(
        id=t.id,
        project=t.project,
        title=t.title,
        description=t.description,
        status=t.status,
        priority=t.priority,
        risk=t.risk,
        spec_id=t.spec_id,
        spec_criteria=t.spec_criteria,
        criteria=t.criteria,
        blocked_by=t.blocked_by,
        verification_commands=t.verification_commands,
        attempts_used=t.attempts_used,
        max_attempts=t.max_attempts,
        attempts=[
            AttemptView(
                **a.model_dump(),
                state=attempt_state(t, a, verification_on),
                self_report_mismatch=mismatches(t, a.number),
            )
            for a in t.attempts
        ],
        findings=t.findings,
        criteria_changes=t.criteria_changes,
        claim=claim,
        needs_human=t.needs_human,
        verified_on=held_for(t.verified_base) if verified else None,
        stale=stale_line(base_tip)
        if verified and base_tip is not None and stale_on(t.verified_base, base_tip)
        else None,
        queue=f"{queue['position']} of {queue['of']}, {queue['state']}" if queue else None,
        landed=f"{t.landed.branch} at {t.landed.commit} (from {t.landed.from_tip})" if t.landed else None,
        created_by=t.created_by,
        created_at=t.created_at,
        updated_at=t.updated_at,
        status_changed_at=t.status_changed_at,
    )
