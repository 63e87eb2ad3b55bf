"""The landing queue (domain/landing.py): accepted work entering it, a human moving or taking
out an entry, and the verifier's steps, each decided here from the evidence it sends. A step is
two calls: the evidence of every prefix it tested (the server decides which prefix to push),
then what the push did (landed, or refused because the tip moved)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from taskgate.domain import batches as together
from taskgate.domain import landing as rules
from taskgate.domain.clock import iso
from taskgate.domain.errors import ErrorCode, TaskgateError, invalid
from taskgate.domain.ids import parse_task_id
from taskgate.domain.landing import Entry, Landed, Queue, Step, Tested
from taskgate.domain.lifecycle import Action
from taskgate.domain.merging import MergedBase
from taskgate.domain.models import (
    Attestation,
    Finding,
    FindingSource,
    Project,
    SpecStatus,
    Status,
    Task,
    VerificationRun,
)
from taskgate.domain.outcome import command_criteria_allowed
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.domain.run_report import CheckResult, CriterionResult
from taskgate.domain.specs import criteria_of
from taskgate.domain.text import TAIL_CHARS, plain
from taskgate.domain.verifier_config import VerifierConfig
from taskgate.service import attestations, cascades, records, staleness
from taskgate.service.context import Context, put_event, put_task
from taskgate.service.transitions import move
from taskgate.service.verification import RUN_GRACE_MINUTES, refuse_self_verify
from taskgate.store.port import Item, Put
from taskgate.store.port import Op as StoreOp

MAX_CHECKS = 50


# -- the queue item ------------------------------------------------------------------------------


def load(ctx: Context, project: str) -> Queue:
    item = ctx.store.get(*records.landing_key(project))
    if item is None:
        return Queue(project=project)
    return records.load(Queue, item)


def _put(q: Queue) -> Put:
    """The queue written over the version read (0: none was stored)."""
    pk, sk = records.landing_key(q.project)
    body = q.model_dump(mode="json", exclude={"version"})
    return Put(Item(pk, sk, body, q.version + 1), q.version or None)


def checks_digest(cfg: VerifierConfig | None) -> str | None:
    """What the checks are, as one digest: a verdict is reused only under the same checks."""
    if cfg is None:
        return None
    checks = {n: c.model_dump(mode="json") for n, c in sorted(cfg.checks.items())}
    return hashlib.sha256(json.dumps(checks, sort_keys=True).encode()).hexdigest()


def _verified_run(ctx: Context, task: Task) -> str | None:
    """The task's own passing run whose verdict it holds (its base's tree)."""
    held = [r for r in ctx.runs(task.id) if r.status == "passed" and r.base == task.verified_base]
    return held[-1].id if held else None


def enqueue(ctx: Context, project: Project, task: Task, who: Acting, now: datetime) -> list[StoreOp]:
    """What an accept that moves `task` to landing writes with it: the task at the queue's end.
    Two accepts at once: one commit loses on the queue's version and is decided again."""
    q = load(ctx, project.name)
    if len(q.entries) >= rules.MAX_QUEUE:
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"the landing queue of {project.name} holds {rules.MAX_QUEUE} tasks: let some land first",
        )
    sub, attempt = task.last_submission(), task.current_attempt()
    assert sub is not None and attempt is not None  # verified work has both
    base = task.verified_base
    entry = Entry(
        task_id=task.id,
        commit_sha=sub.resolved_commit or sub.commit_sha,
        attempt=attempt.number,
        accepted_at=now,
        accepted_by=who.actor,
        verified_tree=base.tree if base is not None else None,
        verified_run=_verified_run(ctx, task),
        verified_checks=checks_digest(project.verifier_config),
    )
    return [_put(q.model_copy(update={"entries": [*q.entries, entry]}))]


def dequeue(ctx: Context, task: Task) -> list[StoreOp]:
    """What a move out of landing by a human (cancel) writes with it: the entry gone."""
    if task.status is not Status.LANDING:
        return []
    q = load(ctx, task.project)
    if task.id in q.pushing():
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"{task.id} is being pushed onto the base branch now; try again once the push is answered",
            current_status=task.status.value,
        )
    return [_put(rules.without(q, [task.id]))]


# -- a human's moves -----------------------------------------------------------------------------


def _human(ctx: Context, who: Acting, task_id: str) -> tuple[str, Task]:
    project, _ = parse_task_id(task_id)
    authorize(Op.RESOLVE, who, project=project)
    if who.is_delegated:
        raise TaskgateError(
            ErrorCode.FORBIDDEN, "the landing queue is ordered by a human, not a delegated agent"
        )
    task = ctx.task(task_id)
    if task.status is not Status.LANDING:
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"{task_id} is {task.status.value}, not in the landing queue",
            current_status=task.status.value,
        )
    return project, task


def leave(ctx: Context, who: Acting, task_id: str) -> Task:
    """Take a task out of the landing queue: it is verified again (not accepted, not landed)."""

    def attempt() -> Task:
        project_name, task = _human(ctx, who, task_id)
        project = ctx.project(project_name)
        ops = dequeue(ctx, task)
        new, ev = move(task, project, Action.LEAVE_QUEUE, who, ctx.clock.now())
        ctx.commit([put_task(task, new), put_event(ev), *ops])
        return new.model_copy(update={"version": task.version + 1})

    return ctx.retrying(attempt)


def hotfix(ctx: Context, who: Acting, task_id: str) -> Queue:
    """Move a task to the head of its landing queue (behind a push in flight)."""

    def attempt() -> Queue:
        project, _task = _human(ctx, who, task_id)
        q = load(ctx, project)
        if task_id in q.pushing():
            raise TaskgateError(ErrorCode.WRONG_STATE, f"{task_id} is being pushed onto the base branch now")
        new = rules.hotfix(q, task_id)
        ctx.commit([_put(new)])
        return new.model_copy(update={"version": q.version + 1})

    return ctx.retrying(attempt)


# -- what a reader sees --------------------------------------------------------------------------


def show(ctx: Context, who: Acting, project: str) -> dict[str, Any]:
    authorize(Op.READ, who, project=project)
    p = ctx.project(project)
    q = load(ctx, project)
    return {
        "project": project,
        "land": p.lands(),
        "branch": _branch(p),
        "window": q.window,
        "entries": [
            {
                "position": i + 1,
                "task_id": e.task_id,
                "commit_sha": e.commit_sha,
                "accepted_at": iso(e.accepted_at),
                "accepted_by": e.accepted_by,
                "hotfix": e.hotfix,
                "state": rules.state_of(q, e.task_id),
            }
            for i, e in enumerate(q.entries)
        ],
        "live": q.live.model_dump(mode="json") if q.live is not None else None,
        "recent": [s.model_dump(mode="json") for s in q.recent],
    }


def place(ctx: Context, task: Task) -> dict[str, Any] | None:
    """A task's place in its landing queue, for task views (None: not in one)."""
    if task.status is not Status.LANDING:
        return None
    q = load(ctx, task.project)
    pos = q.position(task.id)
    if pos is None:
        return None
    return {"position": pos, "of": len(q.entries), "state": rules.state_of(q, task.id)}


def _branch(p: Project) -> str:
    cfg = p.verifier_config
    chosen = cfg.base_branch_choice() if cfg is not None else None
    return chosen or (p.base_tip.branch if p.base_tip is not None else "main")


# -- the verifier's steps ------------------------------------------------------------------------


def _budget(project: Project, k: int) -> timedelta:
    cfg = project.verifier_config
    checks = sum(c.timeout_minutes or cfg.check_timeout_minutes for c in cfg.checks.values()) if cfg else 0
    return timedelta(
        minutes=RUN_GRACE_MINUTES + checks * max(1, k) + (2 * cfg.check_timeout_minutes if cfg else 0)
    )


def _abandoned(project: Project, step: Step, now: datetime) -> bool:
    return now >= step.started_at + _budget(project, len(step.tasks))


def has_work(ctx: Context, project: Project) -> bool:
    """Whether a verifier could start a landing step in `project` now."""
    if not project.lands():
        return False
    q = load(ctx, project.name)
    if not q.entries:
        return False
    return q.live is None or _abandoned(project, q.live, ctx.clock.now())


def _spec_of(ctx: Context, task: Task) -> Any:
    return ctx.spec(task.project, task.spec_id) if task.spec_id else None


def _ended(q: Queue, step: Step, **update: Any) -> Queue:
    done = step.model_copy(update={"phase": "done", **update})
    return q.model_copy(update={"live": None, "recent": [*q.recent, done][-rules.RECENT_STEPS :]})


def start_step(ctx: Context, who: Acting, project_name: str) -> dict[str, Any]:
    """Take the queue's next step: its head window, to build on the tip in order. Among racing
    verifiers exactly one gets it (the queue item's version)."""
    authorize(Op.VERIFY, who, project=project_name)
    project = ctx.project(project_name)
    if not project.lands():
        raise TaskgateError(ErrorCode.WRONG_STATE, f"project {project_name} does not land accepted work")
    q = load(ctx, project_name)
    now = ctx.clock.now()
    if q.live is not None:
        if not _abandoned(project, q.live, now):
            raise TaskgateError(ErrorCode.WRONG_STATE, f"a landing step of {project_name} is in progress")
        # A verifier killed mid-step: what it may have pushed is found on the branch next step.
        q = _ended(q, q.live, outcome="error", finished_at=now, why="the step got no answer in time")
    head = rules.window(q)
    if not head:
        raise TaskgateError(ErrorCode.WRONG_STATE, f"the landing queue of {project_name} is empty")
    cfg = project.verifier_config
    digest = checks_digest(cfg)
    tasks = []
    for e in head:
        task = ctx.task(e.task_id)
        refuse_self_verify(who, task.last_submission(), "land")
        spec = _spec_of(ctx, task)
        held = together.judged(criteria_of(task, spec))
        tasks.append(
            {
                "task_id": e.task_id,
                "commit_sha": e.commit_sha,
                "criteria": [c.model_dump(mode="json") for c in held],
                "command_criteria_allowed": command_criteria_allowed(held, spec),
                "message": rules.commit_message(e.task_id, e.commit_sha),
                "date": rules.commit_date(e.accepted_at),
                # The tree its own verdict was reached on, under these same checks: no run there.
                "reuse_tree": e.verified_tree if e.verified_checks == digest else None,
            }
        )
    step = Step(
        run_id=f"{iso(now)}-L-{ctx.entropy.token_hex(4)}",
        tasks=[e.task_id for e in head],
        credential_id=who.credential_id,
        started_at=now,
        branch=_branch(project),
    )
    ctx.commit([_put(q.model_copy(update={"live": step}))])
    return {
        "project": project_name,
        "run_id": step.run_id,
        "repo": project.repo,
        "config": cfg.model_dump(mode="json") if cfg is not None else None,
        "branch": step.branch,
        "identity": {"name": rules.LAND_NAME, "email": rules.LAND_EMAIL},
        "tasks": tasks,
    }


@dataclass(frozen=True)
class Prefix:
    """One prefix as the verifier built and tested it: `task_id` merged on top of the ones
    before it; `already`: its commit was on the branch already (then `head` merged it)."""

    task_id: str
    head: str | None = None
    tree: str | None = None
    already: bool = False
    reused: bool = False
    conflict_paths: tuple[str, ...] = ()
    checks: dict[str, CheckResult] = field(default_factory=dict)
    results: dict[str, CriterionResult] = field(default_factory=dict)


@dataclass(frozen=True)
class Evidence:
    branch: str | None
    tip: str | None
    prefixes: tuple[Prefix, ...] = ()
    error: str | None = None


def _live(q: Queue, who: Acting, run_id: str, phase: str) -> Step:
    step = q.live
    if step is None or step.run_id != run_id:
        raise TaskgateError(
            ErrorCode.STALE_CLAIM, f"run {run_id} is not the live landing step of {q.project}"
        )
    if step.credential_id != who.credential_id:
        raise TaskgateError(ErrorCode.FORBIDDEN, f"run {run_id} was started under another verifier key")
    if step.phase != phase:
        raise TaskgateError(ErrorCode.WRONG_STATE, f"landing step {run_id} is {step.phase}, not {phase}")
    return step


def _judge(ctx: Context, q: Queue, step: Step, ev: Evidence) -> tuple[list[Tested], dict[str, Prefix]]:
    """Each prefix's verdict, decided here; evidence that does not fit the step refuses it all."""
    names = [p.task_id for p in ev.prefixes]
    if names != step.tasks[: len(names)]:
        raise invalid(
            f"landing step {step.run_id} built {', '.join(step.tasks)} in that order; got {', '.join(names)}"
        )
    cfg = ctx.project(q.project).verifier_config
    digest = checks_digest(cfg)
    out: list[Tested] = []
    seen_other = False
    for p in ev.prefixes:
        e = q.entry(p.task_id)
        if len(p.checks) > MAX_CHECKS:
            raise invalid(f"at most {MAX_CHECKS} checks per prefix")
        if p.already:
            if seen_other:
                raise invalid(f"{p.task_id} is said to be on the branch already, after a prefix that was not")
            out.append(Tested(task_id=p.task_id, verdict="already", head=p.head))
            continue
        seen_other = True
        if p.conflict_paths:
            out.append(
                Tested(
                    task_id=p.task_id,
                    verdict="conflict",
                    reasons=[f"conflict: {x}" for x in p.conflict_paths[:3]],
                )
            )
            break
        if p.head is None or p.tree is None:
            raise invalid(f"prefix {p.task_id} merged: send its commit and tree")
        if p.reused:
            if e is None or e.verified_tree != p.tree or e.verified_checks != digest:
                raise invalid(f"{p.task_id}'s verdict was reached on another tree or other checks: run it")
            out.append(Tested(task_id=p.task_id, verdict="reused", head=p.head, tree=p.tree))
            continue
        task = ctx.task(p.task_id)
        held = together.judged(criteria_of(task, _spec_of(ctx, task)))
        extra = sorted(set(p.results) - {c.id for c in held})
        if extra:
            raise invalid(f"{p.task_id} holds no judged criterion {', '.join(extra)}; nothing was recorded")
        why = together.decide_step(p.checks, {p.task_id: p.results}, {p.task_id: held})
        reasons = [r for rs in why.values() for r in rs][: together.REASONS_SHOWN]
        out.append(
            Tested(
                task_id=p.task_id,
                verdict="failed" if why else "passed",
                head=p.head,
                tree=p.tree,
                reasons=reasons,
            )
        )
        if why:
            break
    return out, {p.task_id: p for p in ev.prefixes}


def record_evidence(ctx: Context, who: Acting, project_name: str, run_id: str, ev: Evidence) -> Step:
    """Decide a step's prefixes. Something to push: the step waits for the push's answer (its
    commit is in `push`); nothing: what it decided is applied now (a culprit at the head, or
    entries found on the branch already)."""
    authorize(Op.VERIFY, who, project=project_name)
    q = load(ctx, project_name)
    step = _live(q, who, run_id, "testing")
    now = ctx.clock.now()
    if ev.error is not None:
        new = _ended(q, step, outcome="error", finished_at=now, why=plain(ev.error)[:2000])
        ctx.commit([_put(new.model_copy(update={"errors_in_row": q.errors_in_row + 1}))])
        return new.recent[-1]
    if ev.tip is None:
        raise invalid("a landing step that ran sends the tip it built on")
    if step.branch is not None and ev.branch not in (None, step.branch):
        raise invalid(f"landing step {run_id} builds on {step.branch}, not {ev.branch}")
    tested, prefixes = _judge(ctx, q, step, ev)
    # A hotfix or an entry taken out meanwhile: what was built behind it no longer counts.
    tested = tested[: rules.still_ahead(q, step)]
    n, _culprit = rules.decide(tested)
    step = step.model_copy(update={"tip": ev.tip, "tested": tested})
    runs = [_run(q, step, t, prefixes[t.task_id], now) for t in tested if t.verdict in ("passed", "failed")]
    if n and tested[n - 1].verdict != "already":
        step = step.model_copy(update={"phase": "pushing", "push": tested[n - 1].head})
        ctx.commit([_put(q.model_copy(update={"live": step})), *[Put(records.run_item(r)) for r in runs]])
        return step
    return _apply(ctx, who, q, step, pushed=False, runs=runs)


def record_push(
    ctx: Context, who: Acting, project_name: str, run_id: str, *, head: str, pushed: bool, why: str | None
) -> Step:
    """What the push of the decided prefix did: landed (its entries are done, its culprit goes
    back), or refused (the tip moved: nothing lands, the next step builds on the new tip)."""
    authorize(Op.VERIFY, who, project=project_name)
    q = load(ctx, project_name)
    step = _live(q, who, run_id, "pushing")
    if head != step.push:
        raise invalid(f"landing step {run_id} was to push {step.push}, not {head}")
    if not pushed:
        step = step.model_copy(update={"why": plain(why or "the push was refused")[:2000]})
    return _apply(ctx, who, q, step, pushed=pushed, runs=[])


def _apply(
    ctx: Context, who: Acting, q: Queue, step: Step, *, pushed: bool, runs: list[VerificationRun]
) -> Step:
    now = ctx.clock.now()
    n, culprit = rules.decide(step.tested)
    if not pushed:
        # Nothing was pushed: only entries on the branch already land; a culprit found behind a
        # refused push was judged on a tip that is gone (built again next step).
        n = sum(1 for t in step.tested[:n] if t.verdict == "already")
        if step.push is not None:
            culprit = None
    project = ctx.project(q.project)
    branch = step.branch or _branch(project)
    ops: list[StoreOp] = [Put(records.run_item(r)) for r in runs]
    landed: list[Task] = []
    before = step.tip
    assert before is not None
    for t in step.tested[:n]:
        task = ctx.task(t.task_id)
        entry = q.entry(t.task_id)
        assert t.head is not None and entry is not None
        where = Landed(
            branch=branch,
            commit=t.head,
            tree=t.tree,
            from_tip=before,
            run_id=_run_id(step, t.task_id) if t.verdict == "passed" else None,
            reused_run=entry.verified_run if t.verdict == "reused" else None,
            already=t.verdict == "already",
            at=now,
            by=who.actor,
        )
        if t.verdict != "already":
            before = t.head
        new, ev = move(task, project, Action.LAND, who, now, changes={"landed": where},
                       commit=t.head, branch=branch, from_tip=where.from_tip, run=step.run_id)  # fmt: skip
        signed = _signed(ctx, task, new, project.repo, where, runs, now)
        if signed is not None:
            new = new.model_copy(update={"attestation_head": attestations.payload_digest(signed.envelope)})
            ops.append(Put(records.attestation_item(signed)))
        ops += [put_task(task, new), put_event(ev)]
        landed.append(new)
    sent_back: Task | None = None
    if culprit is not None:
        task = ctx.task(culprit.task_id)
        entry = q.entry(culprit.task_id)
        assert entry is not None
        ahead = step.tasks[: step.tasks.index(culprit.task_id)]
        summary = rules.culprit_finding(culprit.task_id, culprit, ahead, branch, step.tip or "")
        finding = Finding(
            attempt=entry.attempt, source=FindingSource.VERIFIER, by=who.actor, at=now,
            summary=summary, details=culprit.reasons,
        )  # fmt: skip
        spec = _spec_of(ctx, task)
        new, ev = move(
            task,
            project,
            Action.LAND_CULPRIT,
            who,
            now,
            changes={"findings": [*task.findings, finding], "verified_base": None},
            spec_draft=spec is not None and spec.status is SpecStatus.DRAFT,
            summary=summary,
            breaks_with=ahead,
            tip=step.tip,
            kind=culprit.verdict,
            run=step.run_id,
        )
        ops += [put_task(task, new), put_event(ev)]
        sent_back = new
    gone = [t.task_id for t in step.tested[:n]] + (
        [culprit.task_id] if culprit is not None and sent_back else []
    )
    outcome: rules.Outcome = (
        "landed" if n else ("culprit" if sent_back else ("refused" if step.push else "nothing"))
    )
    done = {
        "finished_at": now,
        "outcome": outcome,
        "landed": [t.task_id for t in step.tested[:n]],
        "culprit": sent_back.id if sent_back else None,
    }
    new_q = _ended(rules.without(q, gone), step, **done)
    # The window moves on what a step decided: a clean landing widens it, a culprit narrows it;
    # a refused push or nothing to land leaves it.
    window = rules.resized(q, sent_back is not None) if n or sent_back else q.window
    new_q = new_q.model_copy(update={"window": window, "errors_in_row": 0})
    ctx.commit([_put(new_q), *ops])
    moved = [t for t in step.tested[:n] if t.verdict != "already"]
    if moved and moved[-1].head is not None:
        # The server knows the tip from its own landing: stale marks need no verifier's poll.
        staleness.base_moved(ctx, who, q.project, ref=f"refs/heads/{branch}", tip=moved[-1].head)
    for done_task in landed:
        cascades.task_done(ctx, done_task)
    return new_q.recent[-1]


def _signed(
    ctx: Context, task: Task, new: Task, repo: str, where: Landed, runs: list[VerificationRun], now: datetime
) -> Attestation | None:
    """The landing's signed statement, binding the run that tested exactly that commit."""
    if ctx.attestor is None:
        return None
    run = next((r for r in runs if r.id == where.run_id), None)
    if run is None and where.run_id is not None:
        item = ctx.store.get(*records.run_key(task.id, where.run_id))
        run = records.load(VerificationRun, item) if item is not None else None
    return attestations.for_landing(ctx.attestor, task=task, new=new, repo=repo, run=run, now=now)


def _run_id(step: Step, task_id: str) -> str:
    return f"{step.run_id}-{step.tasks.index(task_id) + 1:02d}"


def _run(q: Queue, step: Step, t: Tested, p: Prefix, now: datetime) -> VerificationRun:
    """The task's run of its prefix: the checks on the chain up to it, its own criteria's evidence."""
    entry = q.entry(t.task_id)
    assert entry is not None
    ahead = step.tasks[: step.tasks.index(t.task_id)]
    on = f" on top of {', '.join(ahead)}" if ahead else ""
    said = "passed" if t.verdict == "passed" else "failed: " + "; ".join(t.reasons)[:1000]
    checks = {
        n: c.model_copy(update={"output_tail": plain(c.output_tail)[-TAIL_CHARS:]}).model_dump(mode="json")
        for n, c in p.checks.items()
    }
    return VerificationRun(
        id=_run_id(step, t.task_id),
        task_id=t.task_id,
        project=q.project,
        attempt=entry.attempt,
        commit_sha=entry.commit_sha,
        credential_id=step.credential_id,
        started_at=step.started_at,
        finished_at=now,
        status="passed" if t.verdict == "passed" else "failed",
        summary=f"landing {step.run_id}: merged{on} onto {step.branch} at {(step.tip or '')[:12]}: {said}",
        checks=checks,
        evidence={cid: r.model_dump(mode="json") for cid, r in p.results.items()},
        base=MergedBase(mode="merge", branch=step.branch, tip=step.tip, tree=t.tree),
    )
