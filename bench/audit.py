"""What an audit (`taskgate audit verify`, GET /api/projects/<p>/audit) costs per task, on SQLite.

    python bench/audit.py [--tasks 500] [--rounds 3] [--smoke]

Builds a project of N and of 4N tasks, each taken the whole way (created, claimed, heartbeat,
submitted, accepted: five chained events and a signed acceptance), then runs the audit over each
(median of the rounds) and prints:
    audit_ms_per_task_<n>   the audit's time over the project, per task
    linear_ratio            per-task cost at 4N over per-task cost at N (1.0: linear)
    lifecycle_ms_per_task   building one such task through the services, the same run's baseline
    audit_vs_lifecycle      audit per task over building it
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from benchkit import smoke
from taskgate.domain.clock import ManualClock
from taskgate.domain.models import CredentialKind, CriterionInput
from taskgate.domain.principals import acting, human
from taskgate.service import audit, claims, keys, projects, review, tasks
from taskgate.service.attestations import Attestor
from taskgate.service.context import Context
from taskgate.signing.local import LocalSigner, ensure_key
from taskgate.store.sqlite import SQLiteStore


def build(root: Path, n: int) -> tuple[Context, float]:
    """A project of n finished tasks; returns its context and the build's seconds per task."""
    store = SQLiteStore(root / f"audit-{n}.db")
    ensure_key(root / f"key-{n}.pem")
    ctx = Context(store, ManualClock())
    ctx.attestor = Attestor(LocalSigner(root / f"key-{n}.pem"))
    admin = acting(human("bench"))
    projects.create(ctx, admin, "bench")
    agent = acting(
        keys.authenticate(ctx, keys.create(ctx, admin, kind=CredentialKind.AGENT, name="exec").secret)
    )
    start = time.perf_counter()
    for i in range(n):
        t = tasks.create(ctx, admin, "bench", title=f"t{i}", criteria=[CriterionInput(text="works")]).task
        c = claims.claim(ctx, agent, "bench", task_id=t.id)
        claims.heartbeat(ctx, agent, t.id, c.token)
        claims.submit(ctx, agent, t.id, c.token, commit_sha="ab" * 20, evidence="done")
        review.accept(ctx, admin, t.id)
    return ctx, (time.perf_counter() - start) / n


def timed_audit(ctx: Context, rounds: int) -> float:
    admin = acting(human("bench"))
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        done = audit.verify_project(ctx, admin, "bench")
        times.append(time.perf_counter() - start)
        assert done.ok and done.statements > 0, done
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = smoke.parse(parser, tasks=5, rounds=1)
    per_task: dict[int, float] = {}
    builds: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (args.tasks, 4 * args.tasks):
            ctx, build_s = build(Path(tmp), n)
            builds.append(build_s)
            per_task[n] = timed_audit(ctx, args.rounds) / n
            ctx.store.close()
            print(f"audit_ms_per_task_{n}={per_task[n] * 1000:.3f}", flush=True)
    small, large = per_task[args.tasks], per_task[4 * args.tasks]
    lifecycle = statistics.median(builds)
    print(f"linear_ratio={large / small:.2f}")
    print(f"lifecycle_ms_per_task={lifecycle * 1000:.3f}")
    print(f"audit_vs_lifecycle={large / lifecycle:.2f}")


if __name__ == "__main__":
    main()
