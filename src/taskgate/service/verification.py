"""Verification runs: a verifier takes one waiting task, sends evidence back; the server decides."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from taskgate.domain import baseline as baseline_rules
from taskgate.domain import commit_ids
from taskgate.domain import outcome as rules
from taskgate.domain.baseline import check_commands, protect_globs
from taskgate.domain.clock import iso
from taskgate.domain.errors import ErrorCode, TaskgateError, invalid
from taskgate.domain.ids import parse_task_id
from taskgate.domain.lifecycle import Action
from taskgate.domain.merging import MergeConflict, conflict_summary
from taskgate.domain.models import (
    Attempt,
    CriterionKind,
    FailedTest,
    Finding,
    FindingSource,
    Project,
    Spec,
    SpecStatus,
    Status,
    Submission,
    Task,
    VerificationRun,
)
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.domain.run_report import CriterionResult, HiddenRun, RunReport
from taskgate.domain.specs import criteria_of
from taskgate.domain.text import TAIL_CHARS, plain
from taskgate.service import attestations, records, staleness
from taskgate.service.context import SYSTEM, Context, chained, event, put_event, put_task
from taskgate.service.transitions import move
from taskgate.service.wakeups import MAX_WAIT_S
from taskgate.store.port import Put

MAX_CHECKS = 50
RUN_GRACE_MINUTES = 30  # beyond the configured check timeouts, a run with no answer is abandoned


@dataclass
class RunStarted:
    run: VerificationRun
    task: Task
    spec: Spec | None
    work: dict[str, Any]


def refuse_self_verify(who: Acting, submission: Submission | None, doing: str = "verify") -> None:
    """A verifier never judges, nor lands, work submitted with its own key."""
    if submission is not None and submission.credential_id == who.credential_id:
        raise TaskgateError(
            ErrorCode.SELF_VERIFY, f"a verifier may not {doing} work submitted with its own key"
        )


def _run_of(ctx: Context, task_id: str, run_id: str) -> VerificationRun:
    item = ctx.store.get(*records.run_key(task_id, run_id))
    if item is None:
        raise TaskgateError(ErrorCode.NOT_FOUND, f"run {run_id} of {task_id} not found")
    return records.load(VerificationRun, item)


def _budget_minutes(project: Project) -> float:
    """How long a run may take before it counts as abandoned: every check at its timeout, the
    command criteria and the reviewer (each bounded by one check timeout in `taskgate verify`),
    plus grace for checkout and reporting."""
    cfg = project.verifier_config
    if cfg is None:
        return RUN_GRACE_MINUTES
    checks = sum(c.timeout_minutes or cfg.check_timeout_minutes for c in cfg.checks.values())
    return RUN_GRACE_MINUTES + checks + 2 * cfg.check_timeout_minutes


def overdue(project: Project, run: VerificationRun, now: datetime) -> bool:
    return run.status == "running" and now >= run.started_at + timedelta(minutes=_budget_minutes(project))


def _no_answer(project: Project, run: VerificationRun) -> str:
    return f"run {run.id} got no answer within {_budget_minutes(project)} minutes"


def end_as_error(
    ctx: Context, task_id: str, run_id: str, reason: str, who: Acting | str = SYSTEM
) -> Task | None:
    """End a live run as an error of the run (no attempt used; it counts toward three in a row),
    in one commit with the task's move. None if the run is no longer the task's live run."""

    def attempt() -> Task | None:
        task = ctx.task(task_id)
        if task.live_run != run_id:
            return None
        run = _run_of(ctx, task_id, run_id)
        if run.status != "running":
            return None
        project = ctx.project(task.project)
        now = ctx.clock.now()
        summary = f"verifier error: {reason}"
        # A re-verification of a verified task that ends with no answer leaves its verdict as it was.
        action = Action.STALE_ERROR if task.status is Status.VERIFIED else Action.VERIFY_ERROR
        new, ev = move(
            task,
            project,
            action,
            who,
            now,
            changes={"live_run": None},
            run=run_id,
            summary=summary,
            why=reason,
        )
        done = run.model_copy(update={"status": "error", "finished_at": now, "summary": summary})
        # A run that ends with no verifier's answer is decided too (an error): signed like one.
        spec = ctx.spec(task.project, task.spec_id) if task.spec_id else None
        done, new = _signed(
            ctx, task=task, new=new, project=project, run=done, spec=spec, error=reason, now=now
        )
        ctx.commit([put_task(task, new), put_event(ev), Put(records.run_item(done), run.version)])
        return new.model_copy(update={"version": task.version + 1})

    return ctx.retrying(attempt)


def _signed(
    ctx: Context,
    *,
    task: Task,
    new: Task,
    project: Project,
    run: VerificationRun,
    spec: Spec | None,
    error: str | None,
    now: datetime,
) -> tuple[VerificationRun, Task]:
    """The decided run with its signed statement, and the task naming it as its last; unchanged
    without an attestor. Signed before the commit and written in it: one kms:Sign per decided
    run, and a decision never stands without its statement."""
    if ctx.attestor is None:
        return run, new
    cfg = project.verifier_config
    envelope, payload_sha = attestations.for_run(
        ctx.attestor,
        task=task,
        new=new,
        repo=project.repo,
        run=run,
        verdict=run.status,
        config=cfg.model_dump(mode="json") if cfg is not None else None,
        spec=spec,
        criteria=[c.model_dump(mode="json") for c in criteria_of(task, spec)],
        error=error,
        now=now,
    )
    return (
        run.model_copy(update={"attestation": envelope, "attestation_seq": task.version + 1}),
        new.model_copy(update={"attestation_head": payload_sha}),
    )


def _resolved(task: Task, submitted: str, commit: str) -> list[Attempt]:
    """The attempts with the full commit set on the submission a run resolved (the last one, if
    it is still the run's: a submission is what a later acceptance signs)."""
    attempts = list(task.attempts)
    for i in range(len(attempts) - 1, -1, -1):
        sub = attempts[i].submission
        if sub is not None:
            if sub.commit_sha == submitted:
                attempts[i] = attempts[i].model_copy(
                    update={"submission": sub.model_copy(update={"resolved_commit": commit})}
                )
            break
    return attempts


def _close_if_abandoned(ctx: Context, task: Task, project: Project) -> Task:
    """A live run nobody finished within its budget ends as an error; a fresh one refuses a start."""
    if task.live_run is None:
        return task
    run = _run_of(ctx, task.id, task.live_run)
    if run.status != "running":
        return task
    if not overdue(project, run, ctx.clock.now()):
        raise TaskgateError(ErrorCode.WRONG_STATE, f"{task.id} already has a verification run in progress")
    end_as_error(ctx, task.id, run.id, _no_answer(project, run))
    return ctx.task(task.id)


def _end_live_runs(
    ctx: Context, projects: list[str], why: Callable[[Project, VerificationRun], str | None]
) -> list[str]:
    """End as errors the live runs in these projects for which `why` gives a reason."""
    out = []
    for name in projects:
        project = ctx.project(name)
        waiting = [
            *ctx.tasks_in_status(name, Status.NEEDS_VERIFICATION),
            *ctx.tasks_in_status(name, Status.VERIFIED),
        ]
        for task in waiting:
            if task.live_run is None:
                continue
            reason = why(project, _run_of(ctx, task.id, task.live_run))
            if reason is not None and end_as_error(ctx, task.id, task.live_run, reason) is not None:
                out.append(task.id)
    return out


def close_abandoned(ctx: Context, projects: list[str]) -> list[str]:
    """The sweeper's part: end every run nobody finished within its budget, in these projects
    (the sweeper: all of them). Returns the task ids."""
    now = ctx.clock.now()

    def why(project: Project, run: VerificationRun) -> str | None:
        return _no_answer(project, run) if overdue(project, run, now) else None

    return _end_live_runs(ctx, projects, why)


def end_runs_under(ctx: Context, credential_id: str, projects: list[str], reason: str) -> list[str]:
    """End, as errors, the live runs started under a credential (its key was revoked:
    runs under a revoked key end as errors). Returns the task ids."""

    def why(_: Project, run: VerificationRun) -> str | None:
        return reason if run.credential_id == credential_id and run.status == "running" else None

    return _end_live_runs(ctx, projects, why)


def start(ctx: Context, who: Acting, *, task_id: str) -> RunStarted:
    """Begin a run on one waiting task; among concurrent verifiers exactly one gets it."""
    project_name, _ = parse_task_id(task_id)
    authorize(Op.VERIFY, who, project=project_name)
    task = ctx.task(task_id)
    project = ctx.project(project_name)
    if not project.verification_on:
        raise TaskgateError(ErrorCode.WRONG_STATE, f"verification is off for project {project_name}")
    # A verified task whose base has moved is verified again on the new tip.
    reverify = staleness.stale(project, task)
    if task.status is not Status.NEEDS_VERIFICATION and not reverify:
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"{task_id} is not waiting for verification",
            current_status=task.status.value,
        )
    submission = task.last_submission()
    attempt = task.current_attempt()
    if submission is None or attempt is None:
        raise TaskgateError(ErrorCode.WRONG_STATE, f"{task_id} has no submission")
    refuse_self_verify(who, submission)
    task = _close_if_abandoned(ctx, task, project)
    if task.status is not Status.NEEDS_VERIFICATION and not reverify:  # that error was its third in a row
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"{task_id} is not waiting for verification",
            current_status=task.status.value,
        )
    now = ctx.clock.now()
    run = VerificationRun(
        id=f"{iso(now)}-{ctx.entropy.token_hex(4)}",
        task_id=task_id,
        project=project_name,
        attempt=attempt.number,
        commit_sha=submission.commit_sha,
        credential_id=who.credential_id,
        started_at=now,
        reverify=reverify,
    )
    new = task.model_copy(update={"live_run": run.id, "updated_at": now})
    ev = event(
        who,
        "verification_started",
        project=project_name,
        at=now,
        task=task,
        run=run.id,
        commit_sha=submission.commit_sha,
        reverify=reverify or None,
    )
    new = chained(new, ev)
    ctx.commit([put_task(task, new), put_event(ev), Put(records.run_item(run))])
    spec = ctx.spec(project_name, task.spec_id) if task.spec_id else None
    criteria = criteria_of(task, spec)
    work = {
        "run_id": run.id,
        "task_id": task_id,
        "repo": project.repo,
        "commit_sha": submission.commit_sha,
        # Where the base branch stood when this attempt was claimed: the baseline of a
        # submission already on that branch.
        "claimed_base": attempt.claimed_tip.model_dump(mode="json") if attempt.claimed_tip else None,
        "config": project.verifier_config.model_dump(mode="json") if project.verifier_config else None,
        "criteria": [c.model_dump(mode="json") for c in criteria],
        "command_criteria_allowed": rules.command_criteria_allowed(criteria, spec),
        # The guard criteria whose guard counts: their new named tests need no run on the baseline.
        "guards": sorted(rules.honoured_guards(criteria, spec)),
        "spec": {"id": spec.id, "title": spec.title, "body": spec.body} if spec else None,
        "reverify": reverify,
    }
    return RunStarted(
        run.model_copy(update={"version": 1}),
        new.model_copy(update={"version": task.version + 1}),
        spec,
        work,
    )


@dataclass(frozen=True)
class Queue:
    """What waits in one project, as a verifier key may see it: why it has nothing to start."""

    project: str
    verification_on: bool
    waiting: int  # tasks a verifier could start on now
    running: int  # tasks with a run in progress
    for_human: int  # submitted tasks a human accepts directly (verification is off)
    # What a verifier needs to notice the base branch moving (verifier/tips.py)
    repo: str = ""
    base_branch: str | None = None  # the branch the project names, else the one last reported
    base_tip: str | None = None  # its tip as last reported
    merge: str | None = None  # the verifier config's merge setting
    stale: int = 0  # verified tasks waiting to be verified again on the moved base


def queues(ctx: Context, who: Acting, project: str | None = None) -> tuple[list[Task], list[Queue]]:
    """Tasks a verifier could start on, oldest submission first, and each project's queue: of
    one project, or of every project the key covers (those with verification off only when
    submitted work waits in them). A task with a live run is being verified."""
    if project is not None:
        authorize(Op.VERIFY, who, project=project)
        names = [project]
    else:
        authorize(Op.VERIFY, who)
        names = [n for n in ctx.project_names() if who.principal.may_use_project(n)]
    out: list[Task] = []
    found: list[Queue] = []
    stale: list[Task] = []
    for name in names:
        p = ctx.project(name)
        on = p.verification_on
        submitted = list(ctx.tasks_in_status(name, Status.NEEDS_VERIFICATION))
        free = [t for t in submitted if t.live_run is None] if on else []
        out += free
        # With landing on, a stale verdict is checked again when it lands (in the queue), not on
        # every move of the tip: re-verifying every waiting task on each landing is quadratic.
        again = on and not p.lands()
        stale_here = [t for t in staleness.stale_tasks(ctx, p) if t.live_run is None] if again else []
        stale += stale_here
        if on or submitted or project is not None:
            running = sum(1 for t in submitted if t.live_run is not None) if on else 0
            cfg, known = p.verifier_config, p.base_tip
            found.append(
                Queue(
                    name,
                    on,
                    len(free),
                    running,
                    0 if on else len(submitted),
                    repo=p.repo,
                    base_branch=(cfg.base_branch_choice() if cfg else None)
                    or (known.branch if known else None),
                    base_tip=known.tip if known else None,
                    merge=cfg.merge if cfg else None,
                    stale=len(stale_here),
                )
            )
    # Submissions first; then the stale verified tasks, oldest verdict first.
    return sorted(out, key=lambda t: t.status_changed_at) + stale, found


def queues_waiting(
    ctx: Context,
    who: Acting,
    project: str | None,
    wait_s: float,
    more: Callable[[list[Queue]], bool] | None = None,
) -> tuple[list[Task], list[Queue], float]:
    """`queues`, but when nothing can be started, wait up to `wait_s` (at most MAX_WAIT_S) for
    something to arrive. Also returns the wait honoured, so a verifier knows it may ask again at
    once instead of sleeping between polls. `more`: whether other work (a batch) waits in these
    queues, which answers at once too."""
    if not 0 <= wait_s <= MAX_WAIT_S:
        raise invalid(f"wait must be between 0 and {MAX_WAIT_S:g} seconds")
    if ctx.wakeups.host_waits:  # the local gateway waits between answers (service/wakeups.py)
        waiting_, found = queues(ctx, who, project)
        return waiting_, found, wait_s
    deadline = time.monotonic() + wait_s
    while True:
        seen = ctx.wakeups.generation()
        waiting_, found = queues(ctx, who, project)
        left = deadline - time.monotonic()
        if waiting_ or left <= 0 or (more is not None and more(found)):
            return waiting_, found, wait_s
        ctx.wakeups.wait(seen, left)


def waiting(ctx: Context, who: Acting, project: str | None = None) -> list[Task]:
    """Tasks a verifier could start on (see `queues`)."""
    return queues(ctx, who, project)[0]


def record_review(
    ctx: Context, who: Acting, task_id: str, run_id: str, results: dict[str, CriterionResult]
) -> VerificationRun:
    """The reviewer's judgement on review criteria, kept on the run until it finishes."""
    project_name, _ = parse_task_id(task_id)
    authorize(Op.REVIEW, who, project=project_name)
    run, _task, criteria = _live(ctx, task_id, run_id)
    kinds = {c.id: c.kind for c in criteria}
    wrong = sorted(cid for cid in results if kinds.get(cid) is not CriterionKind.REVIEW)
    if wrong:
        raise invalid(f"a reviewer judges review criteria only, not: {', '.join(wrong)}")
    evidence = dict(run.evidence)
    evidence.update({cid: _kept(r).model_dump(mode="json") for cid, r in results.items()})
    new = run.model_copy(update={"evidence": evidence})
    ctx.commit([Put(records.run_item(new), run.version)])
    return new.model_copy(update={"version": run.version + 1})


# A failing test's message kept on a run: enough for the assertion and its diff.
MESSAGE_CHARS = 2000


def _kept(r: CriterionResult) -> CriterionResult:
    """A criterion's evidence as it is stored: plain text, clipped."""
    return r.model_copy(
        update={
            "detail": plain(r.detail)[:TAIL_CHARS],
            "rationale": plain(r.rationale or "")[:TAIL_CHARS] or None,
            "failures": [
                FailedTest(name=plain(t.name), message=plain(t.message)[:MESSAGE_CHARS])
                for t in r.failures[: rules.TESTS_PER_CRITERION]
            ],
            "restored": r.restored.model_copy(
                update={"submitted_detail": plain(r.restored.submitted_detail)[:TAIL_CHARS]}
            )
            if r.restored is not None
            else None,
        }
    )


def _hidden_kept(hidden: HiddenRun | None) -> dict[str, Any] | None:
    """What a run keeps of its hidden tests: their commit and counts, and the failing ones only
    as the verifier revealed them (it sent no more)."""
    if hidden is None:
        return None
    kept = hidden.model_copy(
        update={
            "failed": [
                FailedTest(name=plain(t.name), message=plain(t.message)[:MESSAGE_CHARS])
                for t in hidden.failed
            ]
        }
    )
    return kept.model_dump(mode="json")


def _live(ctx: Context, task_id: str, run_id: str) -> tuple[VerificationRun, Task, list[Any]]:
    task = ctx.task(task_id)
    run = _run_of(ctx, task_id, run_id)
    if task.live_run != run_id or run.status != "running":
        raise TaskgateError(
            ErrorCode.STALE_CLAIM,
            f"run {run_id} is no longer the live run of {task_id} ({run.status})",
            current_status=task.status.value,
        )
    spec = ctx.spec(task.project, task.spec_id) if task.spec_id else None
    return run, task, criteria_of(task, spec)


def finish(
    ctx: Context, who: Acting, task_id: str, run_id: str, report: RunReport
) -> tuple[VerificationRun, Task]:
    """Record a run's report; the server decides passed, failed, error or spec error and moves
    the task. The report's `commit_missing`: the verifier fetched the project's repository and
    the submitted commit is not in it (nothing ran). `commit`: the full commit the verifier
    checked out; it must extend the submitted one, and is kept on the run and its submission,
    and signed. `hidden_tests` and `screened` (the screen's hits in the lines the submission
    adds) are kept on the run and signed. `baseline`: what the submission changed against its
    baseline, kept on the run and signed; a change to a protected path no human allowed holds
    the task for a person."""
    project_name, _ = parse_task_id(task_id)
    authorize(Op.VERIFY, who, project=project_name)
    run, task, criteria = _live(ctx, task_id, run_id)
    if run.credential_id != who.credential_id:
        raise TaskgateError(ErrorCode.FORBIDDEN, f"run {run_id} was started under another verifier key")
    checks, results, error, commit = report.checks, report.results, report.error, report.commit
    commit_missing, base, conflict = report.commit_missing, report.base, report.conflict
    kinds = {c.id: c.kind for c in criteria}
    review = sorted(cid for cid in results if kinds.get(cid) is CriterionKind.REVIEW)
    if review:
        raise invalid(f"review criteria are judged by the reviewer key, not here: {', '.join(review)}")
    if len(checks) > MAX_CHECKS:
        raise invalid(f"at most {MAX_CHECKS} checks per run")
    if commit_missing and (checks or results or error or commit or report.baseline):
        raise invalid(
            "a run whose commit is missing ran nothing: send no checks, results, error, commit or "
            "baseline with it"
        )
    if commit is not None:
        problem = commit_ids.resolution_problem(run.commit_sha, commit)
        if problem is not None:
            raise invalid(f"{problem}; nothing was recorded")
    if conflict is not None:
        if checks or results or error or commit_missing or base is not None or run.evidence:
            raise invalid(
                "a run that found a merge conflict ran no check: send no checks, results, error or base with it"
            )
        return _conflicted(ctx, who, task, run, conflict, commit)
    held = {c.id for c in criteria}
    merged = {cid: CriterionResult.model_validate(r) for cid, r in run.evidence.items()}
    merged.update(results)
    # Keep what is stored small: the tail of each output and the head of each detail is enough
    # for findings, and the run must stay one item. Whatever sent it, stored text is plain: no
    # terminal escapes or control characters (domain.text.plain).
    checks = {
        n: c.model_copy(update={"output_tail": plain(c.output_tail)[-TAIL_CHARS:]}) for n, c in checks.items()
    }
    merged = {cid: _kept(r) for cid, r in merged.items() if cid in held}
    error = plain(error) if error else error
    spec = ctx.spec(task.project, task.spec_id) if task.spec_id else None
    submission = task.last_submission()
    project = ctx.project(project_name)
    cfg = project.verifier_config
    allowed = task.allowed if task.allowed is not None and task.allowed.commit_sha == run.commit_sha else None
    verdict = rules.decide(
        report.model_copy(update={"checks": checks, "results": merged, "error": error}),
        criteria=criteria,
        spec=spec,
        submission=submission,
        config=cfg,
        fetched=(run.commit_sha, project.repo),
        allowed=allowed.paths if allowed is not None else (),
        allowed_criteria=allowed.criteria if allowed is not None else (),
    )
    now = ctx.clock.now()
    changes: dict[str, Any] = {"live_run": None}
    action = {
        rules.Verdict.PASSED: Action.VERIFY_PASS,
        rules.Verdict.FAILED: Action.VERIFY_FAIL,
        rules.Verdict.ERROR: Action.VERIFY_ERROR,
        rules.Verdict.SPEC_ERROR: Action.VERIFY_SPEC_ERROR,
        rules.Verdict.NEEDS_HUMAN: Action.VERIFY_HOLD,
    }[verdict.verdict]
    summary = verdict.summary
    if run.reverify and task.status is Status.VERIFIED:
        action = staleness.reverify_action(verdict)
        if verdict.verdict is rules.Verdict.FAILED:
            summary = staleness.breaks_on_new_base(ctx, task, base, verdict.summary)
    if action in (Action.VERIFY_PASS, Action.STALE_PASS):
        changes["verified_base"] = base
    elif action is not Action.STALE_ERROR:
        changes["verified_base"] = None
    if verdict.verdict is rules.Verdict.FAILED:
        changes["findings"] = [
            *task.findings,
            Finding(
                attempt=run.attempt,
                source=FindingSource.VERIFIER,
                by=who.actor,
                at=now,
                summary=summary,
                details=verdict.findings,
                self_report_mismatch=verdict.self_report_mismatch,
                criteria=verdict.criteria,
                checks=verdict.checks,
                hidden_tests=verdict.hidden_tests,
            ),
        ]
    new, ev = move(
        task,
        project,
        action,
        who,
        now,
        changes=changes,
        spec_draft=spec is not None and spec.status is SpecStatus.DRAFT,
        run=run_id,
        summary=summary,
        self_report_mismatch=verdict.self_report_mismatch or None,
        held=verdict.held or None,
        why=summary if verdict.verdict is rules.Verdict.NEEDS_HUMAN else error or summary,
        base=base.model_dump(mode="json", exclude_none=True) if base is not None else None,
    )
    if new.needs_human is not None and verdict.why_human is not None:
        # The outcome rule says which rule held it; the paths and diff go with a protected change.
        held_for = new.needs_human.model_copy(
            update={
                "why": verdict.why_human,
                "paths": verdict.held,
                "diff": verdict.diff,
                "criteria": verdict.unchanged,
            }
        )
        new = new.model_copy(update={"needs_human": held_for})
    kept_baseline = None
    baseline = report.baseline
    if baseline is not None:
        commands = check_commands([c.command for c in cfg.checks.values()], baseline) if cfg else []
        globs = protect_globs(cfg.protect, commands) if cfg else []
        kept_baseline = baseline_rules.run_record(
            baseline, globs, verdict.held, allowed.model_dump(mode="json") if allowed is not None else None
        )
    done = run.model_copy(
        update={
            "status": verdict.verdict.value,
            "finished_at": now,
            "summary": summary,
            "base": base,
            "checks": {n: c.model_dump(mode="json") for n, c in checks.items()},
            "evidence": {cid: r.model_dump(mode="json") for cid, r in (verdict.evidence or merged).items()},
            "resolved_commit": commit,
            "hidden_tests": _hidden_kept(report.hidden_tests),
            "grading": report.grading.model_dump(mode="json") if report.grading is not None else None,
            "tripwires": report.tripwires.model_dump(mode="json") if report.tripwires is not None else None,
            "screened": [
                h.model_copy(update={"text": plain(h.text)}).model_dump(mode="json") for h in report.screened
            ],
            "baseline": kept_baseline,
            "loading": [h.model_dump(mode="json") for h in report.loading],
            "sensitivity": report.sensitivity.model_dump(mode="json") if report.sensitivity else None,
        }
    )
    return _record(ctx, task, new, ev, run, done, project, spec, commit, error, now)


def _conflicted(
    ctx: Context, who: Acting, task: Task, run: VerificationRun, conflict: MergeConflict, commit: str | None
) -> tuple[VerificationRun, Task]:
    """The submission did not merge onto the base tip: back to ready with a finding that names
    the tip and the paths and says what to do, no attempt used (the third in a row: needs_human).
    A verified task being re-verified goes the same way."""
    project = ctx.project(task.project)
    spec = ctx.spec(task.project, task.spec_id) if task.spec_id else None
    now = ctx.clock.now()
    summary = conflict_summary(commit or run.commit_sha, conflict, project.repo)
    finding = Finding(
        attempt=run.attempt,
        source=FindingSource.VERIFIER,
        by=who.actor,
        at=now,
        summary=summary,
        details=[f"conflict: {p}" for p in conflict.paths[:50]],
    )
    action = Action.STALE_CONFLICT if run.reverify else Action.VERIFY_CONFLICT
    new, ev = move(
        task,
        project,
        action,
        who,
        now,
        changes={"live_run": None, "findings": [*task.findings, finding], "verified_base": None},
        spec_draft=spec is not None and spec.status is SpecStatus.DRAFT,
        run=run.id,
        summary=summary,
        why=summary,
        conflict=conflict.model_dump(mode="json"),
    )
    done = run.model_copy(
        update={
            "status": "conflict",
            "finished_at": now,
            "summary": summary,
            "conflict": conflict,
            "resolved_commit": commit,
        }
    )
    return _record(ctx, task, new, ev, run, done, project, spec, commit, None, now)


def _record(
    ctx: Context,
    task: Task,
    new: Task,
    ev: Any,
    run: VerificationRun,
    done: VerificationRun,
    project: Project,
    spec: Spec | None,
    commit: str | None,
    error: str | None,
    now: datetime,
) -> tuple[VerificationRun, Task]:
    """Sign the decided run and commit it with the task's move and its history event, at once."""
    if commit is not None:
        new = new.model_copy(update={"attempts": _resolved(new, run.commit_sha, commit)})
    done, new = _signed(ctx, task=task, new=new, project=project, run=done, spec=spec, error=error, now=now)
    ctx.commit([put_task(task, new), put_event(ev), Put(records.run_item(done), run.version)])
    return done.model_copy(update={"version": run.version + 1}), new.model_copy(
        update={"version": task.version + 1}
    )
