"""What it costs `taskgate serve` to read a local repository's base tip itself, and how soon a
commit on `main` shows as a stale card with no verifier running.

    python bench/stale_tip.py [--tasks 20] [--polls 300] [--src CHECKOUT] [--smoke]

A fresh `taskgate serve` holds a project whose repository is a local git repository, with
--tasks tasks verified on its main's tip (written through the services on the server's SQLite
file). One client asks what the board asks every 3 s (GET /api/projects/<p>/tasks) and what the
drawer and `taskgate task show` ask (GET /api/tasks/<id>), --polls times each, in interleaved
rounds on keep-alive connections of their own; one line each:
    probe=<name> p50_ms=<x> p95_ms=<x>
Then main gains a commit made with git, and the board's question is asked every 20 ms until a
card says stale (no verifier runs, no webhook is called):
    commit_to_stale_ms=<x>    (-1: not within --wait-s, as a server that never reads the tip)
and, in this process, what the two ways of looking at the tip cost (the checkout's own code):
    tip_read_ms git_p50=<x> stamp_p50=<x>

--src serves another checkout's code (its src/) for a before/after on the same clients.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchkit import smoke
from benchkit.serve import Served, start
from benchkit.stats import pct

PROJECT = "stale"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def make_repo(where: Path) -> tuple[Path, str]:
    repo = where / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "a.py").write_text("A = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    return repo, git(repo, "rev-parse", "HEAD")


CHECK, REPORT = "unit", "reports/junit.xml"
CONFIG = {
    "checks": {
        CHECK: {"command": f"pytest --junitxml={REPORT}", "report": {"path": REPORT, "format": "junit"}}
    }
}


def verified_tasks(db: Path, repo: Path, tip: str, n: int) -> list[str]:
    """The project and `n` tasks verified on main at `tip`, through the services (a verifier's
    runs as `taskgate verify` reports them), on the server's database while it serves."""
    from taskgate.domain.merging import MergedBase
    from taskgate.domain.models import CredentialKind, CriterionInput, CriterionKind, VerifierKind
    from taskgate.domain.principals import acting, human
    from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence, EvidenceSource, RunReport
    from taskgate.service import claims, keys, projects, tasks, verification
    from taskgate.service.context import Context
    from taskgate.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    ctx = Context(store)
    admin = acting(human("bench"))
    try:
        projects.create(ctx, admin, PROJECT, repo=str(repo))
        agent = acting(
            keys.authenticate(ctx, keys.create(ctx, admin, kind=CredentialKind.AGENT, name="exec").secret)
        )
        local = keys.create(
            ctx, admin, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL
        )
        verifier = acting(keys.authenticate(ctx, local.secret))
        projects.set_verifier_config(ctx, admin, PROJECT, CONFIG)
        projects.set_verification(ctx, admin, PROJECT, True)
        base = MergedBase(mode="merge", branch="main", tip=tip, tree="b0" * 20)
        criteria = [CriterionInput(text="works", kind=CriterionKind.TEST, verify_ref="tests.test_a")]
        ids = []
        for i in range(n):
            t = tasks.create(ctx, admin, PROJECT, title=f"task {i}", criteria=criteria).task
            claimed = claims.claim(ctx, agent, PROJECT, task_id=t.id)
            claims.submit(ctx, agent, t.id, claimed.token, commit_sha=tip, evidence="done")
            # A passing run as `taskgate verify` reports it: the check's exit, the criterion's
            # evidence read from its report, the base the commit was merged onto.
            started = verification.start(ctx, verifier, task_id=t.id)
            results = {
                c["id"]: CriterionResult(
                    result=Evidence.PASS,
                    detail="1 passed",
                    source=EvidenceSource(check=CHECK, report=REPORT, ref=c["verify_ref"]),
                )
                for c in started.work["criteria"]
            }
            checks = {CHECK: CheckResult(exit_code=0, duration_ms=10)}
            report = RunReport(checks=checks, results=results, base=base)
            verification.finish(ctx, verifier, t.id, started.run.id, report)
            ids.append(t.id)
        return ids
    finally:
        store.close()


class Rest:
    """GET requests on one keep-alive connection, each one's seconds kept."""

    def __init__(self, server: Served, path: str) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        self.path = path
        self.headers = {"authorization": f"Bearer {server.admin_token}"}
        self.latencies: list[float] = []

    def get(self) -> object:
        started = time.perf_counter()
        self.http.request("GET", self.path, headers=self.headers)
        response = self.http.getresponse()
        raw = response.read()
        self.latencies.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"GET {self.path}: HTTP {response.status} {raw[:300]!r}")
        return json.loads(raw)


def local_costs(repo: Path, calls: int) -> tuple[float, float]:
    """p50 seconds of a git read of main's tip and of a stamp of its ref files, in this process."""
    from taskgate.service import commits

    out = []
    for look in (lambda: commits.base_tip(str(repo), "main"), lambda: commits.tip_stamp(str(repo), "main")):
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            look()
            times.append(time.perf_counter() - started)
        out.append(pct(times, 0.5))
    return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=20, help="verified tasks on the board")
    parser.add_argument("--polls", type=int, default=300, help="calls per probe")
    parser.add_argument("--wait-s", type=float, default=10.0, help="how long to wait for the stale mark")
    parser.add_argument("--src", type=Path, help="serve the taskgate source in this checkout instead")
    args = smoke.parse(parser, tasks=3, polls=20, wait_s=3.0)

    where = Path(tempfile.mkdtemp(prefix="taskgate-stale-tip-"))
    server = start(where / "data", src=args.src)
    try:
        repo, tip0 = make_repo(where)
        ids = verified_tasks(server.db_path, repo, tip0, args.tasks)
        board = Rest(server, f"/api/projects/{PROJECT}/tasks?limit=200")
        drawer = Rest(server, f"/api/tasks/{ids[0]}")
        probes = {"board_poll": board, "task_detail": drawer}
        for p in probes.values():  # warm-up
            for _ in range(max(5, args.polls // 10)):
                p.get()
            p.latencies.clear()
        for _ in range(max(1, args.polls // 10)):
            for p in probes.values():
                for _ in range(10):
                    p.get()
        for name, p in probes.items():
            print(
                f"probe={name} p50_ms={pct(p.latencies, 0.5) * 1000:.2f} p95_ms={pct(p.latencies, 0.95) * 1000:.2f}"
            )

        (repo / "b.py").write_text("B = 2\n")
        git(repo, "add", "-A")
        git(repo, "commit", "--quiet", "-m", "main moves")
        started = time.perf_counter()
        seen = -1.0
        while time.perf_counter() - started < args.wait_s:
            page = board.get()
            if any(t["stale"] for t in page["items"]):  # type: ignore[index]
                seen = (time.perf_counter() - started) * 1000
                break
            time.sleep(0.02)
        print(f"commit_to_stale_ms={seen:.1f}")
        git_s, stamp_s = local_costs(repo, args.polls)
        print(f"tip_read_ms git_p50={git_s * 1000:.3f} stamp_p50={stamp_s * 1000:.3f}")
    finally:
        server.stop()
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
