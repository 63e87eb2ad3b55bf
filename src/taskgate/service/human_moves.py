"""A human's lifecycle move asked for as the status to reach: update_task(status=...).

Agents can't write status; only a human can, through update_task or the board, and an
agent a human explicitly asked passes on_behalf_of. The move is the lifecycle table's one human
row from the task's status to the one asked for (lifecycle.human_move); the change is made by
the service that makes that move anywhere else (review.py), with its own checks: a delegated key
is refused on work it claimed or submitted (E_SELF_ACCEPT), medium and high risk are accepted by
a human on the board, every move is recorded with the actor and the human it acted for.
"""

from __future__ import annotations

from taskgate.domain.errors import invalid
from taskgate.domain.ids import parse_task_id
from taskgate.domain.lifecycle import Action, human_move
from taskgate.domain.models import Status, Task
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.service import landing, review
from taskgate.service.claims import settle_expiry
from taskgate.service.context import Context

_RESOLUTIONS = {
    Action.REQUEUE: review.Resolution.REQUEUE,
    Action.BLOCK: review.Resolution.BLOCK,
    Action.REVISE_SPEC: review.Resolution.REVISE_SPEC,
    Action.REVERIFY: review.Resolution.REVERIFY,
}


def _status(value: Status | str) -> Status:
    if isinstance(value, Status):
        return value
    try:
        return Status(value)
    except ValueError:
        raise invalid(f"status {value!r} is not one of: {', '.join(s.value for s in Status)}") from None


def move_to(
    ctx: Context,
    who: Acting,
    task_id: str,
    status: Status | str,
    *,
    findings: list[str] | None = None,
    blocked_by: list[str] | None = None,
    note: str | None = None,
) -> tuple[Task, list[str]]:
    """Move a task to `status` by the human move that goes there from where it is now, and what
    the move said (an accept of a stale verdict says so, as review.accept_saying does anywhere).

    The move is chosen on the task as read here; the service that makes it reads it again in its
    own commit, so a change in between either makes the same move (a reopen of verified work that
    became done still reopens it) or is refused E_WRONG_STATE: never a move nobody asked for."""
    project, _ = parse_task_id(task_id)
    authorize(Op.SET_STATUS, who, project=project)
    target = _status(status)
    task = settle_expiry(ctx, ctx.task(task_id))
    action = human_move(task.status, target)
    if findings and action is not Action.REOPEN:
        raise invalid("findings go with a reopen only (status 'ready' for submitted, verified or done work)")
    if blocked_by and action is not Action.BLOCK:
        raise invalid("blocked_by goes with status 'blocked' only (a needs_human task made to wait)")
    if note and action in (Action.ACCEPT, Action.REOPEN):
        raise invalid(f"a note goes with cancel and the needs_human moves; {action.value} takes none")
    if action is Action.ACCEPT:
        done, warning = review.accept_saying(ctx, who, task_id)
        return done, [warning] if warning else []
    if action is Action.REOPEN:
        return review.reopen(ctx, who, task_id, findings=findings or []), []
    if action is Action.LEAVE_QUEUE:
        return landing.leave(ctx, who, task_id), []
    if action is Action.CANCEL:
        return review.cancel(ctx, who, task_id, reason=note or ""), []
    resolved = review.resolve(ctx, who, task_id, _RESOLUTIONS[action], blocked_by=blocked_by, note=note or "")
    return resolved, []
