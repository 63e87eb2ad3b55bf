"""How long building one task's brief takes as the task's notes and its project's
decisions (every claim builds one) grow.

    python bench/brief.py [--notes 100,400,800] [--decisions 0,100,300] [--repeat 3] [--smoke]

For each count, a task on a fresh SQLite file gets that many notes of ~500 characters, written
straight to the store (the service caps a task at 100 notes; older databases, or a cap raised
later, may hold more), then `get_task_brief` runs `--repeat` times. Prints one line per count:

    notes=<n> brief_ms=<median> brief_chars=<size> notes_in_brief=<k>

and `ratio_800_to_100=<x>` (1.0 means the cost does not grow with the notes at all; 8.0
would be linear in them, 64 quadratic). Then, for each count of live decisions in the task's
project (logged through the service, ~350 characters each; the brief ranks them all and keeps
the top 5):

    decisions=<n> brief_ms=<median> decisions_in_brief=<k>

The first call of each count is a warm-up.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from benchkit import smoke
from taskgate.domain.clock import ManualClock
from taskgate.domain.models import CriterionInput, Note
from taskgate.domain.principals import Acting, acting, human
from taskgate.service import brief, decisions, projects, records, tasks
from taskgate.service.context import Context
from taskgate.store.port import MAX_OPS_PER_COMMIT, Put
from taskgate.store.sqlite import SQLiteStore

NOTE = "Tried the obvious fix; the flaky test is in the cache layer, not the handler. " * 6


def timed_brief(ctx: Context, who: Acting, task_id: str, repeat: int) -> tuple[float, dict[str, Any]]:
    """The median time of `repeat` builds of the task's brief (after one warm-up), and the brief."""
    brief.for_task(ctx, who, task_id)
    times = []
    out: dict[str, Any] = {}
    for _ in range(repeat):
        started = time.perf_counter()
        out = brief.for_task(ctx, who, task_id)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), out


def measure(count: int, repeat: int, tmp: Path) -> tuple[float, int, int]:
    store = SQLiteStore(tmp / f"bench-{count}.db")
    try:
        clock = ManualClock()
        ctx = Context(store, clock)
        alice = acting(human("alice"))
        projects.create(ctx, alice, "bench", repo="/tmp/repo")
        task = tasks.create(
            ctx, alice, "bench", title="Fix the cache", criteria=[CriterionInput(text="works")]
        ).task
        notes = [
            Note(
                id=f"n{i}",
                task_id=task.id,
                project="bench",
                author="agent:a",
                body=NOTE,
                at=clock.advance(seconds=1),
            )
            for i in range(count)
        ]
        items = [Put(records.note_item(n)) for n in notes]
        for start in range(0, len(items), MAX_OPS_PER_COMMIT):
            store.commit(items[start : start + MAX_OPS_PER_COMMIT])
        ms, out = timed_brief(ctx, alice, task.id, repeat)
        return ms, len(json.dumps(out, separators=(",", ":"))), len(out["notes"])
    finally:
        store.close()


DECISION = "We keep the cache in process and expire it on write, because the handler is hot. "


def measure_decisions(count: int, repeat: int, tmp: Path) -> tuple[float, int]:
    store = SQLiteStore(tmp / f"bench-decisions-{count}.db")
    try:
        ctx = Context(store, ManualClock())
        alice = acting(human("alice"))
        projects.create(ctx, alice, "bench", repo="/tmp/repo")
        task = tasks.create(
            ctx,
            alice,
            "bench",
            title="Fix the cache in the request handler",
            criteria=[CriterionInput(text="the handler serves from the cache")],
        ).task
        for i in range(count):
            decisions.log(ctx, alice, "bench", title=f"Decision {i} on the cache", body=DECISION * 4)
        ms, out = timed_brief(ctx, alice, task.id, repeat)
        return ms, len(out["decisions"])
    finally:
        store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", default="100,400,800")
    parser.add_argument("--decisions", default="0,100,300")
    parser.add_argument("--repeat", type=int, default=3)
    args = smoke.parse(parser, argv, notes="5,10", decisions="0,5", repeat=1)
    counts = [int(n) for n in args.notes.split(",")]
    medians: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in counts:
            ms, size, kept = measure(count, args.repeat, Path(tmp))
            medians[count] = ms
            print(f"notes={count} brief_ms={ms:.1f} brief_chars={size} notes_in_brief={kept}", flush=True)
        if len(counts) > 1:
            print(f"ratio_{counts[-1]}_to_{counts[0]}={medians[counts[-1]] / medians[counts[0]]:.2f}")
        for count in [int(n) for n in args.decisions.split(",")]:
            ms, kept = measure_decisions(count, args.repeat, Path(tmp))
            print(f"decisions={count} brief_ms={ms:.1f} decisions_in_brief={kept}", flush=True)


if __name__ == "__main__":
    main()
