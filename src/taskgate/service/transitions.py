"""Turn a lifecycle move into the new task and its history event (no I/O here either)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from taskgate.domain.lifecycle import (
    ATTEMPT_ENDINGS,
    Action,
    depends_on_project,
    find_move,
    land,
    needs_human,
)
from taskgate.domain.models import Attempt, HistoryEvent, Project, Status, Task
from taskgate.domain.principals import Acting
from taskgate.service.context import chain_head, event


def move(
    task: Task,
    project: Project | None,
    action: Action,
    who: Acting | str,
    now: datetime,
    *,
    changes: dict[str, Any] | None = None,
    attempt_record: dict[str, Any] | None = None,
    spec_draft: bool = False,
    why: str = "",
    **detail: Any,
) -> tuple[Task, HistoryEvent]:
    """Apply the table's row for (task.status, action); `changes` are other fields that move with
    it. If the action ends the task's open attempt (ATTEMPT_ENDINGS), the attempt ends here, with
    `attempt_record` as further fields of its record (findings, learned, ...). `spec_draft`: the
    task's spec is a draft now (Context.spec_is_draft), so a move to ready lands in backlog.
    `project` may be None where the row does not depend on it (lifecycle.depends_on_project): one
    read less. `why`: what the move came with (a question, findings, a verifier's summary), said
    in the task's needs_human reason if that is where it lands."""
    if project is None and depends_on_project(task.status, action):
        raise AssertionError(f"{action.value} from {task.status.value} depends on the project's settings")
    row = find_move(
        task.status,
        action,
        verification_on=project is not None and project.verification_on,
        land_on=project is not None and project.lands(),
    )
    # Without the project the row lands outside ready, where max_attempts is never compared.
    max_attempts = task.effective_max_attempts(project) if project is not None else 0
    out = land(
        row,
        attempts_used=task.attempts_used,
        max_attempts=max_attempts,
        verifier_errors_in_row=task.verifier_errors_in_row,
        spec_draft=spec_draft,
        conflicts_in_row=task.conflicts_in_row,
    )
    update: dict[str, Any] = {
        "status": out.target,
        "attempts_used": out.attempts_used,
        "verifier_errors_in_row": out.verifier_errors_in_row,
        "conflicts_in_row": out.conflicts_in_row,
        "updated_at": now,
        **(changes or {}),
    }
    if out.target is not task.status:
        update["status_changed_at"] = now
    current = task.current_attempt()
    if out.target is Status.NEEDS_HUMAN:
        update["needs_human"] = needs_human(
            row,
            out,
            max_attempts=max_attempts,
            text=why,
            at=now,
            by=who if isinstance(who, str) else who.actor,
            attempt=current.number if current is not None else None,
            has_spec=task.spec_id is not None,
        )
    elif task.needs_human is not None:
        update["needs_human"] = None
    ending = ATTEMPT_ENDINGS.get(action)
    if ending is not None and current is not None and current.ended_at is None:
        update["attempts"] = end_attempt(
            task, now, ending=ending, used=row.uses_attempt, **(attempt_record or {})
        )
    elif attempt_record:
        raise AssertionError(f"{action.value} on {task.id} ends no attempt; nothing to record")
    ev = event(
        who,
        action.value,
        project=task.project,
        at=now,
        task=task,
        from_status=task.status,
        to_status=out.target,
        attempts_used=out.attempts_used if row.uses_attempt else None,
        attempts_exhausted=True if out.exhausted else None,
        **detail,
    )
    update["history_head"] = chain_head(ev)  # as chained(new, ev) would set it
    return task.model_copy(update=update), ev


def end_attempt(task: Task, now: datetime, **fields: Any) -> list[Attempt]:
    """The attempts list with the current (open) attempt ended; earlier ones untouched."""
    attempts = list(task.attempts)
    current = attempts[-1]
    if current.ended_at is not None:
        raise AssertionError(f"attempt {current.number} of {task.id} already ended")
    attempts[-1] = current.model_copy(update={"ended_at": now, **fields})
    return attempts
