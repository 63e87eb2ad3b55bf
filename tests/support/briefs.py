"""A brief's inputs for the brief's unit tests: a task, a decision and a project at a fixed time,
and `build_brief`, which fills in every argument a test leaves out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from taskgate.domain import brief as briefs
from taskgate.domain.models import Criterion, Decision, Project, Status, Task

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_task(**kw: object) -> Task:
    base: dict[str, object] = dict(
        id="p-1",
        project="p",
        number=1,
        title="Add health endpoint",
        status=Status.READY,
        created_by="human:a",
        created_at=T0,
        updated_at=T0,
        status_changed_at=T0,
    )
    base.update(kw)
    return Task.model_validate(base)


def make_decision(n: int, body: str, spec: str | None = None) -> Decision:
    return Decision(
        id=f"DEC-{n}",
        project="p",
        number=n,
        title=f"decision {n}",
        body=body,
        spec_id=spec,
        created_by="agent:a",
        created_at=T0,
    )


PROJECT = Project(name="p", created_by="human:a", created_at=T0)


def build_brief(**kw: object) -> dict[str, Any]:
    args: dict[str, object] = dict(
        task=make_task(),
        project=PROJECT,
        spec=None,
        criteria=[Criterion(id="AC-p-1.1", text="returns 200")],
        linked_decisions=[],
        ranked_decisions=[],
        dependencies=[],
        notes=[],
    )
    args.update(kw)
    return briefs.build(**args)  # type: ignore[arg-type]
