"""Specs: create, update while draft, approve (cascading its backlog tasks), revise."""

from __future__ import annotations

from typing import Any

from taskgate.domain.errors import ErrorCode, TaskgateError, invalid
from taskgate.domain.ids import spec_id
from taskgate.domain.models import OPEN_STATUSES, RISK_ORDER, CriterionInput, Risk, Spec, SpecStatus
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting, PrincipalKind
from taskgate.domain.specs import number_criteria
from taskgate.service import cascades, counters, records, refs, requests
from taskgate.service.context import Context, event, put_event, storable, text
from taskgate.store.port import Page, Put


def create(
    ctx: Context,
    who: Acting,
    project: str,
    *,
    title: str,
    body: str = "",
    risk: Risk = Risk.LOW,
    criteria: list[CriterionInput],
    request_id: str | None = None,
) -> Spec:
    """Create a draft spec. With request_id, a retry answers with the spec the first call created."""
    authorize(Op.CREATE_SPEC, who, project=project)
    if not title.strip():
        raise invalid("title must not be empty")
    storable(title, "title")
    if not criteria:
        raise TaskgateError(ErrorCode.EMPTY_CRITERIA, "a spec needs at least one acceptance criterion")
    request = requests.begin(
        who,
        project,
        request_id,
        "spec",
        title=title,
        body=body,
        risk=risk,
        criteria=[c.model_dump(mode="json") for c in criteria],
    )
    ctx.project(project)

    def attempt() -> Spec:
        if request is not None and (first := request.replay(ctx)) is not None:
            return ctx.spec(project, str(first["id"]))
        counter, number = counters.next_number(ctx, project, "spec")
        now = ctx.clock.now()
        spec = Spec(
            id=spec_id(number),
            project=project,
            number=number,
            title=title,
            body=body,
            risk=risk,
            criteria=number_criteria(number, criteria),
            created_by=who.actor,
            created_at=now,
            updated_at=now,
        )
        ctx.commit(
            [
                counter,
                Put(records.spec_item(spec)),
                *refs.for_spec(ctx, spec),
                put_event(event(who, "spec_created", project=project, at=now, spec=spec.id, risk=risk.value)),
                *([request.record(spec.id)] if request is not None else []),
            ]
        )
        return spec.model_copy(update={"version": 1})

    return ctx.retrying(attempt)


def get(ctx: Context, who: Acting, project: str, sid: str) -> Spec:
    authorize(Op.READ, who, project=project)
    return ctx.spec(project, sid)


def list_specs(
    ctx: Context, who: Acting, project: str, *, limit: int = 50, cursor: str | None = None
) -> tuple[list[Spec], str | None]:
    authorize(Op.READ, who, project=project)
    ctx.project(project)
    page: Page = ctx.store.query(records.project_pk(project), sk_prefix="SPEC#", limit=limit, cursor=cursor)
    return [records.load(Spec, i) for i in page.items], page.cursor


def update(
    ctx: Context,
    who: Acting,
    project: str,
    sid: str,
    *,
    title: str | None = None,
    body: str | None = None,
    risk: Risk | None = None,
    criteria: list[CriterionInput] | None = None,
) -> Spec:
    authorize(Op.UPDATE_SPEC, who, project=project)
    old = ctx.spec(project, sid)
    if old.status is not SpecStatus.DRAFT:
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"{sid} is approved; a human revises it first",
            current_status=old.status.value,
        )
    if risk is not None and RISK_ORDER[risk] < RISK_ORDER[old.risk]:
        # Risk decides who must approve and accept: lowering it is a human's call, on the board,
        # or an agent could lower a spec and have an architect approve what no human saw.
        authorize(Op.LOWER_RISK, who, project=project)
    changes = {
        **_content(ctx, old, title=title, body=body, risk=risk, criteria=criteria),
        "updated_at": ctx.clock.now(),
    }
    new = old.model_copy(update=changes)
    re_risked = "risk" in changes and changes["risk"] is not old.risk
    ctx.commit(
        [
            Put(records.spec_item(new), old.version),
            put_event(event(who, "spec_updated", project=project, at=changes["updated_at"], spec=sid)),
            *([cascades.mark_spec(ctx, new)] if re_risked else []),
            *(refs.for_spec(ctx, new) if criteria is not None else []),
        ]
    )
    if re_risked:
        cascades.spec_changed(ctx, project, sid)
    return new.model_copy(update={"version": old.version + 1})


def _content(
    ctx: Context,
    old: Spec,
    *,
    title: str | None,
    body: str | None,
    risk: Risk | None,
    criteria: list[CriterionInput] | None,
) -> dict[str, Any]:
    """Validated changes to a spec's content. Criteria may be renumbered, but never so that an
    open task loses a criterion it points to."""
    changes: dict[str, Any] = {}
    if title is not None:
        if not title.strip():
            raise invalid("title must not be empty")
        changes["title"] = text(title, "title", 500)
    if body is not None:
        changes["body"] = text(body, "body")
    if risk is not None:
        changes["risk"] = risk
    if criteria is not None:
        numbered = number_criteria(old.number, criteria)
        kept = {c.id for c in numbered}
        for status in OPEN_STATUSES:
            for t in ctx.tasks_in_status(old.project, status):
                lost = [c for c in t.spec_criteria if c not in kept] if t.spec_id == old.id else []
                if lost:
                    raise invalid(
                        f"open task {t.id} holds {', '.join(lost)}; keep those criteria or update the task first"
                    )
        changes["criteria"] = numbered
    return changes


def approve(ctx: Context, who: Acting, project: str, sid: str) -> tuple[Spec, list[str]]:
    """Approve a draft; its backlog tasks then move to ready (or blocked). Returns moved task ids."""
    old = ctx.spec(project, sid)
    authorize(Op.APPROVE_SPEC, who, project=project, risk=old.risk)
    if old.status is not SpecStatus.DRAFT:
        raise TaskgateError(
            ErrorCode.WRONG_STATE, f"{sid} is already approved", current_status=old.status.value
        )
    now = ctx.clock.now()
    new = old.model_copy(
        update={
            "status": SpecStatus.APPROVED,
            "approved_by": who.on_behalf_of or who.actor,
            "approved_at": now,
            "approved_as_human": who.principal.kind is PrincipalKind.HUMAN or who.is_delegated,
            "updated_at": now,
        }
    )
    ctx.commit(
        [
            Put(records.spec_item(new), old.version),
            put_event(event(who, "spec_approved", project=project, at=now, spec=sid, risk=old.risk.value)),
            cascades.mark_spec(ctx, new),
        ]
    )
    moved = cascades.spec_changed(ctx, project, sid)
    return new.model_copy(update={"version": old.version + 1}), moved


def revise(
    ctx: Context,
    who: Acting,
    project: str,
    sid: str,
    *,
    title: str | None = None,
    body: str | None = None,
    risk: Risk | None = None,
    criteria: list[CriterionInput] | None = None,
) -> Spec:
    """A human sends an approved spec back to draft (a new revision), optionally with new content."""
    authorize(Op.REVISE_SPEC, who, project=project)
    old = ctx.spec(project, sid)
    if risk is not None and RISK_ORDER[risk] < RISK_ORDER[old.risk]:
        authorize(Op.LOWER_RISK, who, project=project)
    now = ctx.clock.now()
    changes: dict[str, Any] = {
        "status": SpecStatus.DRAFT,
        "revision": old.revision + (1 if old.status is SpecStatus.APPROVED else 0),
        "approved_by": None,
        "approved_at": None,
        "approved_as_human": False,
        "updated_at": now,
        **_content(ctx, old, title=title, body=body, risk=risk, criteria=criteria),
    }
    new = old.model_copy(update=changes)
    ctx.commit(
        [
            Put(records.spec_item(new), old.version),
            put_event(event(who, "spec_revised", project=project, at=now, spec=sid, revision=new.revision)),
            cascades.mark_spec(ctx, new),
            *(refs.for_spec(ctx, new) if criteria is not None else []),
        ]
    )
    cascades.spec_changed(ctx, project, sid)
    return new.model_copy(update={"version": old.version + 1})
