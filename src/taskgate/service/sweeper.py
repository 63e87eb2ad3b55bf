"""The sweeper: cleanup, not enforcement. Expired leases are settled on every access anyway;
this returns lapsed tasks to the queue even when nobody touches them, ends verification runs
nobody finished in time (as errors), and reconciles cascades a crash could have left half-done."""

from __future__ import annotations

from dataclasses import dataclass, field

from taskgate.service import cascades, verification
from taskgate.service.claims import settle_lapsed
from taskgate.service.context import Context


@dataclass
class SweepReport:
    expired: list[str] = field(default_factory=list)
    cascaded: list[str] = field(default_factory=list)
    abandoned_runs: list[str] = field(default_factory=list)


def sweep(ctx: Context, *, reconcile: bool = True) -> SweepReport:
    names = ctx.project_names()  # once a sweep: every part goes project by project
    report = SweepReport(
        expired=settle_lapsed(ctx, names), abandoned_runs=verification.close_abandoned(ctx, names)
    )
    if reconcile:
        for name in names:
            report.cascaded += cascades.reconcile(ctx, name)
    return report
