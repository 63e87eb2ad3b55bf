"""The landing queue: accepted work the verifier lands on the base branch (config `land: true`).

The algorithm is Zuul's gate pipeline with an adaptive window, on the batch machinery's merges:

- A step takes the queue's head window (k entries) and builds ONE chain on the branch's tip:
  entry 1 merged onto the tip, entry 2 onto that, ... Each merge commit is deterministic (fixed
  identity and message, dated the entry's accept time), so prefix i's commit is the same SHA in
  every run built on the same tip.
- Each prefix is tested in order: entry i is judged on top of entries 1..i-1 (speculatively:
  as if they land). A prefix whose tree is the tree its last entry was verified on (same checks)
  reuses that verdict: no run.
- The longest passing prefix's commit is pushed as a plain fast-forward; its entries are done.
  The first failing prefix's last entry is the culprit: it leaves the queue for ready, with no
  attempt used (it passed alone), and a finding naming the entries it breaks with and the tip.
  Entries behind it were tested on top of it: they are built again without it next step.
- The window doubles (up to MAX_WINDOW) after a step with no culprit, halves after one.

Why this and not bors' bisection: every commit the branch gains is one that was tested (its
prefix), a culprit is known from one failing run (no log k bisection runs), and a clean queue
costs one run per entry, fewer where a verdict is reused. The server decides every prefix from
the evidence (service/landing.py); the verifier only builds, runs and pushes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from taskgate.domain.commit_ids import Sha

# A queue item holds its entries (one item: its order is one write); a step lands at most
# MAX_WINDOW entries, each a task, an event and a statement in one commit (at most 100 writes).
MAX_QUEUE = 100
START_WINDOW = 4
MAX_WINDOW = 8
RECENT_STEPS = 20
# Who the landing merge commits name. Fixed (with the message and the date), so the same chain
# on the same tip is the same commits whichever verifier builds it.
LAND_NAME = "taskgate landing"
LAND_EMAIL = "landing@taskgate.invalid"

Verdict = Literal["passed", "reused", "failed", "conflict", "already"]
Outcome = Literal["landed", "culprit", "refused", "error", "nothing"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Entry(_Model):
    task_id: str
    commit_sha: str  # the submission accepted: the queue lands this one only
    attempt: int
    accepted_at: datetime  # the date of its landing merge commit
    accepted_by: str
    verified_tree: Sha | None = None  # the tree its passing run judged (merged onto a tip)
    verified_run: str | None = None
    verified_checks: str | None = None  # digest of the checks as they were when it was accepted
    hotfix: bool = False


class Tested(_Model):
    """One prefix of a step, as the server decided it: entry `task_id` on top of the ones ahead."""

    task_id: str
    verdict: Verdict
    head: Sha | None = None  # the prefix's commit (None: it did not merge)
    tree: Sha | None = None
    reasons: list[str] = Field(default_factory=list)


class Step(_Model):
    run_id: str
    tasks: list[str]
    credential_id: str
    started_at: datetime
    phase: Literal["testing", "pushing", "done"] = "testing"
    finished_at: datetime | None = None
    branch: str | None = None
    tip: Sha | None = None  # the tip the chain was built on
    tested: list[Tested] = Field(default_factory=list)
    push: Sha | None = None  # the commit the server asked the verifier to push
    outcome: Outcome | None = None
    landed: list[str] = Field(default_factory=list)
    culprit: str | None = None
    why: str | None = None


class Landed(_Model):
    """Where a task's work landed: its prefix's commit, now on `branch`."""

    branch: str
    commit: Sha
    tree: Sha | None = None
    from_tip: Sha  # the branch's tip the push moved from
    run_id: str | None = None  # the run that verified this exact commit (None: reused or already there)
    reused_run: str | None = None  # the task's own run, whose tree this commit has
    already: bool = False  # found on the branch already (a push whose answer was lost)
    at: datetime
    by: str


class Queue(_Model):
    project: str
    entries: list[Entry] = Field(default_factory=list, max_length=MAX_QUEUE)
    window: int = START_WINDOW
    live: Step | None = None
    recent: list[Step] = Field(default_factory=list)  # the last few steps, newest last
    errors_in_row: int = 0
    version: int = 0

    def position(self, task_id: str) -> int | None:
        """1-based place in the queue, or None."""
        return next((i + 1 for i, e in enumerate(self.entries) if e.task_id == task_id), None)

    def entry(self, task_id: str) -> Entry | None:
        return next((e for e in self.entries if e.task_id == task_id), None)

    def pushing(self) -> list[str]:
        """Tasks a push may be landing right now: not to be moved or taken out."""
        live = self.live
        return list(live.tasks) if live is not None and live.phase == "pushing" else []


def window(q: Queue) -> list[Entry]:
    """The entries the next step builds its chain of."""
    return q.entries[: max(1, min(q.window, MAX_WINDOW))]


def hotfix(q: Queue, task_id: str) -> Queue:
    """`task_id` moved to the head of the queue (behind a push in flight)."""
    busy = q.pushing()
    head = [e for e in q.entries if e.task_id in busy]
    moved = [e.model_copy(update={"hotfix": True}) for e in q.entries if e.task_id == task_id]
    rest = [e for e in q.entries if e.task_id != task_id and e.task_id not in busy]
    return q.model_copy(update={"entries": [*head, *moved, *rest]})


def without(q: Queue, task_ids: Sequence[str]) -> Queue:
    return q.model_copy(update={"entries": [e for e in q.entries if e.task_id not in set(task_ids)]})


def still_ahead(q: Queue, step: Step) -> int:
    """How many of the step's tasks still head the queue in the step's order: a human's hotfix or
    a task taken out meanwhile makes the prefixes after it mean something else."""
    n = 0
    for e, t in zip(q.entries, step.tasks, strict=False):
        if e.task_id != t:
            break
        n += 1
    return n


def decide(tested: Sequence[Tested]) -> tuple[int, Tested | None]:
    """How many prefixes land (the longest run of passing ones from the head, `already` ones
    included) and the culprit: the first prefix that failed or did not merge, if any."""
    n = 0
    for t in tested:
        if t.verdict not in ("passed", "reused", "already"):
            return n, t
        n += 1
    return n, None


def resized(q: Queue, culprit: bool) -> int:
    """Zuul's adaptive window: halve on a culprit, grow by doubling on a clean step."""
    return max(1, q.window // 2) if culprit else min(MAX_WINDOW, q.window * 2)


def commit_message(task_id: str, commit_sha: str) -> str:
    return f"Land {task_id}\n\nMerge {commit_sha}, accepted in taskgate, through its landing queue.\n"


def commit_date(accepted_at: datetime) -> str:
    """Git's internal date form: the same text whatever the verifier's timezone."""
    return f"{int(accepted_at.timestamp())} +0000"


def culprit_finding(task_id: str, c: Tested, breaks_with: Sequence[str], branch: str, tip: str) -> str:
    """What a culprit's executor reads: what it breaks with, on which tip, and what to do."""
    where = f"{branch} at {tip[:12]}"
    why = "; ".join(c.reasons)
    if c.verdict == "conflict":
        head = (
            f"does not merge cleanly after {', '.join(breaks_with)} onto {where}"
            if breaks_with
            else f"does not merge cleanly onto {where}"
        )
    elif breaks_with:
        head = f"passed alone but breaks landing on top of {', '.join(breaks_with)} onto {where}"
    else:
        head = f"passed alone but fails merged onto {where}"
    return (
        f"landing queue: {task_id} {head}" + (f" ({why})" if why else "") + "; no attempt was used. "
        f"Rebase your work onto {branch} once the others land, make it pass with them, and submit again"
    )


def state_of(q: Queue, task_id: str) -> str:
    """An entry's state for people: waiting, testing on top of <ids>, landing."""
    live = q.live
    if live is not None and task_id in live.tasks:
        ahead = live.tasks[: live.tasks.index(task_id)]
        if live.phase == "pushing":
            return "landing"
        return f"testing on top of {', '.join(ahead)}" if ahead else "testing"
    return "waiting"
