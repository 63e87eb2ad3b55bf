"""get_task_brief: gather the records a brief needs, let the domain build it."""

from __future__ import annotations

from typing import Any

from taskgate.domain import brief as briefs
from taskgate.domain.ids import parse_task_id
from taskgate.domain.models import Project, Spec, Task
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.domain.specs import criteria_of
from taskgate.domain.text import encodable
from taskgate.service import decisions, records, tasks
from taskgate.service.context import Context


def for_task(
    ctx: Context,
    who: Acting,
    task_id: str,
    task: Task | None = None,
    project: Project | None = None,
    spec: Spec | None = None,
) -> dict[str, Any]:
    """The brief of a task; pass `task`/`project`/`spec` already read in this call to save reads."""
    project_name, _ = parse_task_id(task_id)
    authorize(Op.READ, who, project=project_name)
    task = task or tasks.get(ctx, who, task_id)
    project = project if project is not None and project.name == project_name else ctx.project(project_name)
    if spec is None or spec.id != task.spec_id:
        spec = ctx.spec(project_name, task.spec_id) if task.spec_id else None
    criteria = criteria_of(task, spec)
    query = " ".join([task.title, task.description, spec.title if spec else "", *(c.text for c in criteria)])
    linked, ranked = decisions.relevant(ctx, project_name, query, spec_id=task.spec_id)
    deps = [records.load(Task, i) for i in ctx.store.get_many([records.task_key(b) for b in task.blocked_by])]
    notes, notes_total = tasks.latest_notes(ctx, who, task_id)
    out = briefs.build(
        task=task,
        project=project,
        spec=spec,
        criteria=criteria,
        linked_decisions=linked,
        ranked_decisions=ranked,
        dependencies=deps,
        notes=notes,
        notes_total=notes_total,
    )
    # Stored text that no serialiser can write (only a database from before such text was
    # refused can hold it) fails here, before a claim commits, not in the answer after it.
    encodable(out)
    return out
