"""How a task reads to a person: what each attempt is doing, and the flags of its current one.

Pure: the task record in, words and ids out. The REST views (the board) and the MCP views say
the same thing through these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from taskgate.domain.models import Attempt, FindingSource, Status, Task


def attempt_state(task: Task, attempt: Attempt, verification_on: bool | None = None) -> str:
    """An ended attempt: how it ended ("verification failed"). An open one: "in progress" while
    it holds the claim, else where its submission waits. `verification_on`: the project's switch,
    when the caller read it (without it, submitted work waiting in needs_verification reads as
    waiting for verification, which is what the status says)."""
    if attempt.ending is not None:
        return attempt.ending.value.replace("_", " ")
    if attempt.submission is None:
        return "in progress"
    if task.status is Status.NEEDS_VERIFICATION:
        if task.live_run is not None:
            return "submitted, being verified"
        if verification_on is False:
            return "submitted, waiting for a human"
        return "submitted, waiting for verification"
    if task.status is Status.VERIFIED:
        return "submitted and verified, waiting for a human"
    if task.status is Status.NEEDS_HUMAN:
        return "submitted, waiting for a human"
    return "submitted"


def mismatches(task: Task, attempt: int) -> list[str]:
    """Criteria the executor of this attempt reported as pass and a verifier failed."""
    found = {
        cid
        for f in task.findings
        if f.source is FindingSource.VERIFIER and f.attempt == attempt
        for cid in f.self_report_mismatch
    }
    return sorted(found)


@dataclass(frozen=True)
class Flag:
    kind: Literal["self_report_mismatch", "verifier_errors"]
    text: str
    attempt: int | None = None
    criteria: tuple[str, ...] = ()
    count: int | None = None


def flags(task: Task) -> list[Flag]:
    """The flags of the task's current (latest) attempt only: an earlier attempt's mismatch stays
    on that attempt, not on a card whose latest work was verified honestly."""
    current = task.current_attempt()
    out: list[Flag] = []
    if current is not None:
        ids = mismatches(task, current.number)
        if ids:
            out.append(
                Flag(
                    "self_report_mismatch",
                    f"self-report mismatch in attempt {current.number}: {', '.join(ids)}",
                    attempt=current.number,
                    criteria=tuple(ids),
                )
            )
    if task.verifier_errors_in_row > 0:
        n = task.verifier_errors_in_row
        out.append(
            Flag(
                "verifier_errors",
                f"{n} verifier error{'s' if n != 1 else ''} in a row",
                attempt=current.number if current is not None else None,
                count=n,
            )
        )
    return out
