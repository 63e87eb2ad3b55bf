"""Metrics per project, computed from the stored records (tasks, their history and runs).

Everything is counted over a window of whole UTC days ending now:

- throughput: tasks reaching `done`, per day (a task reopened and done again counts again);
- cycle time: from the first claim of a piece of work to its `done` (after a reopen, the clock
  starts again at the next claim);
- first-pass verification rate: among tasks whose first decisive verifier run (passed or
  failed; errors and superseded runs are not decisive) finished in the window, the share that
  passed;
- attempts per task: claims each task done in the window took, in all;
- verifier error rate: runs finished in the window that ended in error, of all that finished
  (superseded runs are neither);
- self-report mismatches: verifier findings in the window where the agent had reported a
  criterion as passing that the verifier found failing.

Only tasks touched in the window are read in full (a task's `updated_at` moves with every
change), so the cost follows recent activity, not the project's age.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from pydantic import BaseModel, ConfigDict, Field

from taskgate.domain.errors import invalid
from taskgate.domain.lifecycle import Action
from taskgate.domain.models import FindingSource, HistoryEvent, Status, Task, VerificationRun
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.service import records
from taskgate.service.context import Context
from taskgate.store.port import Item

DEFAULT_DAYS = 14
MAX_DAYS = 90
DECISIVE = ("passed", "failed")
FINISHED = ("passed", "failed", "error", "spec_error", "needs_human")  # a spec error is no verifier error


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DayCount(_Out):
    date: date
    done: int


class Durations(_Out):
    count: int
    mean_seconds: float | None
    median_seconds: float | None
    p90_seconds: float | None


class AttemptStats(_Out):
    tasks: int = Field(description="Tasks done in the window")
    mean: float | None
    max: int | None
    histogram: dict[str, int] = Field(description="Number of attempts -> tasks")


class FirstPass(_Out):
    tasks: int = Field(description="Tasks whose first decisive verifier run finished in the window")
    passed: int
    rate: float | None


class VerifierErrors(_Out):
    runs: int = Field(description="Runs finished in the window (passed, failed or error)")
    errors: int
    rate: float | None


class Mismatches(_Out):
    findings: int = Field(description="Verifier findings with at least one mismatched criterion")
    criteria: int = Field(description="Criteria the agent reported as pass and the verifier failed")
    tasks: list[str]


class ProjectMetrics(_Out):
    project: str
    days: int
    since: datetime
    until: datetime
    done: int
    throughput_per_day: list[DayCount]
    cycle_time: Durations
    first_pass_verification: FirstPass
    attempts_per_task: AttemptStats
    verifier_errors: VerifierErrors
    self_report_mismatches: Mismatches


@dataclass
class TaskRecords:
    task: Task
    history: list[HistoryEvent]
    runs: list[VerificationRun]


def _durations(seconds: list[float]) -> Durations:
    if not seconds:
        return Durations(count=0, mean_seconds=None, median_seconds=None, p90_seconds=None)
    ordered = sorted(seconds)

    def rank(p: float) -> float:  # nearest-rank percentile
        return ordered[max(0, math.ceil(p * len(ordered)) - 1)]

    return Durations(
        count=len(ordered),
        mean_seconds=round(sum(ordered) / len(ordered), 3),
        median_seconds=round(rank(0.5), 3),
        p90_seconds=round(rank(0.9), 3),
    )


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def compute(project: str, loaded: Iterable[TaskRecords], *, now: datetime, days: int) -> ProjectMetrics:
    """The metrics of one project from its loaded records (pure: no store, no clock)."""
    first_day = now.date() - timedelta(days=days - 1)
    since = datetime.combine(first_day, time.min, tzinfo=now.tzinfo)

    def inside(at: datetime | None) -> bool:
        return at is not None and since <= at <= now

    per_day = {first_day + timedelta(days=i): 0 for i in range(days)}
    cycle_seconds: list[float] = []
    attempts_of_done: list[int] = []
    first_pass_tasks = first_pass_passed = 0
    runs_finished = run_errors = 0
    mismatch_findings = mismatch_criteria = 0
    mismatch_tasks: set[str] = set()

    for rec in loaded:
        done_in_window = False
        cycle_start: datetime | None = None
        for ev in sorted(rec.history, key=lambda e: (e.seq, e.at)):
            if ev.action == Action.CLAIM.value and cycle_start is None:
                cycle_start = ev.at
            if ev.to_status is Status.DONE and ev.from_status is not Status.DONE:
                if inside(ev.at):
                    done_in_window = True
                    per_day[ev.at.date()] = per_day.get(ev.at.date(), 0) + 1
                    if cycle_start is not None:
                        cycle_seconds.append((ev.at - cycle_start).total_seconds())
                cycle_start = None
        if done_in_window:
            attempts_of_done.append(len(rec.task.attempts))

        runs = sorted(rec.runs, key=lambda r: (r.attempt, r.started_at))
        first = next((r for r in runs if r.status in DECISIVE), None)
        if first is not None and inside(first.finished_at):
            first_pass_tasks += 1
            first_pass_passed += first.status == "passed"
        for r in runs:
            if r.status in FINISHED and inside(r.finished_at):
                runs_finished += 1
                run_errors += r.status == "error"

        for f in rec.task.findings:
            if f.source is FindingSource.VERIFIER and f.self_report_mismatch and inside(f.at):
                mismatch_findings += 1
                mismatch_criteria += len(f.self_report_mismatch)
                mismatch_tasks.add(rec.task.id)

    histogram: dict[str, int] = {}
    for n in sorted(attempts_of_done):
        histogram[str(n)] = histogram.get(str(n), 0) + 1
    return ProjectMetrics(
        project=project,
        days=days,
        since=since,
        until=now,
        done=sum(per_day.values()),
        throughput_per_day=[DayCount(date=d, done=n) for d, n in sorted(per_day.items())],
        cycle_time=_durations(cycle_seconds),
        first_pass_verification=FirstPass(
            tasks=first_pass_tasks, passed=first_pass_passed, rate=_rate(first_pass_passed, first_pass_tasks)
        ),
        attempts_per_task=AttemptStats(
            tasks=len(attempts_of_done),
            mean=round(sum(attempts_of_done) / len(attempts_of_done), 3) if attempts_of_done else None,
            max=max(attempts_of_done) if attempts_of_done else None,
            histogram=histogram,
        ),
        verifier_errors=VerifierErrors(
            runs=runs_finished, errors=run_errors, rate=_rate(run_errors, runs_finished)
        ),
        self_report_mismatches=Mismatches(
            findings=mismatch_findings, criteria=mismatch_criteria, tasks=sorted(mismatch_tasks)
        ),
    )


def _partition(ctx: Context, pk: str) -> Iterator[Item]:
    return ctx.all_pages(lambda c: ctx.store.query(pk, limit=500, cursor=c))


def _load(ctx: Context, project: str, since: datetime) -> Iterable[TaskRecords]:
    pk = records.project_pk(project)
    for item in ctx.all_pages(
        lambda c: ctx.store.query(pk, sk_prefix=records.TASK_SK_PREFIX, limit=200, cursor=c)
    ):
        task = records.load(Task, item)
        if task.updated_at < since:
            continue  # nothing of it happened in the window
        history: list[HistoryEvent] = []
        runs: list[VerificationRun] = []
        for sub in _partition(ctx, records.task_pk(task.id)):
            if sub.sk.startswith("H#"):
                history.append(records.load(HistoryEvent, sub))
            elif sub.sk.startswith(records.RUN_PREFIX):
                runs.append(records.load(VerificationRun, sub))
        yield TaskRecords(task, history, runs)


def project_metrics(ctx: Context, who: Acting, project: str, *, days: int = DEFAULT_DAYS) -> ProjectMetrics:
    authorize(Op.READ, who, project=project)
    if not 1 <= days <= MAX_DAYS:
        raise invalid(f"days must be between 1 and {MAX_DAYS}")
    ctx.project(project)
    now = ctx.clock.now()
    since = datetime.combine(now.date() - timedelta(days=days - 1), time.min, tzinfo=now.tzinfo)
    return compute(project, _load(ctx, project, since), now=now, days=days)
