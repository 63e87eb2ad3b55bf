"""A batch of verified tasks verified together before it is accepted, as bors does.

A human asks for a batch (tasks in order). The verifier merges the tasks' commits in that order
onto the base branch's tip and runs the checks once. Passing, every task is accepted. Failing,
the batch is bisected: the smallest failing prefix is found, the last task of it is a culprit
(it breaks with the tasks before it), it is dropped, and the rest is tried again. A conflict
merging a task makes that task a culprit at once. Each step is one run; this module holds the
plan and the rule that decides a step, the server applies them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from taskgate.domain.commit_ids import Sha
from taskgate.domain.merging import MergeMode
from taskgate.domain.models import Criterion, CriterionKind
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence

# Each task of a batch is one marker and one guard in the commit that records the batch, and
# one run record per step: a commit holds at most 100 writes.
MAX_TOGETHER = 32
# A batch whose runs end as errors this many times in a row stops: its tasks stay verified.
ERRORS_TO_STOP = 3
# A failing check's or criterion's reasons kept per task, and named in a culprit's finding.
REASONS_SHOWN = 3

BatchStatus = Literal["queued", "running", "done", "stopped"]
StepVerdict = Literal["passed", "failed", "conflict", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Requester(_Model):
    """Who asked for the batch, and how: the one who accepts its tasks when they pass."""

    actor: str
    credential_id: str
    via: str
    on_behalf_of: str | None = None


class Entry(_Model):
    task_id: str
    commit_sha: str  # the submission verified alone: the batch accepts this one only
    attempt: int


class Culprit(_Model):
    task_id: str
    breaks_with: list[str]  # the tasks merged before it in the smallest failing prefix
    kind: Literal["failed", "conflict"]
    reasons: list[str] = Field(default_factory=list)
    tip: Sha
    run_id: str


class Step(_Model):
    """One run of the batch: `tasks` (a prefix of what remained) merged in order onto `tip`."""

    n: int
    run_id: str
    tasks: list[str]
    credential_id: str
    started_at: datetime
    finished_at: datetime | None = None
    verdict: StepVerdict | None = None
    tip: Sha | None = None
    tree: Sha | None = None
    reasons: dict[str, list[str]] = Field(default_factory=dict)  # task (or "checks") -> why not passed
    conflict_task: str | None = None
    conflict_paths: list[str] = Field(default_factory=list)
    error: str | None = None


class Batch(_Model):
    id: str
    project: str
    entries: list[Entry] = Field(min_length=1, max_length=MAX_TOGETHER)
    requested_by: Requester
    requested_at: datetime
    branch: str | None = None
    requested_tip: Sha | None = None  # the base tip as known then
    mode: MergeMode = "merge"
    status: BatchStatus = "queued"
    # The bisection: tasks still in play, in order; the longest prefix known to pass (`good`)
    # and the shortest known to fail (`bad`, None: the whole of `remaining` was not tried yet).
    remaining: list[str] = Field(default_factory=list)
    good: int = 0
    bad: int | None = None
    tip: Sha | None = None  # every step merges onto this one tip
    tree: Sha | None = None  # the passing merge's tree
    steps: list[Step] = Field(default_factory=list)
    culprits: list[Culprit] = Field(default_factory=list)
    accepted: list[str] = Field(default_factory=list)
    # Tasks the end of the batch left alone, and why (moved on meanwhile, or a stop)
    skipped: dict[str, str] = Field(default_factory=dict)
    errors_in_row: int = 0
    version: int = 0

    def entry(self, task_id: str) -> Entry | None:
        return next((e for e in self.entries if e.task_id == task_id), None)

    def live(self) -> Step | None:
        return self.steps[-1] if self.steps and self.steps[-1].verdict is None else None


def next_prefix(b: Batch) -> int | None:
    """How many of `remaining` the next step merges; None when the batch is decided."""
    if not b.remaining or b.good >= len(b.remaining):
        return None
    if b.bad is None:
        return len(b.remaining)
    return (b.good + b.bad) // 2


def after_step(b: Batch, step: Step) -> Batch:
    """The plan once `step` is decided: which prefix is known good or bad, the culprit found,
    or (an error) the same plan again."""
    k = len(step.tasks)
    if step.verdict == "error":
        return b.model_copy(update={"errors_in_row": b.errors_in_row + 1})
    upd: dict[str, object] = {"errors_in_row": 0}
    assert step.tip is not None
    if step.verdict == "conflict":
        assert step.conflict_task is not None
        at = b.remaining.index(step.conflict_task)
        culprit = Culprit(
            task_id=step.conflict_task,
            breaks_with=b.remaining[:at],
            kind="conflict",
            reasons=[f"conflict: {p}" for p in step.conflict_paths[:REASONS_SHOWN]],
            tip=step.tip,
            run_id=step.run_id,
        )
        # Its predecessors merged, but no check ran on them: nothing is known to pass.
        upd |= {
            "remaining": [t for t in b.remaining if t != step.conflict_task],
            "culprits": [*b.culprits, culprit],
            "good": min(b.good, at),
            "bad": None,
        }
        return b.model_copy(update=upd)
    if step.verdict == "passed":
        good, bad = max(b.good, k), b.bad
    else:
        good, bad = b.good, k if b.bad is None else min(b.bad, k)
    if bad is not None and bad - good == 1:
        # The smallest failing prefix: its last task breaks it, with the ones before it.
        last = b.remaining[bad - 1]
        failing = next((s for s in reversed(b.steps) if s.verdict == "failed" and len(s.tasks) == bad), step)
        reasons = failing.reasons.get(last, []) + failing.reasons.get("checks", [])
        culprit = Culprit(
            task_id=last,
            breaks_with=b.remaining[: bad - 1],
            kind="failed",
            reasons=reasons[:REASONS_SHOWN],
            tip=step.tip,
            run_id=failing.run_id,
        )
        # The prefix before it still passes: the same tasks on the same tip.
        upd |= {"remaining": [t for t in b.remaining if t != last], "culprits": [*b.culprits, culprit]}
        bad = None
    upd |= {"good": good, "bad": bad}
    return b.model_copy(update=upd)


def judged(criteria: Sequence[Criterion]) -> list[Criterion]:
    """The criteria a batch run judges: its checks' tests and commands. A review criterion was
    judged on the task's own diff when it was verified alone, and merging changes no diff."""
    return [c for c in criteria if c.kind is not CriterionKind.REVIEW]


def decide_step(
    checks: Mapping[str, CheckResult],
    results: Mapping[str, Mapping[str, CriterionResult]],
    criteria: Mapping[str, Sequence[Criterion]],
) -> dict[str, list[str]]:
    """Why the step did not pass, by task (and "checks" for the checks): empty when it passed.
    Passing needs every check to exit 0 with no failed test in its report and every judged
    criterion of every task with positive evidence; a criterion with no evidence is not passed."""
    out: dict[str, list[str]] = {}
    bad_checks = []
    for name, ran in sorted(checks.items()):
        if ran.timed_out:
            bad_checks.append(f"check {name} timed out")
        elif ran.exit_code != 0:
            bad_checks.append(f"check {name} exited {ran.exit_code}")
        elif ran.report_failed:
            bad_checks.append(f"check {name}: {ran.report_failed} failed tests in its report")
        elif ran.report_problem is not None:
            bad_checks.append(f"check {name}: its report is not the check's own ({ran.report_problem})")
    if not checks:
        bad_checks.append("no check ran")
    if bad_checks:
        out["checks"] = bad_checks
    for task_id, held in criteria.items():
        got = results.get(task_id, {})
        why = []
        for c in judged(held):
            r = got.get(c.id)
            if r is None:
                why.append(f"{c.id}: no evidence")
            elif r.result is not Evidence.PASS:
                why.append(
                    f"{c.id} {r.result.value}: {r.detail[:160]}" if r.detail else f"{c.id} {r.result.value}"
                )
        if why:
            out[task_id] = why[:REASONS_SHOWN]  # kept on the batch: bounded
    return out


def culprit_finding(c: Culprit, batch_id: str, branch: str) -> str:
    """What a culprit's executor reads: which tasks it breaks with, on which tip, and what to do."""
    where = f"{branch} at {c.tip[:12]}"
    why = "; ".join(c.reasons)
    if c.kind == "conflict":
        head = (
            f"does not merge cleanly after {', '.join(c.breaks_with)} onto {where}"
            if c.breaks_with
            else f"does not merge cleanly onto {where}"
        )
    elif c.breaks_with:
        head = (
            f"passes alone but breaks verified together with {', '.join(c.breaks_with)} merged onto {where}"
        )
    else:
        head = f"passed alone but fails merged onto {where}"
    return (
        f"batch {batch_id}: {c.task_id} {head}" + (f" ({why})" if why else "") + "; no attempt was used. "
        f"Once the others land on {branch}, rebase your work onto it, make it pass with them, and submit again"
    )


def together_said(batch_id: str, branch: str, tip: str) -> str:
    """What an acceptance of a batch's task says (signed with it)."""
    return f"verified together onto {branch} at {tip} (batch {batch_id})"
