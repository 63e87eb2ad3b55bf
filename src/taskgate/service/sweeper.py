"""The sweeper: cleanup, not enforcement. Expired leases are settled on every access anyway;
this returns lapsed tasks to the queue even when nobody touches them, and reconciles cascades
a crash could have left half-done."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from taskgate.domain.clock import iso
from taskgate.domain.models import Task
from taskgate.service import cascades, records
from taskgate.service.claims import settle_expiry
from taskgate.service.context import Context
from taskgate.store.port import Item
from taskgate.store.schema import LEASE_SHARDS, IndexName


@dataclass
class SweepReport:
    expired: list[str] = field(default_factory=list)
    cascaded: list[str] = field(default_factory=list)


def sweep(ctx: Context, *, reconcile: bool = True) -> SweepReport:
    report = SweepReport()
    now = iso(ctx.clock.now())
    for shard in range(LEASE_SHARDS):
        lapsed = list(_lapsed(ctx, records.lease_pk(shard), now))
        for item in lapsed:
            task = records.load(Task, item)
            after = settle_expiry(ctx, ctx.task(task.id))
            if after.status is not task.status:
                report.expired.append(task.id)
    if reconcile:
        for item in ctx.all_pages(lambda c: ctx.store.query("PROJECTS", limit=200, cursor=c)):
            report.cascaded += cascades.reconcile(ctx, item.sk)
    return report


def _lapsed(ctx: Context, pk: str, now: str) -> Iterator[Item]:
    return ctx.all_pages(lambda c: ctx.store.query_index(IndexName.LEASE, pk, sk_lt=now, limit=100, cursor=c))
