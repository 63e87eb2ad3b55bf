"""Verify together, then accept: a human's batch of verified low-risk tasks, verified merged
together onto the base tip by the verifier, bisected when it fails (domain/batches.py), and
accepted by that human when it passes. The server decides every step from the evidence sent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from taskgate.domain import batches as rules
from taskgate.domain.batches import Batch, Culprit, Entry, Requester, Step
from taskgate.domain.clock import iso
from taskgate.domain.errors import ErrorCode, TaskgateError, invalid, not_found
from taskgate.domain.ids import parse_task_id
from taskgate.domain.lifecycle import Action
from taskgate.domain.merging import MergedBase
from taskgate.domain.models import (
    Credential,
    Finding,
    FindingSource,
    Project,
    Risk,
    SpecStatus,
    Status,
    Task,
    VerificationRun,
)
from taskgate.domain.outcome import command_criteria_allowed
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting, Principal, PrincipalKind, Via
from taskgate.domain.run_report import CheckResult, CriterionResult
from taskgate.domain.specs import criteria_of
from taskgate.domain.text import TAIL_CHARS, plain
from taskgate.service import records, review
from taskgate.service.context import Context, event, put_event, put_task
from taskgate.service.transitions import move
from taskgate.service.verification import RUN_GRACE_MINUTES, refuse_self_verify
from taskgate.store.port import Check, Delete, Item, Put
from taskgate.store.port import Op as StoreOp

MAX_CHECKS = 50


def _load(ctx: Context, project: str, batch_id: str) -> Batch:
    item = ctx.store.get(*records.batch_key(project, batch_id))
    if item is None:
        raise not_found(f"batch {batch_id} of project {project}")
    return records.load(Batch, item)


def _put(b: Batch, expected: int | None) -> Put:
    """The batch written over the stored version `expected` (None: a new batch)."""
    pk, sk = records.batch_key(b.project, b.id)
    body = b.model_dump(mode="json", exclude={"version"})
    return Put(Item(pk, sk, body, 1 if expected is None else expected + 1), expected)


def _spec_of(ctx: Context, task: Task) -> Any:
    return ctx.spec(task.project, task.spec_id) if task.spec_id else None


def _risk(ctx: Context, task: Task) -> Risk:
    spec = _spec_of(ctx, task)
    return spec.risk if spec is not None else task.risk


def request(ctx: Context, who: Acting, project_name: str, task_ids: list[str]) -> Batch:
    """Record a batch of verified low-risk tasks to verify together, in this order, and queue it.
    All or nothing: any task that may not go in refuses the whole batch, and nothing is written.
    Two humans asking at once: each is decided again on what is there after the other's."""
    return ctx.retrying(lambda: _request(ctx, who, project_name, task_ids))


def _request(ctx: Context, who: Acting, project_name: str, task_ids: list[str]) -> Batch:
    authorize(Op.ACCEPT, who, project=project_name, risk=Risk.LOW)
    if not task_ids:
        raise invalid("task_ids must name at least one task to verify together")
    if len(task_ids) > rules.MAX_TOGETHER:
        raise invalid(
            f"at most {rules.MAX_TOGETHER} tasks are verified together; this batch has {len(task_ids)}"
        )
    if len(set(task_ids)) != len(task_ids):
        raise invalid("task_ids: each task once")
    for tid in task_ids:
        if parse_task_id(tid)[0] != project_name:
            raise invalid(f"{tid} is not a task of project {project_name}")
    project = ctx.project(project_name)
    cfg = project.verifier_config
    if not project.verification_on or cfg is None:
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"verification is off for project {project_name}: there is no verifier to verify a batch together",
        )
    if cfg.merge == "none":
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"project {project_name}'s verifier config sets merge: none, so nothing is verified merged; "
            "accept the tasks as a batch instead",
        )
    entries: list[Entry] = []
    guards: list[StoreOp] = []
    for tid in task_ids:
        task = ctx.task(tid)
        if task.status is not Status.VERIFIED:
            raise TaskgateError(
                ErrorCode.WRONG_STATE,
                f"{tid} is {task.status.value}, not verified: only verified tasks are verified together",
                current_status=task.status.value,
            )
        risk = _risk(ctx, task)
        if risk is not Risk.LOW:
            raise TaskgateError(
                ErrorCode.FORBIDDEN, f"{tid} is {risk.value} risk: accept it on its own, not in a batch"
            )
        review.refuse_own_work(who, task)
        if ctx.store.get(*records.in_batch_key(tid)) is not None:
            raise TaskgateError(
                ErrorCode.CONFLICT, f"{tid} is already in a batch waiting to be verified together"
            )
        sub, attempt = task.last_submission(), task.current_attempt()
        assert sub is not None and attempt is not None  # verified work has both
        entries.append(
            Entry(task_id=tid, commit_sha=sub.resolved_commit or sub.commit_sha, attempt=attempt.number)
        )
        guards.append(Check(*records.task_key(tid), task.version))
    counter = ctx.store.get(*records.batch_counter_key(project_name))
    number = (counter.data["n"] if counter is not None else 0) + 1
    now = ctx.clock.now()
    known = project.base_tip
    batch = Batch(
        id=f"B{number}",
        project=project_name,
        entries=entries,
        requested_by=Requester(
            actor=who.actor, credential_id=who.credential_id, via=who.via.value, on_behalf_of=who.on_behalf_of
        ),
        requested_at=now,
        branch=cfg.base_branch_choice() or (known.branch if known else None),
        requested_tip=known.tip if known else None,
        mode="rebase" if cfg.merge == "rebase" else "merge",
        remaining=list(task_ids),
    )
    ev = event(who, "batch_requested", project=project_name, at=now, batch=batch.id, tasks=task_ids,
               via=who.via.value, tip=batch.requested_tip)  # fmt: skip
    ctx.commit(
        [
            Put(
                Item(
                    *records.batch_counter_key(project_name),
                    {"n": number},
                    counter.version + 1 if counter else 1,
                ),
                counter.version if counter else None,
            ),
            _put(batch, None),
            Put(Item(*records.open_batch_key(project_name, batch.id), {"batch": batch.id})),
            *[Put(Item(*records.in_batch_key(e.task_id), {"batch": batch.id})) for e in entries],
            *guards,
            put_event(ev),
        ]
    )
    return batch.model_copy(update={"version": 1})


def get(ctx: Context, who: Acting, project: str, batch_id: str) -> Batch:
    authorize(Op.READ, who, project=project)
    return _load(ctx, project, batch_id)


def _budget(project: Project) -> timedelta:
    cfg = project.verifier_config
    checks = sum(c.timeout_minutes or cfg.check_timeout_minutes for c in cfg.checks.values()) if cfg else 0
    extra = 2 * cfg.check_timeout_minutes if cfg else 0
    return timedelta(minutes=RUN_GRACE_MINUTES + checks + extra)


def _abandoned(project: Project, step: Step, now: datetime) -> bool:
    return now >= step.started_at + _budget(project)


def open_batches(ctx: Context, project: Project) -> list[str]:
    """The project's batches a verifier could run a step of now, oldest first."""
    if not project.verification_on:
        return []
    pk, _ = records.open_batch_key(project.name, "")
    out = []
    now = ctx.clock.now()
    for item in ctx.store.query(pk, limit=100).items:
        b = _load(ctx, project.name, item.sk)
        live = b.live()
        if b.status == "queued" or (live is not None and _abandoned(project, live, now)):
            out.append(b.id)
    return sorted(out, key=lambda i: int(i[1:]))


@dataclass
class StepWork:
    batch: Batch
    work: dict[str, Any]


def _still_in(ctx: Context, b: Batch) -> Batch:
    """Drop from the plan tasks that moved on since the batch was asked for (accepted, reopened,
    sent back by a re-verification): the batch verifies what it was given, nothing newer."""
    gone: dict[str, str] = {}
    for tid in b.remaining:
        task = ctx.task(tid)
        entry = b.entry(tid)
        assert entry is not None
        sub = task.last_submission()
        current = (sub.resolved_commit or sub.commit_sha) if sub is not None else None
        if task.status is not Status.VERIFIED or current != entry.commit_sha:
            gone[tid] = f"{tid} moved on ({task.status.value}) while the batch waited"
    if not gone:
        return b
    return b.model_copy(
        update={
            "remaining": [t for t in b.remaining if t not in gone],
            "skipped": {**b.skipped, **gone},
            "good": 0,
            "bad": None,
        }
    )


def start_step(ctx: Context, who: Acting, project_name: str, batch_id: str) -> StepWork:
    """Take the batch's next step: the tasks to merge, in order, onto the batch's tip. Among
    racing verifiers exactly one gets it (the batch item's version)."""
    authorize(Op.VERIFY, who, project=project_name)
    project = ctx.project(project_name)
    if not project.verification_on:
        raise TaskgateError(ErrorCode.WRONG_STATE, f"verification is off for project {project_name}")
    b = _load(ctx, project_name, batch_id)
    version = b.version
    now = ctx.clock.now()
    live = b.live()
    if b.status not in ("queued", "running"):
        raise TaskgateError(ErrorCode.WRONG_STATE, f"batch {batch_id} is {b.status}")
    if live is not None:
        if not _abandoned(project, live, now):
            raise TaskgateError(ErrorCode.WRONG_STATE, f"batch {batch_id} already has a run in progress")
        ended = live.model_copy(
            update={"verdict": "error", "finished_at": now, "error": "the run got no answer in time"}
        )
        b = rules.after_step(b.model_copy(update={"steps": [*b.steps[:-1], ended]}), ended)
    b = _still_in(ctx, b)
    k = rules.next_prefix(b)
    if k is None or b.errors_in_row >= rules.ERRORS_TO_STOP:
        _end(ctx, who, b, version)
        raise TaskgateError(ErrorCode.WRONG_STATE, f"batch {batch_id} has nothing left to verify")
    tasks = b.remaining[:k]
    criteria: dict[str, Any] = {}
    entries = []
    for tid in tasks:
        task = ctx.task(tid)
        refuse_self_verify(who, task.last_submission())
        spec = _spec_of(ctx, task)
        held = rules.judged(criteria_of(task, spec))
        criteria[tid] = held
        entry = b.entry(tid)
        assert entry is not None
        entries.append(
            {
                "task_id": tid,
                "commit_sha": entry.commit_sha,
                "criteria": [c.model_dump(mode="json") for c in held],
                "command_criteria_allowed": command_criteria_allowed(held, spec),
            }
        )
    step = Step(
        n=len(b.steps) + 1,
        # Ordered within a second too: a task's runs are listed by id.
        run_id=f"{iso(now)}-{b.id}-{len(b.steps) + 1:03d}-{ctx.entropy.token_hex(4)}",
        tasks=tasks,
        credential_id=who.credential_id,
        started_at=now,
    )
    new = b.model_copy(update={"status": "running", "steps": [*b.steps, step]})
    ctx.commit([_put(new, version)])
    new = new.model_copy(update={"version": version + 1})
    cfg = project.verifier_config
    work = {
        "batch_id": b.id,
        "project": project_name,
        "run_id": step.run_id,
        "step": step.n,
        "repo": project.repo,
        "config": cfg.model_dump(mode="json") if cfg is not None else None,
        "branch": b.branch,
        "mode": b.mode,
        # Every step of a batch merges onto the tip its first step found.
        "tip": b.tip,
        "tasks": entries,
    }
    return StepWork(new, work)


@dataclass(frozen=True)
class StepReport:
    """What a verifier sends back from one step."""

    tip: str | None
    tree: str | None
    checks: dict[str, CheckResult]
    results: dict[str, dict[str, CriterionResult]]
    branch: str | None = None  # the base branch the tip is of, as the verifier found it
    conflict_task: str | None = None
    conflict_paths: tuple[str, ...] = ()
    error: str | None = None


def finish_step(
    ctx: Context, who: Acting, project_name: str, batch_id: str, run_id: str, report: StepReport
) -> Batch:
    """Record a step's evidence and decide it; once the batch is decided, accept what passed
    together (as the human who asked) and send each culprit back to ready. Evidence about a
    task outside the step, or a criterion the task does not hold, refuses the whole report."""
    authorize(Op.VERIFY, who, project=project_name)
    b = _load(ctx, project_name, batch_id)
    step = b.live()
    if step is None or step.run_id != run_id:
        raise TaskgateError(ErrorCode.STALE_CLAIM, f"run {run_id} is not the live run of batch {batch_id}")
    if step.credential_id != who.credential_id:
        raise TaskgateError(ErrorCode.FORBIDDEN, f"run {run_id} was started under another verifier key")
    outside = sorted(set(report.results) - set(step.tasks))
    if report.conflict_task is not None and report.conflict_task not in step.tasks:
        outside.append(report.conflict_task)
    if outside:
        raise invalid(
            f"run {run_id} of batch {batch_id} merged {', '.join(step.tasks)}; "
            f"it sent evidence about tasks outside it: {', '.join(outside)}. Nothing was recorded"
        )
    if len(report.checks) > MAX_CHECKS:
        raise invalid(f"at most {MAX_CHECKS} checks per run")
    criteria = {tid: rules.judged(criteria_of(t := ctx.task(tid), _spec_of(ctx, t))) for tid in step.tasks}
    for tid, got in report.results.items():
        held = {c.id for c in criteria[tid]}
        extra = sorted(set(got) - held)
        if extra:
            raise invalid(f"{tid} holds no judged criterion {', '.join(extra)}; nothing was recorded")
    if report.error is None:
        if report.tip is None:
            raise invalid("a step that ran sends the tip it merged onto")
        if b.tip is not None and report.tip != b.tip:
            raise invalid(f"every step of batch {batch_id} merges onto {b.tip}, not {report.tip}")
        if b.branch is not None and report.branch not in (None, b.branch):
            raise invalid(f"batch {batch_id} merges onto {b.branch}, not {report.branch}")
    if report.conflict_task is not None and (report.checks or report.results or report.error):
        raise invalid("a step that found a merge conflict ran no check: send no checks, results or error")
    now = ctx.clock.now()
    checks = {
        n: c.model_copy(update={"output_tail": plain(c.output_tail)[-TAIL_CHARS:]})
        for n, c in report.checks.items()
    }
    reasons: dict[str, list[str]] = {}
    if report.error is not None:
        verdict: rules.StepVerdict = "error"
    elif report.conflict_task is not None:
        verdict = "conflict"
    else:
        reasons = rules.decide_step(checks, report.results, criteria)
        verdict = "failed" if reasons else "passed"
    done = step.model_copy(
        update={
            "finished_at": now,
            "verdict": verdict,
            "tip": report.tip if report.error is None else None,
            "tree": report.tree if verdict == "passed" else None,
            "reasons": reasons,
            "conflict_task": report.conflict_task,
            "conflict_paths": list(report.conflict_paths)[:50],
            "error": plain(report.error)[:2000] if report.error else None,
        }
    )
    steps = [*b.steps[:-1], done]
    new = rules.after_step(b.model_copy(update={"steps": steps}), done)
    if verdict != "error" and new.tip is None:
        new = new.model_copy(update={"tip": report.tip, "branch": b.branch or report.branch})
    if verdict == "passed" and len(step.tasks) == len(b.remaining):
        new = new.model_copy(update={"tree": report.tree})
    status = "queued"
    if rules.next_prefix(new) is None or new.errors_in_row >= rules.ERRORS_TO_STOP:
        status = "done" if new.errors_in_row < rules.ERRORS_TO_STOP else "stopped"
    new = new.model_copy(update={"status": status})
    runs = [_run(b, done, tid, checks, report, reasons) for tid in step.tasks]
    ops: list[StoreOp] = [_put(new, b.version), *[Put(records.run_item(r)) for r in runs]]
    ctx.commit(ops)
    new = new.model_copy(update={"version": b.version + 1})
    if status in ("done", "stopped"):
        return _end(ctx, who, new, new.version)
    return new


def _run(
    b: Batch,
    step: Step,
    task_id: str,
    checks: dict[str, CheckResult],
    report: StepReport,
    reasons: dict[str, list[str]],
) -> VerificationRun:
    """This task's share of a step: the step's checks and verdict, its own criteria's evidence."""
    entry = b.entry(task_id)
    assert entry is not None and step.verdict is not None
    others = [t for t in step.tasks if t != task_id]
    with_ = f" with {', '.join(others)}" if others else ""
    onto = f" onto {b.branch} at {step.tip[:12]}" if step.tip else ""
    said = {
        "passed": "passed",
        "failed": "failed: " + "; ".join(r for rs in reasons.values() for r in rs)[:1000],
        "conflict": f"merge conflict at {step.conflict_task}",
        "error": f"verifier error: {step.error}",
    }[step.verdict]
    base = (
        MergedBase(mode=b.mode, branch=b.branch, tip=step.tip, tree=report.tree)
        if step.tip is not None and step.verdict != "conflict"
        else None
    )
    kept = {cid: r.model_dump(mode="json") for cid, r in report.results.get(task_id, {}).items()}
    return VerificationRun(
        id=step.run_id,
        task_id=task_id,
        project=b.project,
        attempt=entry.attempt,
        commit_sha=entry.commit_sha,
        credential_id=step.credential_id,
        started_at=step.started_at,
        finished_at=step.finished_at,
        status=step.verdict,
        summary=f"batch {b.id} run {step.n}: merged{with_}{onto}: {said}",
        checks={n: c.model_dump(mode="json") for n, c in checks.items()},
        evidence=kept,
        base=base,
        batch=b.id,
    )


def _requester(ctx: Context, r: Requester) -> tuple[Acting | None, str | None]:
    """The human who asked, acting as they did; None and why when that can no longer be (the
    key it came through was revoked, or its delegation withdrawn)."""
    kind, _, name = r.actor.partition(":")
    item = ctx.store.get(*records.credential_key(r.credential_id))
    if item is not None:
        cred = records.load(Credential, item)
        if cred.revoked_at is not None:
            return None, f"the key {r.credential_id} that asked for the batch was revoked"
        if r.on_behalf_of is not None and r.on_behalf_of not in cred.delegations:
            return None, f"{r.on_behalf_of} no longer delegates to the key that asked for the batch"
    principal = Principal(
        PrincipalKind(kind),
        name,
        r.credential_id,
        delegations=(r.on_behalf_of,) if r.on_behalf_of else (),
        via=Via(r.via) if r.on_behalf_of is None else None,
    )
    return Acting(principal, r.on_behalf_of), None


def _end(ctx: Context, who: Acting, b: Batch, version: int) -> Batch:
    """Close the batch (its markers go) and apply what it decided: culprits back to ready, and
    the tasks that passed together accepted by the human who asked."""
    b = _still_in(ctx, b)
    if b.status not in ("done", "stopped"):
        b = b.model_copy(update={"status": "done" if b.errors_in_row < rules.ERRORS_TO_STOP else "stopped"})
    ops: list[StoreOp] = [
        _put(b, version),
        Delete(*records.open_batch_key(b.project, b.id), 1),
        *[Delete(*records.in_batch_key(e.task_id), 1) for e in b.entries],
    ]
    ctx.commit(ops)
    version += 1
    skipped = dict(b.skipped)
    sent_back: list[str] = []
    for c in b.culprits:
        why = _send_back(ctx, who, b, c)
        if why is None:
            sent_back.append(c.task_id)
        else:
            skipped[c.task_id] = why
    accepted: list[str] = []
    if b.status == "done" and b.tip is not None:
        acting, why_not = _requester(ctx, b.requested_by)
        together = {
            "batch": b.id,
            "tip": b.tip,
            "tree": b.tree,
            "branch": b.branch,
            "with": b.remaining,
            "said": rules.together_said(b.id, b.branch or "the base branch", b.tip),
        }
        for tid in b.remaining:
            if acting is None:
                skipped[tid] = f"not accepted: {why_not}"
                continue
            try:
                review.accept_saying(ctx, acting, tid, batch=True, together=together)
                accepted.append(tid)
            except TaskgateError as exc:
                skipped[tid] = f"not accepted: {exc.code}: {exc}"
    elif b.status == "stopped":
        for tid in b.remaining:
            skipped.setdefault(tid, "left verified: the batch stopped after runs that ended as errors")
    final = b.model_copy(update={"accepted": accepted, "skipped": skipped})
    ctx.commit([_put(final, version)])
    return final.model_copy(update={"version": version + 1})


def _send_back(ctx: Context, who: Acting, b: Batch, c: Culprit) -> str | None:
    """A culprit back to ready with the finding, no attempt used; why not, when it moved on."""

    def attempt() -> str | None:
        task = ctx.task(c.task_id)
        entry = b.entry(c.task_id)
        assert entry is not None
        sub = task.last_submission()
        current = (sub.resolved_commit or sub.commit_sha) if sub is not None else None
        if task.status is not Status.VERIFIED or current != entry.commit_sha:
            return f"{c.task_id} moved on ({task.status.value}) before the batch ended"
        project = ctx.project(task.project)
        now = ctx.clock.now()
        summary = rules.culprit_finding(c, b.id, b.branch or "the base branch")
        finding = Finding(
            attempt=entry.attempt,
            source=FindingSource.VERIFIER,
            by=who.actor,
            at=now,
            summary=summary,
            details=c.reasons,
        )
        spec = _spec_of(ctx, task)
        new, ev = move(
            task,
            project,
            Action.STALE_BREAK,
            who,
            now,
            changes={"live_run": None, "findings": [*task.findings, finding], "verified_base": None},
            spec_draft=spec is not None and spec.status is SpecStatus.DRAFT,
            summary=summary,
            why=summary,
            batch=b.id,
            breaks_with=c.breaks_with,
            tip=c.tip,
            kind=c.kind,
        )
        superseded = review._supersede_run(ctx, task)  # a re-verification running on it
        ctx.commit([put_task(task, new), put_event(ev), *superseded])
        return None

    return ctx.retrying(attempt)
