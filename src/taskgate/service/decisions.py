"""Decisions (log, supersede, list) and full-text search over a project's records."""

from __future__ import annotations

from typing import Any

from taskgate.domain import search as ranking
from taskgate.domain.errors import invalid, not_found
from taskgate.domain.ids import decision_id, parse_decision_id
from taskgate.domain.models import Decision, Spec, Task
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.service import counters, records
from taskgate.service.context import Context, event, put_event
from taskgate.store.port import Put


def _all(ctx: Context, project: str) -> list[Decision]:
    items = ctx.all_pages(
        lambda c: ctx.store.query(records.project_pk(project), sk_prefix="DEC#", limit=500, cursor=c)
    )
    return [records.load(Decision, i) for i in items]


def log(
    ctx: Context,
    who: Acting,
    project: str,
    *,
    title: str,
    body: str = "",
    spec_id: str | None = None,
    supersedes: str | None = None,
) -> Decision:
    authorize(Op.LOG_DECISION, who, project=project)
    if not title.strip():
        raise invalid("title must not be empty")
    ctx.project(project)
    if spec_id is not None:
        ctx.spec(project, spec_id)

    def attempt() -> Decision:
        counter, number = counters.next_number(ctx, project, "decision")
        now = ctx.clock.now()
        ops = [counter]
        if supersedes is not None:
            old_item = ctx.store.get(*records.decision_key(project, parse_decision_id(supersedes)))
            if old_item is None:
                raise not_found(f"{supersedes} in project {project}")
            old = records.load(Decision, old_item)
            if old.superseded_by is not None:
                raise invalid(f"{supersedes} is already superseded by {old.superseded_by}")
            new_old = old.model_copy(update={"superseded_by": decision_id(number)})
            ops.append(Put(records.decision_item(new_old), old.version))
        decision = Decision(
            id=decision_id(number),
            project=project,
            number=number,
            title=title,
            body=body,
            spec_id=spec_id,
            supersedes=supersedes,
            created_by=who.actor,
            created_at=now,
        )
        ops += [
            Put(records.decision_item(decision)),
            put_event(
                event(
                    who,
                    "decision_logged",
                    project=project,
                    at=now,
                    decision=decision.id,
                    supersedes=supersedes,
                )
            ),
        ]
        ctx.commit(ops)
        return decision.model_copy(update={"version": 1})

    return ctx.retrying(attempt)


def list_decisions(
    ctx: Context, who: Acting, project: str, *, include_superseded: bool = False, spec_id: str | None = None
) -> list[Decision]:
    authorize(Op.READ, who, project=project)
    ctx.project(project)
    out = _all(ctx, project)
    if not include_superseded:
        out = [d for d in out if d.superseded_by is None]
    if spec_id is not None:
        out = [d for d in out if d.spec_id == spec_id]
    return out


def relevant(
    ctx: Context, project: str, query: str, *, spec_id: str | None, top: int = 5
) -> tuple[list[Decision], list[Decision]]:
    """(spec-linked, top-ranked) live decisions for a brief; superseded ones never appear."""
    live = [d for d in _all(ctx, project) if d.superseded_by is None]
    linked = [d for d in live if spec_id is not None and d.spec_id == spec_id]
    by_id = {d.id: d for d in live}
    ranked = ranking.rank(query, [ranking.Doc(d.id, f"{d.title} {d.body}") for d in live], limit=top)
    return linked, [by_id[i] for i, _ in ranked]


def search(ctx: Context, who: Acting, project: str, query: str, *, limit: int = 10) -> list[dict[str, Any]]:
    """Ranked matches among the project's live decisions, specs and tasks."""
    authorize(Op.READ, who, project=project)
    if not query.strip():
        raise invalid("query must not be empty")
    if not 1 <= limit <= 50:
        raise invalid("limit must be between 1 and 50")
    ctx.project(project)
    pk = records.project_pk(project)
    docs: list[ranking.Doc] = []
    shown: dict[str, dict[str, Any]] = {}
    for d in _all(ctx, project):
        if d.superseded_by is None:
            docs.append(ranking.Doc(d.id, f"{d.title} {d.body}"))
            shown[d.id] = {"kind": "decision", "id": d.id, "title": d.title}
    for item in ctx.all_pages(lambda c: ctx.store.query(pk, sk_prefix="SPEC#", limit=500, cursor=c)):
        s = records.load(Spec, item)
        docs.append(ranking.Doc(s.id, f"{s.title} {s.body} " + " ".join(c.text for c in s.criteria)))
        shown[s.id] = {"kind": "spec", "id": s.id, "title": s.title, "status": s.status.value}
    for item in ctx.all_pages(
        lambda c: ctx.store.query(pk, sk_prefix=records.TASK_SK_PREFIX, limit=500, cursor=c)
    ):
        t = records.load(Task, item)
        docs.append(ranking.Doc(t.id, f"{t.title} {t.description}"))
        shown[t.id] = {"kind": "task", "id": t.id, "title": t.title, "status": t.status.value}
    return [{**shown[i], "score": round(score, 4)} for i, score in ranking.rank(query, docs, limit=limit)]
