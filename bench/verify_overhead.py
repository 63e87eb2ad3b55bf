"""What `taskgate verify` costs beyond the checks it runs, on a small repository.

    python bench/verify_overhead.py [--runs 5] [--check-seconds 5]

A pytest project whose tests take about --check-seconds, one submitted task per run, and a real
`taskgate serve`. Each run is one `taskgate verify --task <id> --json`; its own timing splits the
wall time into checkout, checks, report reading (and ref matching) and reporting (the REST calls
that start and finish the run). The baseline, measured in the same session, is the same check
command run by hand in a plain clone. Prints one line per run, the baseline, and last
`overhead_share=<(verifier total - the checks' own time) / the checks' own time>` (median).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

BIN = Path(sys.executable).parent


def _check_python() -> str:
    """Run as root, the verifier runs checks as an unprivileged user: they need a Python that
    user can run (this one may live under root's 0700 home; the suite's helper finds one)."""
    if os.geteuid() != 0:
        return sys.executable
    sys.path.insert(0, str(ROOT))
    from tests.support.users import check_python

    return check_python()


CHECK = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {_check_python()} -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml"


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def make_repo(path: Path, seconds: float) -> str:
    path.mkdir(parents=True)
    per = seconds / 5
    tests = "\n".join(
        f"def test_{i}():\n    time.sleep({per})\n    assert slug('A B') == 'a-b'\n" for i in range(5)
    )
    (path / "slug.py").write_text("def slug(s):\n    return s.lower().replace(' ', '-')\n")
    (path / "test_slug.py").write_text(f"import time\n\nfrom slug import slug\n\n\n{tests}")
    (path / ".gitignore").write_text("reports/\n")
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "slugs")
    return git(path, "rev-parse", "HEAD")


def seed(data_dir: Path, repo: Path, sha: str, runs: int) -> tuple[str, list[str]]:
    """Project, keys, config and `runs` submitted tasks, written through the services."""
    from taskgate.domain.models import CredentialKind, CriterionInput, CriterionKind, VerifierKind
    from taskgate.domain.principals import acting, human
    from taskgate.service import claims, keys, projects, specs, tasks
    from taskgate.service.context import Context
    from taskgate.store.sqlite import SQLiteStore

    data_dir.mkdir(parents=True)
    store = SQLiteStore(str(data_dir / "taskgate.db"))
    ctx, me = Context(store), acting(human("bench"))
    projects.create(ctx, me, "bench", repo=str(repo))
    projects.set_verifier_config(
        ctx, me, "bench", {"checks": {"unit": {"command": CHECK, "report": {"path": "reports/junit.xml"}}}}
    )
    verifier = keys.create(ctx, me, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL)
    projects.set_verification(ctx, me, "bench", True)
    agent = acting(keys.authenticate(ctx, keys.create(ctx, me, kind=CredentialKind.AGENT, name="a").secret))
    spec = specs.create(
        ctx,
        me,
        "bench",
        title="slugs",
        criteria=[CriterionInput(text="all slug tests", kind=CriterionKind.TEST, verify_ref="test_slug")],
    )
    specs.approve(ctx, me, "bench", spec.id)
    ids = []
    for _ in range(runs):
        t = tasks.create(ctx, me, "bench", title="slug", spec_id=spec.id).task
        token = claims.claim(ctx, agent, "bench", task_id=t.id).token
        claims.submit(ctx, agent, t.id, token, commit_sha=sha, evidence="done")
        ids.append(t.id)
    store.close()
    return verifier.secret, ids


def serve(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [str(BIN / "taskgate"), "serve", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=1):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("taskgate serve did not start")


def direct_check(repo: Path, work: Path) -> float:
    """The baseline: the check command by hand, in a plain clone."""
    clone = work / f"clone-{time.monotonic_ns()}"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True)
    began = time.monotonic()
    subprocess.run(CHECK, shell=True, cwd=clone, check=True, capture_output=True)
    took = time.monotonic() - began
    shutil.rmtree(clone)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--check-seconds", type=float, default=5.0)
    args = ap.parse_args()
    from taskgate.local.serve import admin_token

    with tempfile.TemporaryDirectory(prefix="tg-bench-verify-") as tmp:
        work = Path(tmp)
        repo = work / "repo"
        sha = make_repo(repo, args.check_seconds)
        key, ids = seed(work / "data", repo, sha, args.runs)
        admin_token(work / "data")
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = serve(work / "data", port)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
        env |= {"TASKGATE_SERVER": f"http://127.0.0.1:{port}", "TASKGATE_VERIFIER_KEY": key}
        shares, direct = [], []
        try:
            for i, tid in enumerate(ids):
                direct.append(direct_check(repo, work))  # interleaved with the verifier's runs
                began = time.monotonic()
                done = subprocess.run(
                    [str(BIN / "taskgate"), "verify", "--task", tid, "--json"],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                process_s = time.monotonic() - began
                line = json.loads(done.stdout.splitlines()[-1])
                t = line["timings"]
                share = (t["total_s"] - t["checks_own_s"]) / t["checks_own_s"]
                shares.append(share)
                print(
                    f"run={i + 1} verdict={line['verdict']} total_s={t['total_s']:.3f} "
                    f"checkout_s={t['checkout_s']:.3f} checks_s={t['checks_s']:.3f} "
                    f"reports_s={t['reports_s']:.4f} reporting_s={t['reporting_s']:.3f} "
                    f"screen_s={t.get('screen_s', 0.0):.3f} "
                    f"checks_own_s={t['checks_own_s']:.3f} overhead={share:.3f} process_s={process_s:.3f}",
                    flush=True,
                )
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        print(f"baseline_direct_check_s={statistics.median(direct):.3f} runs={len(direct)}")
        print(f"overhead_share={statistics.median(shares):.3f}")


if __name__ == "__main__":
    main()
