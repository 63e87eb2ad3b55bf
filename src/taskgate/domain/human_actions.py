"""What a person can do to a task now: the buttons the board shows, read from the same rules the
server enforces (the lifecycle table for the status, and the few conditions a move has beyond
it), so the board never re-derives them and cannot drift from them."""

from __future__ import annotations

from enum import StrEnum

from taskgate.domain.errors import TaskgateError
from taskgate.domain.lifecycle import Action, find_move
from taskgate.domain.models import RULE_HOLDS, Risk, Status, Task, WhyHuman

# A task's own fields change only while nobody works on it and no verdict is pending.
EDITABLE_STATUSES = frozenset({Status.BACKLOG, Status.READY, Status.BLOCKED, Status.NEEDS_HUMAN})


class HumanAction(StrEnum):
    ACCEPT = "accept"
    # Accepted with others in one call (low risk only) or verified together first.
    BATCH_ACCEPT = "batch_accept"
    REOPEN = "reopen"
    CANCEL = "cancel"
    EDIT = "edit"
    REQUEUE = "requeue"
    BLOCK = "block"
    REVISE_SPEC = "revise_spec"
    REVERIFY = "reverify"
    ALLOW = "allow"
    # In the landing queue: to its head (a hotfix; refused while its own push is under way), or
    # out of it (back to verified).
    QUEUE_HEAD = "queue_head"
    LEAVE_QUEUE = "leave_queue"


def allowable(task: Task) -> bool:
    """Held for protected paths, or for criteria whose new test passes without the change, with a
    submission to verify again: what a human's "allow" answers."""
    held = task.needs_human
    if held is None or task.last_submission() is None:
        return False
    return (held.why is WhyHuman.HELD and bool(held.paths)) or (
        held.why is WhyHuman.PASSES_WITHOUT_CHANGE and bool(held.criteria)
    )


def _moves(task: Task, action: Action, verification_on: bool) -> bool:
    try:
        find_move(task.status, action, verification_on=verification_on)
    except TaskgateError:
        return False
    return True


def human_actions(task: Task, *, verification_on: bool) -> list[HumanAction]:
    """The actions a human may take on the task in its state, in the order the board shows them."""
    out: list[HumanAction] = []
    if _moves(task, Action.ACCEPT, verification_on):
        out.append(HumanAction.ACCEPT)
        if task.risk is Risk.LOW:
            out.append(HumanAction.BATCH_ACCEPT)
    held = task.status is Status.NEEDS_HUMAN
    # From needs_human a reopen answers a rule's hold; other reasons are requeued or revised.
    if _moves(task, Action.REOPEN, verification_on) and (
        not held or (task.needs_human is not None and task.needs_human.why in RULE_HOLDS)
    ):
        out.append(HumanAction.REOPEN)
    if held:
        out += [HumanAction.REQUEUE, HumanAction.BLOCK]
        if task.spec_id is not None:
            out.append(HumanAction.REVISE_SPEC)
        if allowable(task):
            out.append(HumanAction.ALLOW)
        if task.last_submission() is not None:
            out.append(HumanAction.REVERIFY)
    if task.status is Status.LANDING:
        out.append(HumanAction.QUEUE_HEAD)
    if _moves(task, Action.LEAVE_QUEUE, verification_on):
        out.append(HumanAction.LEAVE_QUEUE)
    if _moves(task, Action.CANCEL, verification_on):
        out.append(HumanAction.CANCEL)
    if task.status in EDITABLE_STATUSES:
        out.append(HumanAction.EDIT)
    return out
