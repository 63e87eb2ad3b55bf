"""The run on a task: claim, heartbeat, then exactly one of release / report_failure /
escalate / submit. Every call after the claim carries the claim token."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from taskgate import runtime
from taskgate.domain.models import MAX_LEASE_MINUTES, FailureKind, Phase, SelfReport
from taskgate.mcp import views
from taskgate.mcp.args import AgentId, ClaimToken, Lines, ProjectName, TaskId, Text
from taskgate.mcp.identity import who
from taskgate.mcp.registry import tool
from taskgate.service import brief, claims

STOPPED = (
    "Your claim has ended: stop working on this task and do not call tools with its claim_token "
    "again. Call claim_task(project) to take other work."
)


def _work_next(lease_minutes: int) -> str:
    return (
        f"Work on the task now, following the brief. Call heartbeat(task_id, claim_token) at least "
        f"every {max(1, lease_minutes // 2)} minutes (the lease runs out after {lease_minutes} minutes "
        "without one, and the claim is then lost). Finish with exactly one of: submit_task (done: "
        "commit pushed, criteria met), report_failure (cannot be done as specified), escalate (a "
        "human must answer a question), or release_task (give it back untouched)."
    )


@tool("Claim a task")
def claim_task(
    project: Annotated[
        ProjectName | None,
        Field(
            description="Claim the best ready task of this project: the way to start work. Give "
            "either project or task_id."
        ),
    ] = None,
    task_id: Annotated[
        TaskId | None,
        Field(
            description="Claim this ready task instead (its id names its project). Only when you must "
            "have that one: agents that pick tasks themselves collide more often."
        ),
    ] = None,
    lease_minutes: Annotated[
        int | None,
        Field(
            description=f"How long the claim lasts without a heartbeat (1-{MAX_LEASE_MINUTES}); "
            "default: the project's lease.",
            ge=1,
            le=MAX_LEASE_MINUTES,
        ),
    ] = None,
    agent_id: AgentId = None,
) -> views.Claimed:
    """Start work: claim_task(project) claims one of the project's best ready tasks for you
    alone and returns a claim_token and the task's brief.

    The server picks among the highest-priority ready tasks so that agents looking for work at
    the same time do not collide: no need to list tasks first. claim_task(task_id=...) claims
    one given task; if another agent got it first you get E_WRONG_STATE (then call
    claim_task(project)). Keep the claim_token: heartbeat, release_task, report_failure,
    escalate and submit_task all need it. Heartbeat before the lease runs out (expires_at) or
    the claim is lost and the attempt counts as failed. E_NOTHING_READY: no task is ready.
    """
    ctx = runtime.context()
    acting = who(agent_id)
    got = claims.claim(
        ctx,
        acting,
        project,
        task_id=task_id,
        lease_minutes=lease_minutes,
        brief_of=lambda task, proj, spec: brief.for_task(
            ctx, acting, task.id, task=task, project=proj, spec=spec
        ),
    )
    claim = got.task.claim
    assert claim is not None and got.brief is not None  # a fresh claim holds both
    return views.Claimed(
        task_id=got.task.id,
        claim_token=got.token,
        attempt=claim.attempt,
        lease_minutes=claim.lease_minutes,
        expires_at=claim.expires_at,
        brief=got.brief,
        next=_work_next(claim.lease_minutes),
    )


@tool("Heartbeat", idempotent=True)
def heartbeat(
    task_id: TaskId,
    claim_token: ClaimToken,
    phase: Annotated[
        Phase | None, Field(description="What you are doing now: implementing, testing or fixing.")
    ] = None,
    note: Annotated[
        str | None, Field(description="Optional one-line progress note for the history.", max_length=2000)
    ] = None,
    agent_id: AgentId = None,
) -> views.HeartbeatDone:
    """Keep your claim alive: pushes the lease expiry to now + the lease length. Call it well
    before expires_at while you work (e.g. every half lease), optionally saying your phase.
    E_STALE_CLAIM means the claim already ended: stop working on the task."""
    task = claims.heartbeat(runtime.context(), who(agent_id), task_id, claim_token, phase=phase, note=note)
    assert task.claim is not None  # a live claim after a successful heartbeat
    return views.HeartbeatDone(
        task_id=task.id,
        expires_at=task.claim.expires_at,
        phase=task.claim.phase,
        next=f"Keep working; heartbeat again before {task.claim.expires_at.isoformat()}.",
    )


@tool("Release a task")
def release_task(
    task_id: TaskId,
    claim_token: ClaimToken,
    reason: Annotated[
        str, Field(description="Why you give it back (shown to the next agent).", max_length=5000)
    ] = "",
    agent_id: AgentId = None,
) -> views.TaskMoved:
    """Give a claimed task back to the queue without using an attempt (e.g. you were asked to
    stop, or took the wrong task). The task becomes ready again; your claim_token stops working."""
    task = claims.release(runtime.context(), who(agent_id), task_id, claim_token, reason=reason)
    return views.TaskMoved(task=views.summary(task), next=STOPPED)


@tool("Report a failure")
def report_failure(
    task_id: TaskId,
    claim_token: ClaimToken,
    kind: Annotated[
        FailureKind,
        Field(
            description="dependency: it needs other tasks done first (name them in blocked_by; the task "
            "becomes blocked); spec_gap: the spec is missing or unclear; design_conflict: the spec "
            "contradicts the code or a decision (both go to a human); other: anything else (back to ready)."
        ),
    ],
    findings: Annotated[
        Lines,
        Field(description="What went wrong, concretely; the next attempt's brief shows these.", min_length=1),
    ],
    learned: Annotated[
        Text | None, Field(description="What the next attempt should know or do differently.")
    ] = None,
    blocked_by: Annotated[
        list[TaskId] | None, Field(description="With kind 'dependency' only: the tasks this one waits for.")
    ] = None,
    agent_id: AgentId = None,
) -> views.TaskMoved:
    """End your claim because the task cannot be completed as it stands. Uses one attempt; when
    the last attempt is used the task goes to a human. Your findings and what you learned go
    into the next attempt's brief. Your claim_token stops working."""
    task = claims.report_failure(
        runtime.context(),
        who(agent_id),
        task_id,
        claim_token,
        kind=kind,
        findings=findings,
        learned=learned,
        blocked_by=blocked_by,
    )
    return views.TaskMoved(task=views.summary(task), next=STOPPED)


@tool("Escalate to a human")
def escalate(
    task_id: TaskId,
    claim_token: ClaimToken,
    question: Annotated[
        str,
        Field(
            description="The question a human must answer before work can go on.",
            min_length=1,
            max_length=10_000,
        ),
    ],
    agent_id: AgentId = None,
) -> views.TaskMoved:
    """Hand the task to a human with a question (status needs_human) without using an attempt,
    when you cannot go on without a decision only a human can make. Your claim ends."""
    task = claims.escalate(runtime.context(), who(agent_id), task_id, claim_token, question=question)
    return views.TaskMoved(task=views.summary(task), next=STOPPED)


@tool("Submit finished work")
def submit_task(
    task_id: TaskId,
    claim_token: ClaimToken,
    commit_sha: Annotated[
        str,
        Field(
            description="The git commit (7-64 hex digits) that holds the finished work, pushed.",
            max_length=64,
        ),
    ],
    evidence: Annotated[
        Text,
        Field(
            description="What you did and how each acceptance criterion is met (tests run, output).",
            min_length=1,
        ),
    ],
    self_report: Annotated[
        dict[str, SelfReport] | None,
        Field(description="Optional: your own verdict per criterion id, e.g. {'AC-3.1': 'pass'}."),
    ] = None,
    agent_id: AgentId = None,
) -> views.TaskMoved:
    """Submit the finished task for review: status needs_verification. Then STOP working on it.

    A verifier (if the project has verification on) re-runs the checks on commit_sha in a
    clean checkout, and a human accepts the work; you cannot accept your own work. If it is
    sent back, it returns to the queue with findings for the next attempt.
    """
    task = claims.submit(
        runtime.context(),
        who(agent_id),
        task_id,
        claim_token,
        commit_sha=commit_sha,
        evidence=evidence,
        self_report=self_report,
    )
    return views.TaskMoved(
        task=views.summary(task),
        next="Submitted. Stop working on this task now; a reviewer decides. Call claim_task(project) for more work.",
    )
