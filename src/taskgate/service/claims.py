"""An agent's run on a task: claim, heartbeat, release, report_failure, escalate, submit.

Every write after the claim carries the claim token; a token stops working the instant its
claim ends. Lease expiry is settled on every access, so an expired claim is expired even if
no sweep ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from taskgate import telemetry
from taskgate.domain import commit_ids
from taskgate.domain.clock import iso
from taskgate.domain.errors import ErrorCode, TaskgateError, invalid
from taskgate.domain.ids import parse_task_id
from taskgate.domain.lifecycle import Action, find_move
from taskgate.domain.models import (
    MAX_LEASE_MINUTES,
    Attempt,
    Claim,
    ClaimTip,
    FailureKind,
    HistoryEvent,
    Phase,
    Project,
    SelfReport,
    Spec,
    SpecStatus,
    Status,
    Submission,
    Task,
)
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.domain.specs import criteria_of
from taskgate.service import cascades, commits, records, secrets
from taskgate.service.context import MAX_LINE_CHARS, Context, chained, event, lines, put_event, put_task, text
from taskgate.service.transitions import move
from taskgate.store.port import Check
from taskgate.store.port import Op as StoreOp
from taskgate.store.schema import IndexName
from taskgate.telemetry import Metric

P = ParamSpec("P")
T = TypeVar("T")

CANDIDATES = 32  # pick among the top ready tasks of the best priority at random: racers spread out
MAX_CANDIDATES = 64


def lease_expired(task: Task, now: datetime) -> bool:
    return task.status is Status.CLAIMED and task.claim is not None and task.claim.expires_at <= now


def settle_expiry(ctx: Context, task: Task) -> Task:
    """If the task's lease has run out, end the claim now (one commit) and return the task after."""
    while lease_expired(task, ctx.clock.now()):
        project = ctx.project(task.project)
        now = ctx.clock.now()
        new, ev = move(
            task,
            project,
            Action.EXPIRE,
            "system:lease",
            now,
            changes={"claim": None},
            spec_draft=ctx.spec_is_draft(task),
            attempt=task.claim.attempt if task.claim else None,
        )
        try:
            ctx.commit([put_task(task, new), put_event(ev)])
        except TaskgateError as exc:
            if exc.code is not ErrorCode.CONFLICT:
                raise
            task = ctx.task(task.id)
        else:
            telemetry.count(Metric.LEASE_EXPIRIES)
            return new.model_copy(update={"version": task.version + 1})
    return task


def settle_project(ctx: Context, project: str) -> list[str]:
    """Settle the lapsed leases of one project: one query of its claimed queue (ordered by
    expiry), usually empty. Every read of a project's tasks runs this first, so no list shows a
    lapsed claim as claimed, sweep or not. Returns the task ids that were settled."""
    pk = records.queue_pk(project, Status.CLAIMED)
    bound = records.claimed_lapsed_before(ctx.clock.now())
    out = []
    for item in list(
        ctx.all_pages(lambda c: ctx.store.query_index(IndexName.QUEUE, pk, sk_lt=bound, limit=100, cursor=c))
    ):
        task = records.load(Task, item)
        if settle_expiry(ctx, ctx.task(task.id)).status is not Status.CLAIMED:
            out.append(task.id)
    return out


def settle_lapsed(ctx: Context, projects: list[str]) -> list[str]:
    """Settle every lease that has run out in these projects (the sweeper: all of them).
    Returns the task ids."""
    return [task_id for project in projects for task_id in settle_project(ctx, project)]


@dataclass
class Claimed:
    task: Task
    token: str
    project: Project | None = None  # as read for this claim
    brief: dict[str, Any] | None = None  # built before the claim committed (see claim's brief_of)


BriefOf = Callable[[Task, Project, Spec | None], dict[str, Any]]  # the task, its project and spec


def _lease(project_lease: int, lease_minutes: int | None) -> int:
    minutes = lease_minutes if lease_minutes is not None else project_lease
    if not 1 <= minutes <= MAX_LEASE_MINUTES:
        raise invalid(f"lease_minutes must be between 1 and {MAX_LEASE_MINUTES}")
    return minutes


def _spec_still_approved(ctx: Context, task: Task) -> tuple[Spec | None, list[StoreOp]]:
    """The claim's guard on the task's spec: it must be approved, and still be when the claim
    commits. A ready task under a draft spec is what a cascade cut short leaves behind: put it
    back in line (backlog) here, where it was found, and refuse. Returns the spec as read (the
    brief uses it) and the guard."""
    if task.spec_id is None:
        return None, []
    spec = ctx.spec(task.project, task.spec_id)
    if spec.status is not SpecStatus.APPROVED:
        cascades.sync_task(ctx, task.id)
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"{task.id} belongs to {spec.id}, which is a draft again; it waits in backlog until approved",
            current_status=ctx.task(task.id).status.value,
        )
    return spec, [Check(*records.spec_key(spec.project, spec.number), spec.version)]


def _claim_one(
    ctx: Context,
    who: Acting,
    task: Task,
    lease_minutes: int | None,
    project: Project | None = None,
    brief_of: BriefOf | None = None,
    tip: ClaimTip | None = None,
) -> Claimed:
    task = settle_expiry(ctx, task)
    project = project or ctx.project(task.project)
    minutes = _lease(project.lease_minutes, lease_minutes)
    find_move(task.status, Action.CLAIM)  # a task that is not ready is refused before any work
    spec, guard = _spec_still_approved(ctx, task)
    now = ctx.clock.now()
    token = secrets.mint(secrets.CLAIM_PREFIX, ctx.entropy)
    number = len(task.attempts) + 1
    claim = Claim(
        token_hash=secrets.digest(token),
        actor=who.actor,
        credential_id=who.credential_id,
        attempt=number,
        claimed_at=now,
        expires_at=now + timedelta(minutes=minutes),
        lease_minutes=minutes,
    )
    attempt = Attempt(
        number=number, actor=who.actor, credential_id=who.credential_id, started_at=now, claimed_tip=tip
    )
    new, ev = move(
        task,
        project,
        Action.CLAIM,
        who,
        now,
        changes={"claim": claim, "attempts": [*task.attempts, attempt]},
        attempt=number,
        lease_minutes=minutes,
    )
    claimed = new.model_copy(update={"version": task.version + 1})
    # The answer is built before the claim commits: if it cannot be (a failing read, text that
    # cannot be serialised), nothing is claimed, and no attempt burns on a lease nobody holds.
    brief = brief_of(claimed, project, spec) if brief_of is not None else None
    try:
        ctx.commit([put_task(task, new), put_event(ev), *guard])
    except TaskgateError as exc:
        # A write whose response was lost and retried reports a conflict with itself: if the
        # stored claim is ours, the claim landed.
        if exc.code is ErrorCode.CONFLICT:
            stored = ctx.task(task.id)
            if stored.claim is not None and stored.claim.token_hash == claim.token_hash:
                return Claimed(stored, token, project, brief)
        raise
    return Claimed(claimed, token, project, brief)


def _base_tip(project: Project) -> ClaimTip | None:
    """The base branch's tip as the claim starts, where the server can read the repository: a
    submission committed straight onto that branch is judged against it (the merge-base of such
    a submission with the branch is the submission itself, which would hide every change)."""
    cfg = project.verifier_config
    return commits.base_tip(project.repo, cfg.base_branch_choice() if cfg is not None else None)


def claim(
    ctx: Context,
    who: Acting,
    project: str | None = None,
    *,
    task_id: str | None = None,
    lease_minutes: int | None = None,
    brief_of: BriefOf | None = None,
) -> Claimed:
    """Claim a given task (its id names the project; a project given too must be the same), or
    the best ready one of a project. Among concurrent callers exactly one wins a task.
    brief_of(task, project, spec) builds the answer's brief before the claim commits."""
    if task_id is not None:
        owner = parse_task_id(task_id)[0]
        if project is not None and project != owner:
            raise invalid(f"{task_id} is a task of project {owner}, not {project}")
        project = owner
    elif project is None:
        raise invalid("give a project (to claim one of its best ready tasks) or a task_id")
    authorize(Op.CLAIM, who, project=project)
    proj = ctx.project(project)
    tip = _base_tip(proj)
    if task_id is not None:
        for _ in range(3):
            try:
                return _claim_one(ctx, who, ctx.task(task_id), lease_minutes, None, brief_of, tip)
            except TaskgateError as exc:
                if exc.code is not ErrorCode.CONFLICT:
                    raise
                now_status = ctx.task(task_id).status
                if now_status is Status.READY:
                    continue  # not a claim but its spec changed meanwhile: decide again
                # Someone else's write landed first; say what the task is now.
                raise TaskgateError(
                    ErrorCode.WRONG_STATE,
                    f"{task_id} was claimed by someone else",
                    current_status=now_status.value,
                ) from exc
        raise TaskgateError(ErrorCode.CONFLICT, f"{task_id} kept changing while being claimed; try again")
    pk = records.queue_pk(project, Status.READY)
    window = CANDIDATES
    # Lapsed leases go back to the queue first: expiry is enforced on every access, so a lapsed
    # claim of higher priority is the best ready task, not one the sweeper has yet to return.
    # (One query of the claimed queue, ordered by expiry; it reads nothing when none lapsed.)
    settle_project(ctx, project)
    for _ in range(200):
        keys = ctx.store.query_index_keys(IndexName.QUEUE, pk, limit=window)
        if not keys:
            raise TaskgateError(ErrorCode.NOTHING_READY, f"no task is ready in project {project}")
        # At random among the best band read: priority is never skipped, and agents claiming at
        # once (even several on one key) spread out instead of chasing the same task. The task
        # itself is read consistently: the index may be stale, the claim's condition is the truth.
        pick = ctx.entropy.choice(records.best_band(keys))
        try:
            return _claim_one(
                ctx, who, ctx.task(records.queued_task_id(pick)), lease_minutes, proj, brief_of, tip
            )
        except TaskgateError as exc:
            # A lost race (conflict) or a stale index entry (wrong state): try another, from a
            # wider window, so many racing agents spread out instead of colliding again.
            if exc.code not in (ErrorCode.CONFLICT, ErrorCode.WRONG_STATE, ErrorCode.NOT_FOUND):
                raise
            window = min(window * 2, MAX_CANDIDATES)
    raise TaskgateError(ErrorCode.CONFLICT, "too much contention for ready tasks; try again")


def _held(ctx: Context, who: Acting, task_id: str, token: str) -> Task:
    """The task, if `token` is its live claim and `who` holds it; else E_STALE_CLAIM."""
    project, _ = parse_task_id(task_id)
    authorize(Op.WORK, who, project=project)
    task = settle_expiry(ctx, ctx.task(task_id))
    live = task.status is Status.CLAIMED and task.claim is not None
    if not live or task.claim is None or not secrets.matches(token, task.claim.token_hash):
        raise TaskgateError(
            ErrorCode.STALE_CLAIM,
            f"this claim token is no longer valid for {task_id} (task is {task.status.value})",
            current_status=task.status.value,
        )
    if task.claim.credential_id != who.credential_id:
        raise TaskgateError(ErrorCode.FORBIDDEN, f"{task_id} is claimed under another credential")
    return task


def _holder_commit(ctx: Context, old: Task, new: Task, *rest: StoreOp) -> Task:
    """A claim holder's write: it lands only if the version is the one read and the lease still
    runs at the moment of the commit (the store checks both in the one conditional write)."""
    ctx.checkpoint("holder.commit")
    ctx.commit([put_task(old, new, alive_at=iso(ctx.clock.now())), *rest])
    return new.model_copy(update={"version": old.version + 1})


def _commit_move(ctx: Context, old: Task, new: Task, ev: HistoryEvent) -> Task:
    return _holder_commit(ctx, old, new, put_event(ev))


def _holder_call(fn: Callable[Concatenate[Context, P], T]) -> Callable[Concatenate[Context, P], T]:
    """Run a claim holder's call again when the task changed under it (its own heartbeat from
    another thread, say): the re-run re-checks the token, so a claim that really ended answers
    E_STALE_CLAIM and a live one is not told to stop."""

    def wrapper(ctx: Context, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return ctx.retrying(lambda: fn(ctx, *args, **kwargs), tries=5)

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


@_holder_call
def heartbeat(
    ctx: Context,
    who: Acting,
    task_id: str,
    token: str,
    *,
    phase: Phase | None = None,
    note: str | None = None,
) -> Task:
    task = _held(ctx, who, task_id, token)
    assert task.claim is not None
    now = ctx.clock.now()
    claim_ = task.claim.model_copy(
        update={
            "expires_at": now + timedelta(minutes=task.claim.lease_minutes),
            "last_heartbeat_at": now,
            "phase": phase or task.claim.phase,
        }
    )
    new = task.model_copy(update={"claim": claim_, "updated_at": now})
    if (phase is not None and phase is not task.claim.phase) or note:
        # A phase change is worth a history line; a plain heartbeat is not (one write, not two).
        ev = event(
            who, "heartbeat", project=task.project, at=now, task=task, phase=claim_.phase.value, note=note
        )
        return _commit_move(ctx, task, chained(new, ev), ev)
    return _holder_commit(ctx, task, new)


@_holder_call
def release(ctx: Context, who: Acting, task_id: str, token: str, *, reason: str = "") -> Task:
    text(reason, "reason", MAX_LINE_CHARS)
    task = _held(ctx, who, task_id, token)
    project = ctx.project(task.project)
    now = ctx.clock.now()
    new, ev = move(
        task,
        project,
        Action.RELEASE,
        who,
        now,
        changes={"claim": None},
        attempt_record={"learned": reason or None},
        spec_draft=ctx.spec_is_draft(task),
        reason=reason or None,
    )
    return _commit_move(ctx, task, new, ev)


_FAILURE_ACTIONS = {
    FailureKind.OTHER: Action.FAIL_OTHER,
    FailureKind.DEPENDENCY: Action.FAIL_DEPENDENCY,
    FailureKind.SPEC_GAP: Action.FAIL_SPEC_GAP,
    FailureKind.DESIGN_CONFLICT: Action.FAIL_DESIGN_CONFLICT,
}


@_holder_call
def report_failure(
    ctx: Context,
    who: Acting,
    task_id: str,
    token: str,
    *,
    kind: FailureKind,
    findings: list[str],
    learned: str | None = None,
    blocked_by: list[str] | None = None,
) -> Task:
    findings = lines(findings, "findings")
    text(learned, "learned", MAX_LINE_CHARS)
    if not findings:
        raise invalid("report_failure needs at least one finding: what went wrong, for the next attempt")
    if kind is FailureKind.DEPENDENCY and not blocked_by:
        raise invalid("a dependency failure names the tasks it waits for in blocked_by")
    if kind is not FailureKind.DEPENDENCY and blocked_by:
        raise invalid("blocked_by goes only with kind 'dependency'")
    task = _held(ctx, who, task_id, token)
    changes: dict[str, object] = {}
    waits: list[StoreOp] = []
    if blocked_by:
        cascades.check_blockers(ctx, task.project, blocked_by, task.id)
        changes["blocked_by"] = sorted(set(task.blocked_by) | set(blocked_by))
        read = ctx.store.get_many([records.task_key(b) for b in blocked_by])
        waits = cascades.wait_for(task.id, [records.load(Task, b) for b in read])
    project = ctx.project(task.project)
    now = ctx.clock.now()
    new, ev = move(
        task,
        project,
        _FAILURE_ACTIONS[kind],
        who,
        now,
        changes={"claim": None, **changes},
        attempt_record={"failure_kind": kind, "findings": findings, "learned": learned},
        spec_draft=kind is FailureKind.OTHER and ctx.spec_is_draft(task),
        why="; ".join(findings),
        kind=kind.value,
    )
    after = _holder_commit(ctx, task, new, put_event(ev), *waits)
    if after.status is Status.BLOCKED and cascades.settle(ctx, task_id, Status.BLOCKED):
        return ctx.task(task_id)  # its blockers were all done already
    return after


@_holder_call
def escalate(ctx: Context, who: Acting, task_id: str, token: str, *, question: str) -> Task:
    text(question, "question", MAX_LINE_CHARS)
    if not question.strip():
        raise invalid("escalate needs the question a human should answer")
    task = _held(ctx, who, task_id, token)
    project = ctx.project(task.project)
    now = ctx.clock.now()
    new, ev = move(
        task,
        project,
        Action.ESCALATE,
        who,
        now,
        changes={"claim": None},
        attempt_record={"findings": [question]},
        why=question,
        question=question,
    )
    return _commit_move(ctx, task, new, ev)


@_holder_call
def submit(
    ctx: Context,
    who: Acting,
    task_id: str,
    token: str,
    *,
    commit_sha: str,
    evidence: str,
    self_report: dict[str, SelfReport] | None = None,
) -> Task:
    sha = commit_sha.strip().lower()
    if not commit_ids.is_submitted(sha):
        raise invalid(f"commit_sha must be {commit_ids.SUBMITTED_RULE}")
    text(evidence, "evidence")
    if not evidence.strip():
        raise invalid("evidence must say what was done and how each criterion is met")
    task = _held(ctx, who, task_id, token)
    spec = ctx.spec(task.project, task.spec_id) if task.spec_id else None
    known = {c.id for c in criteria_of(task, spec)}
    report = self_report or {}
    unknown = sorted(set(report) - known)
    if unknown:
        raise invalid(f"self_report names criteria this task does not hold: {', '.join(unknown)}")
    # Read even where the submit row needs none of its settings: its repo, to refuse a commit
    # that surely is not there.
    project = ctx.project(task.project)
    found = commits.in_local_repo(project.repo, sha)
    if found == "missing":
        raise invalid(f"commit {sha} is not in {project.repo}: push it, then submit again")
    if found == "ambiguous":
        raise invalid(
            f"commit {sha} names more than one commit in {project.repo}: submit more of its digits "
            "(`git rev-parse HEAD` prints the full one)"
        )
    now = ctx.clock.now()
    submission = Submission(
        commit_sha=sha,
        evidence=evidence,
        self_report=report,
        actor=who.actor,
        credential_id=who.credential_id,
        submitted_at=now,
    )
    # The attempt stays open until the submission's fate is known (accepted, failed verification,
    # reopened): its record then says how it ended, in step with the attempt counter.
    attempts = [*task.attempts[:-1], task.attempts[-1].model_copy(update={"submission": submission})]
    new, ev = move(
        task, project, Action.SUBMIT, who, now, changes={"claim": None, "attempts": attempts}, commit_sha=sha
    )
    return _commit_move(ctx, task, new, ev)
