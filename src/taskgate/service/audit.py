"""Walk a project's task histories against their hash chains (domain/chain.py): reads only."""

from __future__ import annotations

from dataclasses import dataclass, field

from taskgate.domain.chain import Mismatch, first_mismatch
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.service import records
from taskgate.service.context import Context

PAGE = 200


@dataclass
class Audit:
    project: str
    tasks: int = 0
    events: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)  # the first of each task that has one

    @property
    def ok(self) -> bool:
        return not self.mismatches


def task_chain(ctx: Context, task_id: str, head: str | None) -> tuple[int, Mismatch | None]:
    """How many events the task has, and the first that does not match its chain."""
    events = [
        (i.sk, i.data)
        for i in ctx.all_pages(
            lambda c: ctx.store.query(records.task_pk(task_id), sk_prefix="H#", limit=PAGE, cursor=c)
        )
    ]
    return len(events), first_mismatch(task_id, head, events)


def verify_project(ctx: Context, who: Acting, project: str) -> Audit:
    authorize(Op.READ, who, project=project)
    ctx.project(project)  # E_NOT_FOUND for a project that does not exist
    out = Audit(project)
    pk = records.project_pk(project)
    for item in ctx.all_pages(lambda c: ctx.store.query(pk, sk_prefix="TASK#", limit=PAGE, cursor=c)):
        task_id = str(item.data.get("id"))
        head = item.data.get("history_head")
        count, mismatch = task_chain(ctx, task_id, head if isinstance(head, str) else None)
        out.tasks += 1
        out.events += count
        if mismatch is not None:
            out.mismatches.append(mismatch)
    return out
