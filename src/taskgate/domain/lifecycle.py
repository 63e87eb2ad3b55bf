"""The task lifecycle (docs/architecture.md, "The task lifecycle"), as one table of data.

Services never decide a move with their own ifs: they ask `find_move` for the row that
matches (status, action) and `apply_move` for the task it produces.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.merging import CONFLICTS_TO_NEEDS_HUMAN, conflicts_reason
from taskgate.domain.models import AttemptEnding, FailureKind, NeedsHuman, Status, WhyHuman


class Action(StrEnum):
    CREATE_DRAFT = "create_draft"
    CREATE_BLOCKED = "create_blocked"
    CREATE_READY = "create_ready"
    SPEC_APPROVED = "spec_approved"
    SPEC_APPROVED_BLOCKED = "spec_approved_blocked"
    SPEC_REVISED = "spec_revised"
    CLAIM = "claim"
    RELEASE = "release"
    FAIL_OTHER = "fail_other"
    EXPIRE = "expire"
    FAIL_DEPENDENCY = "fail_dependency"
    ESCALATE = "escalate"
    FAIL_SPEC_GAP = "fail_spec_gap"
    FAIL_DESIGN_CONFLICT = "fail_design_conflict"
    SUBMIT = "submit"
    ACCEPT = "accept"
    VERIFY_PASS = "verify_pass"
    VERIFY_FAIL = "verify_fail"
    VERIFY_ERROR = "verify_error"
    VERIFY_SPEC_ERROR = "verify_spec_error"
    VERIFY_HOLD = "verify_hold"
    VERIFY_CONFLICT = "verify_conflict"
    STALE_PASS = "stale_pass"
    STALE_FAIL = "stale_fail"
    STALE_BREAK = "stale_break"
    STALE_CONFLICT = "stale_conflict"
    STALE_ERROR = "stale_error"
    REOPEN = "reopen"
    BLOCKERS_DONE = "blockers_done"
    BLOCKERS_ADDED = "blockers_added"
    REQUEUE = "requeue"
    BLOCK = "block"
    REVISE_SPEC = "revise_spec"
    REVERIFY = "reverify"
    CANCEL = "cancel"
    LAND = "land"
    LAND_CULPRIT = "land_culprit"
    LEAVE_QUEUE = "leave_queue"


class Who(StrEnum):
    CREATOR = "creator"  # agent or human creating
    SYSTEM = "system"  # a cascade inside the server
    HOLDER = "holder"  # the agent holding the claim
    AGENT = "agent"
    HUMAN = "human"
    EDITOR = "editor"  # a human or agent editing a task nobody holds
    SWEEPER = "sweeper"  # lease expiry, on any access or by the sweeper
    SERVER = "server"  # verification outcome decided by the server


class Guard(StrEnum):
    VERIFICATION_OFF = "verification_off"
    VERIFICATION_ON = "verification_on"
    LAND_OFF = "land_off"  # humans land accepted work (the default)
    LAND_ON = "land_on"  # the verifier lands it (verifier config `land: true`)


@dataclass(frozen=True)
class Move:
    source: Status | None  # None: a new task
    action: Action
    target: Status
    who: Who
    uses_attempt: bool = False
    guard: Guard | None = None


S = Status
A = Action

_ROWS: list[Move] = [
    Move(None, A.CREATE_DRAFT, S.BACKLOG, Who.CREATOR),
    Move(None, A.CREATE_BLOCKED, S.BLOCKED, Who.CREATOR),
    Move(None, A.CREATE_READY, S.READY, Who.CREATOR),
    Move(S.BACKLOG, A.SPEC_APPROVED, S.READY, Who.SYSTEM),
    # A backlog task whose spec is approved while its blockers are
    # still open has to wait somewhere the "blockers done" cascade will find it.
    Move(S.BACKLOG, A.SPEC_APPROVED_BLOCKED, S.BLOCKED, Who.SYSTEM),
    # Tasks wait in backlog while their spec is a draft,
    # so a revised spec takes its unclaimed tasks back there until it is approved again.
    Move(S.READY, A.SPEC_REVISED, S.BACKLOG, Who.SYSTEM),
    Move(S.BLOCKED, A.SPEC_REVISED, S.BACKLOG, Who.SYSTEM),
    Move(S.READY, A.CLAIM, S.CLAIMED, Who.AGENT),
    Move(S.CLAIMED, A.RELEASE, S.READY, Who.HOLDER),
    Move(S.CLAIMED, A.FAIL_OTHER, S.READY, Who.HOLDER, uses_attempt=True),
    Move(S.CLAIMED, A.EXPIRE, S.READY, Who.SWEEPER, uses_attempt=True),
    Move(S.CLAIMED, A.FAIL_DEPENDENCY, S.BLOCKED, Who.HOLDER, uses_attempt=True),
    Move(S.CLAIMED, A.ESCALATE, S.NEEDS_HUMAN, Who.HOLDER),
    Move(S.CLAIMED, A.FAIL_SPEC_GAP, S.NEEDS_HUMAN, Who.HOLDER, uses_attempt=True),
    Move(S.CLAIMED, A.FAIL_DESIGN_CONFLICT, S.NEEDS_HUMAN, Who.HOLDER, uses_attempt=True),
    Move(S.CLAIMED, A.SUBMIT, S.NEEDS_VERIFICATION, Who.HOLDER),
    Move(S.NEEDS_VERIFICATION, A.ACCEPT, S.DONE, Who.HUMAN, guard=Guard.VERIFICATION_OFF),
    # No guard: a run can only start while verification is on, and its pass stays valid evidence
    # if the switch goes off before it finishes (a verified task stays acceptable).
    Move(S.NEEDS_VERIFICATION, A.VERIFY_PASS, S.VERIFIED, Who.SERVER),
    Move(S.NEEDS_VERIFICATION, A.VERIFY_FAIL, S.READY, Who.SERVER, uses_attempt=True),
    Move(S.NEEDS_VERIFICATION, A.REOPEN, S.READY, Who.HUMAN, uses_attempt=True, guard=Guard.VERIFICATION_OFF),
    # An error keeps the task waiting; the third in a row sends it to needs_human (see apply_move).
    Move(S.NEEDS_VERIFICATION, A.VERIFY_ERROR, S.NEEDS_VERIFICATION, Who.SERVER),
    # A run whose only non-passing criteria are ambiguous
    # refs is a spec error. No executor can fix a spec, so it waits for a human at once, and the
    # attempt is not used (it stays open, like one that waits after verifier errors, until a
    # human requeues, revises the spec or verifies it again).
    Move(S.NEEDS_VERIFICATION, A.VERIFY_SPEC_ERROR, S.NEEDS_HUMAN, Who.SERVER),
    # A submission a gate rule gives to a person (it changes a protected path, or adds code
    # that reads its grader) is not decided by its checks; no attempt is used. A human allows
    # it (reverify) or reopens the task with findings, which uses the attempt the hold left open.
    Move(S.NEEDS_VERIFICATION, A.VERIFY_HOLD, S.NEEDS_HUMAN, Who.SERVER),
    Move(S.NEEDS_HUMAN, A.REOPEN, S.READY, Who.HUMAN, uses_attempt=True),
    # The submission does not merge onto the base branch's tip. The
    # executor's to fix (rebase and submit again), so no attempt; the third in a row
    # sends it to needs_human (see land).
    Move(S.NEEDS_VERIFICATION, A.VERIFY_CONFLICT, S.READY, Who.SERVER),
    # A verified task whose base moved is re-verified on the new tip by the server's verifier:
    # still passing it stays verified; failing its own criteria uses an attempt; breaking only
    # on what the base gained (other checks fail, its criteria pass) or no longer merging is
    # not the executor's failure of its task, so no attempt. An error of that run changes nothing.
    Move(S.VERIFIED, A.STALE_PASS, S.VERIFIED, Who.SERVER),
    Move(S.VERIFIED, A.STALE_FAIL, S.READY, Who.SERVER, uses_attempt=True),
    Move(S.VERIFIED, A.STALE_BREAK, S.READY, Who.SERVER),
    Move(S.VERIFIED, A.STALE_CONFLICT, S.READY, Who.SERVER),
    Move(S.VERIFIED, A.STALE_ERROR, S.VERIFIED, Who.SERVER),
    Move(S.VERIFIED, A.ACCEPT, S.DONE, Who.HUMAN, guard=Guard.LAND_OFF),
    # With landing on, accepted work waits in the project's landing queue (domain/landing.py)
    # until the verifier has it on the base branch: `done` means on the branch.
    Move(S.VERIFIED, A.ACCEPT, S.LANDING, Who.HUMAN, guard=Guard.LAND_ON),
    Move(S.LANDING, A.LAND, S.DONE, Who.SERVER),
    # It passed alone and breaks with what lands ahead of it (or no longer merges): not the
    # executor's failure of its task, so no attempt, as a batch's culprit.
    Move(S.LANDING, A.LAND_CULPRIT, S.READY, Who.SERVER),
    Move(S.LANDING, A.LEAVE_QUEUE, S.VERIFIED, Who.HUMAN),
    Move(S.VERIFIED, A.REOPEN, S.READY, Who.HUMAN, uses_attempt=True),
    Move(S.BLOCKED, A.BLOCKERS_DONE, S.READY, Who.SYSTEM),
    # An edit that gives a ready task an unfinished blocker makes it
    # wait where the "blockers done" cascade will find it. (An edit that leaves a blocked task
    # with no unfinished blocker is the row above, in the same commit as the edit.)
    Move(S.READY, A.BLOCKERS_ADDED, S.BLOCKED, Who.EDITOR),
    Move(S.NEEDS_HUMAN, A.REQUEUE, S.READY, Who.HUMAN),
    Move(S.NEEDS_HUMAN, A.BLOCK, S.BLOCKED, Who.HUMAN),
    Move(S.NEEDS_HUMAN, A.REVISE_SPEC, S.BACKLOG, Who.HUMAN),
    Move(S.NEEDS_HUMAN, A.REVERIFY, S.NEEDS_VERIFICATION, Who.HUMAN),
    *[Move(s, A.CANCEL, S.CANCELLED, Who.HUMAN) for s in Status if s not in (S.DONE, S.CANCELLED)],
    Move(S.DONE, A.REOPEN, S.READY, Who.HUMAN),
]

TABLE: tuple[Move, ...] = tuple(_ROWS)

# How a task's open attempt ends when the task moves (attempts are records: an ended one is never rewritten).
# An attempt ends with its claim, unless it submitted: then it stays open until the submission's
# fate is known. Actions not listed keep an open attempt open (claim, submit, a verifier pass or
# error, reverify). Whether the ending used an attempt is the row's `uses_attempt`, so the record
# and the attempt counter cannot disagree.
ATTEMPT_ENDINGS: dict[Action, AttemptEnding] = {
    A.RELEASE: AttemptEnding.RELEASED,
    A.FAIL_OTHER: AttemptEnding.FAILED,
    A.FAIL_DEPENDENCY: AttemptEnding.FAILED,
    A.FAIL_SPEC_GAP: AttemptEnding.FAILED,
    A.FAIL_DESIGN_CONFLICT: AttemptEnding.FAILED,
    A.EXPIRE: AttemptEnding.EXPIRED,
    A.ESCALATE: AttemptEnding.ESCALATED,
    A.ACCEPT: AttemptEnding.ACCEPTED,
    A.VERIFY_FAIL: AttemptEnding.VERIFICATION_FAILED,
    A.VERIFY_CONFLICT: AttemptEnding.MERGE_CONFLICT,
    A.STALE_FAIL: AttemptEnding.VERIFICATION_FAILED,
    A.STALE_BREAK: AttemptEnding.VERIFICATION_FAILED,
    A.STALE_CONFLICT: AttemptEnding.MERGE_CONFLICT,
    A.REOPEN: AttemptEnding.REOPENED,
    A.REQUEUE: AttemptEnding.RESOLVED,
    A.BLOCK: AttemptEnding.RESOLVED,
    A.REVISE_SPEC: AttemptEnding.RESOLVED,
    A.CANCEL: AttemptEnding.CANCELLED,
}
VERIFIER_ERRORS_TO_NEEDS_HUMAN = 3
_CONFLICTS = (Action.VERIFY_CONFLICT, Action.STALE_CONFLICT)
# A run that got through the merge: the conflicts are no longer "in a row".
_MERGED = (
    Action.VERIFY_PASS,
    Action.VERIFY_FAIL,
    Action.VERIFY_SPEC_ERROR,
    Action.STALE_PASS,
    Action.STALE_FAIL,
    Action.STALE_BREAK,
)


_index: tuple[tuple[Move, ...], dict[tuple[Status | None, Action], list[Move]]] | None = None


def _rows(source: Status | None, action: Action) -> list[Move]:
    """TABLE's rows for (status, action), in table order: from an index built once per TABLE
    (every state change looks its row up, often twice, and a scan compares every row). Keyed by
    the table object, so a TABLE replaced as a whole (a test plants a defect) is indexed anew."""
    global _index
    table = TABLE
    if _index is None or _index[0] is not table:
        rows: dict[tuple[Status | None, Action], list[Move]] = {}
        for m in table:
            rows.setdefault((m.source, m.action), []).append(m)
        _index = (table, rows)
    return _index[1].get((source, action), [])


def find_move(
    source: Status | None, action: Action, *, verification_on: bool = False, land_on: bool = False
) -> Move:
    """The row for (status, action), or E_WRONG_STATE. Guards select among rows, never add any."""
    candidates = _rows(source, action)
    if not candidates:
        where = source.value if source else "(new)"
        raise TaskgateError(
            ErrorCode.WRONG_STATE,
            f"cannot {action.value.replace('_', ' ')} a task in status {where}",
            current_status=source.value if source else None,
        )
    for move in candidates:
        if move.guard is None:
            return move
        if move.guard is Guard.VERIFICATION_OFF and not verification_on:
            return move
        if move.guard is Guard.VERIFICATION_ON and verification_on:
            return move
        if move.guard is Guard.LAND_OFF and not land_on:
            return move
        if move.guard is Guard.LAND_ON and land_on:
            return move
    state = "on" if verification_on else "off"
    raise TaskgateError(
        ErrorCode.WRONG_STATE,
        f"cannot {action.value.replace('_', ' ')} a task in status {source.value if source else '(new)'} "
        f"while verification is {state}",
        current_status=source.value if source else None,
    )


# Human moves a status change does not make: reopening a held submission needs findings, so
# from needs_human a status of ready is a requeue and a reopen goes through its own call.
OWN_CALL = frozenset({(S.NEEDS_HUMAN, A.REOPEN)})


def human_move(source: Status, target: Status) -> Action:
    """The human's action that takes a task from `source` to `target` (update_task(status)):
    the table's human row from there to there (each such pair has one), or E_WRONG_STATE naming
    where a human can take the task from `source`. Guards are not looked at here: the move's
    own find_move applies them (accept while verification is on, ...)."""
    rows = {
        m.action
        for m in TABLE
        if m.who is Who.HUMAN
        and m.source == source
        and m.target == target
        and (m.source, m.action) not in OWN_CALL
    }
    if len(rows) > 1:
        raise AssertionError(f"two human moves from {source.value} to {target.value}: {sorted(rows)}")
    if rows:
        return rows.pop()
    there = sorted({m.target.value for m in TABLE if m.who is Who.HUMAN and m.source == source})
    raise TaskgateError(
        ErrorCode.WRONG_STATE,
        f"no human move takes a task from {source.value} to {target.value}; from {source.value} a "
        f"human can move it to {', '.join(there) if there else 'nothing (it is final)'}",
        current_status=source.value,
    )


def depends_on_project(source: Status | None, action: Action) -> bool:
    """Whether the project's settings can change where (source, action) goes: a row chosen by
    the verification switch, or a landing in ready that may find the attempts used up (the
    project's max_attempts, unless the task sets its own). A service moving a task by a row
    that does not need not read the project for it."""
    rows = _rows(source, action)
    return any(m.guard is not None or _may_run_out(m) for m in rows)


def _may_run_out(move: Move) -> bool:
    """A move to ready that uses an attempt, or that the system makes: it goes to needs_human
    instead when the attempts are used up (see land)."""
    return move.target is Status.READY and (move.uses_attempt or move.who is Who.SYSTEM)


@dataclass(frozen=True)
class MoveResult:
    """Where a move lands once the attempt and error rules are applied."""

    target: Status
    attempts_used: int
    verifier_errors_in_row: int
    exhausted: bool = False
    conflicts_in_row: int = 0


def land(
    move: Move,
    *,
    attempts_used: int,
    max_attempts: int,
    verifier_errors_in_row: int,
    spec_draft: bool = False,
    conflicts_in_row: int = 0,
) -> MoveResult:
    used = attempts_used + (1 if move.uses_attempt else 0)
    # A re-verification's error counts too: left verified and stale, the task would be handed
    # out again at once, and a verifier that cannot run it would loop on it.
    erred = move.action in (Action.VERIFY_ERROR, Action.STALE_ERROR)
    errors = verifier_errors_in_row + 1 if erred else 0
    if erred and errors >= VERIFIER_ERRORS_TO_NEEDS_HUMAN:
        return MoveResult(Status.NEEDS_HUMAN, used, errors, conflicts_in_row=conflicts_in_row)
    # Conflicts count until a run gets through the merge or a human steps in.
    conflicts = conflicts_in_row
    if move.action in _CONFLICTS:
        conflicts += 1
        if conflicts >= CONFLICTS_TO_NEEDS_HUMAN:
            return MoveResult(Status.NEEDS_HUMAN, used, errors, conflicts_in_row=conflicts)
    elif move.action in _MERGED or move.who is Who.HUMAN:
        conflicts = 0
    # A move to ready that uses the last attempt, or that the system makes for a task whose
    # attempts are already used up (e.g. its last attempt ended in a dependency failure), goes to
    # needs_human: only a human puts such a task back in the queue.
    if _may_run_out(move) and used >= max_attempts:
        return MoveResult(Status.NEEDS_HUMAN, used, errors, exhausted=True, conflicts_in_row=conflicts)
    # Tasks wait in backlog while their spec is a draft: a move to ready under a draft
    # (a claim that ended after its spec was revised, a reopen or requeue under a draft) lands
    # there, as the revise cascade puts ready and blocked tasks; approval brings it back.
    if move.target is Status.READY and spec_draft:
        return MoveResult(Status.BACKLOG, used, errors, conflicts_in_row=conflicts)
    return MoveResult(move.target, used, errors, conflicts_in_row=conflicts)


# What a move that used an attempt was, for the reason of a task whose attempts ran out.
_LAST_ENDED = {
    Action.VERIFY_FAIL: "failed verification",
    Action.EXPIRE: "lease expired",
    Action.FAIL_OTHER: "was reported failed",
    Action.REOPEN: "was reopened",
    Action.STALE_FAIL: "failed re-verification on the moved base",
}


def needs_human(
    move: Move,
    out: MoveResult,
    *,
    max_attempts: int,
    text: str,
    at: datetime,
    by: str,
    attempt: int | None,
    has_spec: bool,
) -> NeedsHuman:
    """The record of why a move that lands in needs_human puts the task there (see why_human),
    with the resolution that answers it where one does."""
    why, reason = why_human(move, out, max_attempts=max_attempts, text=text)
    suggested: Literal["revise_spec", "reverify"] | None = None
    if why is WhyHuman.VERIFIER_ERRORS:
        suggested = "reverify"  # once the verifier is fixed
    elif why is WhyHuman.SPEC_ERROR and has_spec:
        suggested = "revise_spec"  # a task's own criteria are edited on the task instead
    return NeedsHuman(
        why=why,
        reason=reason,
        at=at,
        by=by,
        attempt=attempt,
        failure_kind=_FAILURE_KINDS.get(move.action),
        suggested=suggested,
    )


_FAILURE_KINDS = {
    Action.FAIL_SPEC_GAP: FailureKind.SPEC_GAP,
    Action.FAIL_DESIGN_CONFLICT: FailureKind.DESIGN_CONFLICT,
}


def why_human(move: Move, out: MoveResult, *, max_attempts: int, text: str = "") -> tuple[WhyHuman, str]:
    """Why a move that lands in needs_human puts the task there, and the reason for a person.
    `text`: what the move came with (the question, the findings, the verifier's summary)."""
    text = text.strip()
    if move.action is Action.VERIFY_SPEC_ERROR:
        return WhyHuman.SPEC_ERROR, text or "spec error: a ref matches more than one test or group"
    if move.action is Action.VERIFY_HOLD:
        # Which rule held it (HELD or READS_GRADER) is the outcome rule's to say: the service
        # sets it from the verdict; HELD is the reason a hold has without one.
        return WhyHuman.HELD, text or "the gate's rules hold the submission for a person"
    if move.action in (Action.VERIFY_ERROR, Action.STALE_ERROR):
        last = f"; the last: {text}" if text else ""
        return WhyHuman.VERIFIER_ERRORS, f"{out.verifier_errors_in_row} verifier errors in a row{last}"
    if move.action in _CONFLICTS:
        return WhyHuman.MERGE_CONFLICTS, conflicts_reason(out.conflicts_in_row, text)
    if move.action is Action.ESCALATE:
        return WhyHuman.ESCALATED, f"escalated: {text}" if text else "escalated"
    if move.action in (Action.FAIL_SPEC_GAP, Action.FAIL_DESIGN_CONFLICT):
        kind = move.action.value.removeprefix("fail_")
        return WhyHuman.REPORTED_FAILURE, f"report_failure ({kind})" + (f": {text}" if text else "")
    if out.exhausted:
        what = _LAST_ENDED.get(move.action)
        last = f"; the last {what}" if what and move.uses_attempt else ""
        return (
            WhyHuman.ATTEMPTS_USED_UP,
            f"attempts used up ({out.attempts_used} of {max_attempts}){last}" + (f": {text}" if text else ""),
        )
    raise AssertionError(f"{move.action.value} does not lead to needs_human")
