"""What humans do with submitted work: accept (one or a low-risk batch), reopen, cancel, resolve."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from taskgate.domain.errors import ErrorCode, TaskgateError, invalid, not_found
from taskgate.domain.human_actions import allowable
from taskgate.domain.ids import parse_task_id
from taskgate.domain.lifecycle import Action, depends_on_project, find_move
from taskgate.domain.models import (
    RULE_HOLDS,
    AllowedChange,
    Attestation,
    Finding,
    FindingSource,
    Project,
    Risk,
    Spec,
    SpecStatus,
    Status,
    Task,
    VerificationRun,
    WhyHuman,
)
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.service import attestations, cascades, landing, records, refs, staleness
from taskgate.service.claims import settle_expiry
from taskgate.service.context import Context, event, lines, put_event, put_task
from taskgate.service.transitions import move
from taskgate.store.port import Check, Put
from taskgate.store.port import Op as StoreOp

MAX_BATCH = 50


def refuse_own_work(who: Acting, task: Task) -> None:
    """Nobody accepts work claimed or submitted under their own credential, whatever actor
    or on_behalf_of they name."""
    for attempt in task.attempts:
        sub = attempt.submission
        creds = {attempt.credential_id} | ({sub.credential_id} if sub else set())
        actors = {attempt.actor} | ({sub.actor} if sub else set())
        if who.credential_id in creds or who.actor in actors:
            raise TaskgateError(
                ErrorCode.SELF_ACCEPT,
                f"{task.id} was claimed or submitted by {attempt.actor} under this credential; "
                "a different principal must accept or resolve it",
                current_status=task.status.value,
            )


def _supersede_run(ctx: Context, task: Task) -> list[StoreOp]:
    """A verifier run in progress on a task that is accepted, reopened or cancelled is superseded."""
    if task.live_run is None:
        return []
    item = ctx.store.get(*records.run_key(task.id, task.live_run))
    if item is None:
        return []
    run = records.load(VerificationRun, item)
    if run.status != "running":
        return []
    done = run.model_copy(update={"status": "superseded", "finished_at": ctx.clock.now()})
    return [Put(records.run_item(done), run.version)]


def _summary(
    ctx: Context,
    task: Task,
    new: Task,
    spec: Spec | None,
    who: Acting,
    now: datetime,
    repo: str,
    *,
    batch: bool,
    stale: bool = False,
    together: dict[str, Any] | None = None,
) -> Attestation | None:
    """The signed verification summary of this acceptance (None without an attestation key)."""
    if ctx.attestor is None:
        return None
    return attestations.for_acceptance(
        ctx.attestor,
        task=task,
        new=new,
        repo=repo,
        spec=spec,
        verified=task.status is Status.VERIFIED,
        who=who.actor,
        now=now,
        via=who.via,
        on_behalf_of=who.on_behalf_of,
        batch=batch,
        stale=stale,
        together=together,
    )


def accept(ctx: Context, who: Acting, task_id: str, *, batch: bool = False) -> Task:
    return accept_saying(ctx, who, task_id, batch=batch)[0]


def accept_saying(
    ctx: Context, who: Acting, task_id: str, *, batch: bool = False, together: dict[str, Any] | None = None
) -> tuple[Task, str | None]:
    """Accept, and what the acceptance must say: that the verdict was stale (its base moved).
    `together`: the batch that verified the task with others onto one tip (service/batches.py);
    its tip, not the task's own verdict's, is then what a moved base makes stale."""
    project_name, _ = parse_task_id(task_id)
    said: list[str] = []

    def attempt() -> Task:
        said.clear()
        # The task and its project in one request (the project is needed when verification is
        # off; when it is on, reading it along costs a read unit, not a round trip).
        keys = [records.task_key(task_id), records.project_key(project_name)]
        read = {(i.pk, i.sk): i for i in ctx.store.get_many(keys)}
        if keys[0] not in read:
            raise not_found(f"task {task_id}")
        task = settle_expiry(ctx, records.load(Task, read[keys[0]]))
        spec = ctx.spec(task.project, task.spec_id) if task.spec_id else None
        risk = spec.risk if spec is not None else task.risk  # a task's risk is its spec's, as it is now
        authorize(Op.ACCEPT, who, project=project_name, risk=risk)
        if batch and risk is not Risk.LOW:
            raise TaskgateError(
                ErrorCode.FORBIDDEN, f"{task_id} is {risk.value} risk: accept it on its own, not in a batch"
            )
        refuse_own_work(who, task)
        # Accepting verified work does not depend on the project; waiting work does (the switch).
        project = None
        if depends_on_project(task.status, Action.ACCEPT):
            if keys[1] not in read:
                raise not_found(f"project {project_name}")
            project = records.load(Project, read[keys[1]])
        known = records.load(Project, read[keys[1]]) if keys[1] in read else None
        if known is not None:  # a local repository's tip, read now: no verifier need have seen it move
            known = staleness.seen_base(ctx, known, [task], every=0)
        if together is not None:
            moved = known is not None and known.base_tip is not None and known.base_tip.tip != together["tip"]
            stale = task.status is Status.VERIFIED and moved
        else:
            stale = known is not None and staleness.stale(known, task)
        if stale and known is not None:
            warning = staleness.accept_warning(known, task)
            if together is not None and known.base_tip is not None:
                warning = (
                    f"{task_id} was {together['said']}, and {known.base_tip.branch} is at "
                    f"{known.base_tip.tip[:12]} now: its verdict is stale"
                )
            # With landing on, the queue re-checks a stale verdict before it lands (stale tasks
            # are not re-verified on their own then): accept_stale cannot wait for a run.
            if (
                known.verifier_config is not None
                and not known.verifier_config.accept_stale
                and not known.lands()
            ):
                raise TaskgateError(
                    ErrorCode.WRONG_STATE,
                    f"{warning}; this project accepts only after re-verification (accept_stale: false)",
                    current_status=task.status.value,
                )
            said.append(warning)
        now = ctx.clock.now()
        # How the acceptance was made goes into its history event and its signed summary, so a
        # batch of script accepts reads differently from a person at the board.
        new, ev = move(
            task,
            project,
            Action.ACCEPT,
            who,
            now,
            changes={"live_run": None},
            batch=batch or None,
            via=who.via.value,
            stale=stale or None,
            together=together,
        )
        # Decided on the spec's risk as read: the commit holds only if the spec is still so.
        guard: list[StoreOp] = (
            [Check(*records.spec_key(spec.project, spec.number), spec.version)] if spec else []
        )
        if new.status is Status.LANDING and project is not None:
            guard += landing.enqueue(ctx, project, task, who, now)  # the queue's end, in this commit
        repo = records.load(Project, read[keys[1]]).repo if keys[1] in read else ""
        signed = _summary(ctx, task, new, spec, who, now, repo, batch=batch, stale=stale, together=together)
        if signed is not None:
            new = new.model_copy(update={"attestation_head": attestations.payload_digest(signed.envelope)})
        ctx.commit(
            [
                put_task(task, new),
                put_event(ev),
                *_supersede_run(ctx, task),
                *guard,
                *([Put(records.attestation_item(signed))] if signed is not None else []),
            ]
        )
        return new.model_copy(update={"version": task.version + 1})

    # Retried when another write (an agent's, a verifier's) landed in between: the human's
    # decision is re-made on what is there now, never answered with E_CONFLICT.
    done = ctx.retrying(attempt)
    if done.status is Status.DONE:  # landing: its dependants start once it has landed
        cascades.task_done(ctx, done)
    return done, (said[0] if said else None)


@dataclass
class BatchResult:
    accepted: list[Task] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # accepted, and said so: stale verdicts


def accept_batch(
    ctx: Context, who: Acting, task_ids: list[str], *, project: str | None = None
) -> BatchResult:
    """Accept low-risk tasks one commit each; each refusal is reported, none stops the rest.
    With `project`, ids of other projects are refused (the board accepts per project)."""
    if not task_ids:
        raise invalid("task_ids must name at least one task")
    if len(task_ids) > MAX_BATCH or len(set(task_ids)) != len(task_ids):
        raise invalid(f"task_ids: at most {MAX_BATCH} distinct tasks")
    if project is not None:
        ctx.project(project)
    out = BatchResult()
    for tid in task_ids:
        try:
            if project is not None and parse_task_id(tid)[0] != project:
                raise invalid(f"{tid} is not a task of project {project}")
            done, warning = accept_saying(ctx, who, tid, batch=True)
            out.accepted.append(done)
            if warning is not None:
                out.warnings.append(warning)
        except TaskgateError as exc:
            out.refused.append({"task_id": tid, **exc.to_dict()})
    return out


def reopen(ctx: Context, who: Acting, task_id: str, *, findings: list[str]) -> Task:
    project_name, _ = parse_task_id(task_id)
    authorize(Op.REOPEN, who, project=project_name)
    findings = lines(findings, "findings")
    if not findings:
        raise invalid("reopen needs findings: what the next attempt must fix")
    return ctx.retrying(lambda: _reopen(ctx, who, task_id, findings))


def _reopen(ctx: Context, who: Acting, task_id: str, findings: list[str]) -> Task:
    project_name, _ = parse_task_id(task_id)
    task = settle_expiry(ctx, ctx.task(task_id))
    if who.is_delegated:
        refuse_own_work(who, task)
    if task.status is Status.NEEDS_HUMAN and (
        task.needs_human is None or task.needs_human.why not in RULE_HOLDS
    ):
        # Only a submission a gate rule held is answered with findings there; others are
        # requeued or revised.
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"{task_id} waits for a human for another reason than a held submission: requeue it, "
            "block it, revise its spec or verify it again",
            current_status=task.status.value,
        )
    project = ctx.project(project_name)
    spec = ctx.spec(task.project, task.spec_id) if task.spec_id else None
    now = ctx.clock.now()
    last = task.current_attempt()
    finding = Finding(
        attempt=last.number if last else None,
        source=FindingSource.HUMAN,
        by=who.on_behalf_of or who.actor,
        at=now,
        summary=findings[0],
        details=findings[1:],
    )
    new, ev = move(
        task,
        project,
        Action.REOPEN,
        who,
        now,
        changes={"findings": [*task.findings, finding], "live_run": None},
        spec_draft=spec is not None and spec.status is SpecStatus.DRAFT,
        why="; ".join(findings),
        findings=findings,
    )
    # Done work coming back holds its refs again: list it under them (refs.py), in this commit.
    indexed = refs.for_task(ctx, new, spec, list_it=True).ops if task.status is Status.DONE else []
    ctx.commit([put_task(task, new), put_event(ev), *_supersede_run(ctx, task), *indexed])
    return new.model_copy(update={"version": task.version + 1})


def cancel(ctx: Context, who: Acting, task_id: str, *, reason: str = "") -> Task:
    project_name, _ = parse_task_id(task_id)
    authorize(Op.CANCEL, who, project=project_name)
    return ctx.retrying(lambda: _cancel(ctx, who, task_id, reason))


def _cancel(ctx: Context, who: Acting, task_id: str, reason: str) -> Task:
    project_name, _ = parse_task_id(task_id)
    task = settle_expiry(ctx, ctx.task(task_id))
    if who.is_delegated:
        refuse_own_work(who, task)
    project = ctx.project(project_name)
    now = ctx.clock.now()
    changes: dict[str, Any] = {"claim": None, "live_run": None}
    new, ev = move(task, project, Action.CANCEL, who, now, changes=changes, reason=reason or None)
    queue = landing.dequeue(ctx, task)
    ctx.commit([put_task(task, new), put_event(ev), *_supersede_run(ctx, task), *queue])
    return new.model_copy(update={"version": task.version + 1})


class Resolution(StrEnum):
    REQUEUE = "requeue"
    BLOCK = "block"
    REVISE_SPEC = "revise_spec"
    REVERIFY = "reverify"
    # A task held for protected paths, or for criteria whose new named test passes on the
    # baseline's code too: a human allows them, and it is verified again with them allowed.
    ALLOW = "allow"
    CANCEL = "cancel"


_RESOLVE_ACTIONS = {
    Resolution.REQUEUE: Action.REQUEUE,
    Resolution.BLOCK: Action.BLOCK,
    Resolution.REVISE_SPEC: Action.REVISE_SPEC,
    Resolution.REVERIFY: Action.REVERIFY,
    Resolution.ALLOW: Action.REVERIFY,
}


def resolve(
    ctx: Context,
    who: Acting,
    task_id: str,
    resolution: Resolution,
    *,
    blocked_by: list[str] | None = None,
    note: str = "",
) -> Task:
    """A human answers a task in needs_human."""
    if resolution is Resolution.CANCEL:
        return cancel(ctx, who, task_id, reason=note)
    project_name, _ = parse_task_id(task_id)
    authorize(Op.RESOLVE, who, project=project_name)
    task = ctx.retrying(lambda: _resolve(ctx, who, task_id, resolution, blocked_by, note))
    if resolution is Resolution.BLOCK:
        cascades.settle(ctx, task_id, Status.BLOCKED)  # its blockers may all be done already
    if resolution is Resolution.REVISE_SPEC and task.spec_id is not None:
        cascades.spec_changed(ctx, project_name, task.spec_id)
    return task


def _resolve(
    ctx: Context,
    who: Acting,
    task_id: str,
    resolution: Resolution,
    blocked_by: list[str] | None,
    note: str,
) -> Task:
    project_name, _ = parse_task_id(task_id)
    task = settle_expiry(ctx, ctx.task(task_id))  # a lapsed claim is over, sweep or not
    if who.is_delegated:
        refuse_own_work(who, task)
    project = ctx.project(project_name)
    find_move(
        task.status, _RESOLVE_ACTIONS[resolution], verification_on=project.verification_on
    )  # state first
    changes: dict[str, Any] = {}
    extra: list[StoreOp] = []
    if resolution is Resolution.BLOCK:
        if not blocked_by:
            raise invalid("block needs blocked_by: the tasks this one waits for")
        cascades.check_blockers(ctx, project_name, blocked_by, task_id)
        changes["blocked_by"] = sorted(set(task.blocked_by) | set(blocked_by))
        read = ctx.store.get_many([records.task_key(b) for b in blocked_by])
        extra += cascades.wait_for(task_id, [records.load(Task, b) for b in read])
    elif blocked_by:
        raise invalid("blocked_by goes only with resolution 'block'")
    if resolution is Resolution.REVERIFY and task.last_submission() is None:
        raise invalid(f"{task_id} has no submission to verify again; requeue it instead")
    allowed: list[str] | None = None
    allowed_criteria: list[str] | None = None
    if resolution is Resolution.ALLOW:
        held = task.needs_human
        submission = task.last_submission()
        paths = held is not None and held.why is WhyHuman.HELD and bool(held.paths)
        unchanged = held is not None and held.why is WhyHuman.PASSES_WITHOUT_CHANGE and bool(held.criteria)
        if held is None or submission is None or not allowable(task):
            raise invalid(
                f"{task_id} is not held for protected paths or for criteria passing without the change: "
                "there is nothing to allow"
            )
        if not who.is_human or who.is_delegated:
            # The allowance is signed as a person's: an agent acting for one does not give it.
            raise TaskgateError(
                ErrorCode.FORBIDDEN,
                "only a human allows a change to protected paths or a criterion passing without the change",
            )
        # What a human allowed this submission before (the other rule, an earlier run) stands.
        before = (
            task.allowed
            if task.allowed is not None and task.allowed.commit_sha == submission.commit_sha
            else None
        )
        allowed = sorted({*(before.paths if before else []), *(held.paths if paths else [])})
        allowed_criteria = sorted(
            {*(before.criteria if before else []), *(held.criteria if unchanged else [])}
        )
        changes["allowed"] = AllowedChange(
            commit_sha=submission.commit_sha,
            paths=allowed,
            by=who.actor,
            at=ctx.clock.now(),
            criteria=allowed_criteria,
        )
    if resolution is Resolution.REVISE_SPEC:
        if task.spec_id is None:
            raise invalid(f"{task_id} has no spec to revise; requeue it or cancel it")
        spec: Spec = ctx.spec(project_name, task.spec_id)
        if spec.status is SpecStatus.APPROVED:
            # The task waits in backlog until the revised spec is approved again.
            draft = spec.model_copy(
                update={
                    "status": SpecStatus.DRAFT,
                    "revision": spec.revision + 1,
                    "approved_by": None,
                    "approved_at": None,
                    "approved_as_human": False,
                    "updated_at": ctx.clock.now(),
                }
            )
            extra.append(Put(records.spec_item(draft), spec.version))
            extra.append(
                put_event(
                    event(
                        who,
                        "spec_revised",
                        project=project_name,
                        at=ctx.clock.now(),
                        spec=spec.id,
                        revision=draft.revision,
                        task=None,
                    )
                )
            )
            extra.append(cascades.mark_spec(ctx, draft))
    now = ctx.clock.now()
    new, ev = move(
        task,
        project,
        _RESOLVE_ACTIONS[resolution],
        who,
        now,
        changes=changes,
        spec_draft=resolution is Resolution.REQUEUE and ctx.spec_is_draft(task),
        resolution=resolution.value,
        note=note or None,
        allowed=allowed or None,
        allowed_criteria=allowed_criteria or None,
    )
    ctx.commit([put_task(task, new), put_event(ev), *extra])
    return new.model_copy(update={"version": task.version + 1})
