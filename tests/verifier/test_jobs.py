"""`taskgate verify --jobs N`: runs at once, each in its own checkout, home and temp dir, and
several verifier processes never verify one submission twice."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

from tests.mcp.live import Live
from tests.verifier.support import (
    KEEPS_DIGITS,
    PYTEST_CHECK,
    SLUGIFY,
    SLUGIFY_TESTS,
    TASKGATE,
    Gate,
    Repo,
    git,
)


def project(live: Live, tmp_path: Path, log: Path) -> Gate:
    # Each run notes where it runs and when it starts and ends, and waits as long as the
    # submission's `delay` file says.
    note = f'echo "$HOME $TMPDIR $PWD $(date +%s.%N) $(cat delay)" >> {log}'
    command = f"{note} && sleep $(cat delay) && {note} && {PYTEST_CHECK['command']}"
    repo = Repo.create(tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS, "delay": "0\n"})
    config = {"check_timeout_minutes": 2, "checks": {"unit": {**PYTEST_CHECK, "command": command}}}
    return Gate.create(live, repo, config)


def submit(gate: Gate, delays: list[float]) -> list[str]:
    # Each submission on its own branch off main: on main, a later one would be in the earlier
    # one's merge onto the tip, and the earlier one would run with the later one's delay.
    tasks = []
    for n, delay in enumerate(delays):
        task = gate.task([KEEPS_DIGITS])
        git(gate.repo.path, "checkout", "--quiet", "main")
        gate.repo.branch(f"work-{n}")
        gate.submit(task, gate.repo.commit({"delay": f"{delay}\n", "slug.py": SLUGIFY + f"\n# {n}\n"}))
        tasks.append(task)
    return tasks


def test_two_verifiers_with_two_jobs_each_verify_every_submission_once(live: Live, tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    gate = project(live, tmp_path, log)
    tasks = submit(gate, [1.5] * 6)
    env = gate.verify_env()
    procs = [
        subprocess.Popen(
            [TASKGATE, "verify", "--once", "--jobs", "2", "--project", gate.project],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    for task in tasks:
        runs = gate.detail(task)["runs"]
        assert len(runs) == 1, (task, runs)
        assert gate.detail(task)["task"]["status"] == "verified", task
    # Every line of progress names its task: readable with several runs at once.
    for out, _ in outs:
        for line in out.splitlines():
            assert line.startswith(tuple(f"{t}: " for t in tasks) + tuple(f"  {t} " for t in tasks)), line
    notes = [line.split() for line in log.read_text().splitlines()]
    starts = [n for n in notes if len(n) == 5][::2]
    assert len(notes) == 12
    homes, tmps, dirs = ({n[i] for n in notes} for i in range(3))
    assert len(homes) == len(tmps) == len(dirs) == 6  # one of each per run
    # Runs overlapped in time: some run started before another one ended.
    spans = []
    by_dir: dict[str, list[float]] = {}
    for n in notes:
        by_dir.setdefault(n[2], []).append(float(n[3]))
    spans = sorted((min(v), max(v)) for v in by_dir.values())
    assert any(b[0] < a[1] for a, b in itertools.pairwise(spans)), spans
    assert starts


def test_a_run_that_ends_does_not_stop_another_jobs_check(live: Live, tmp_path: Path) -> None:
    """A job kills every descendant of its own when its command ends: the other job's check,
    still sleeping, must live on and pass."""
    log = tmp_path / "runs.log"
    gate = project(live, tmp_path, log)
    slow, quick = submit(gate, [4, 0])
    done = gate.verify("--once", "--jobs", "2", "--project", gate.project, timeout=240)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert f"{quick}: passed -> verified" in done.stdout, done.stdout
    assert f"{slow}: passed -> verified" in done.stdout, done.stdout
    finished = [line for line in done.stdout.splitlines() if ": passed -> verified" in line]
    assert finished[0].startswith(f"{quick}:"), finished  # the quick one ended while the slow one ran


def test_jobs_must_be_a_sensible_number(live: Live, tmp_path: Path) -> None:
    gate = project(live, tmp_path, tmp_path / "log")
    for bad, said in (
        ("0", "--jobs takes 1 to 64, not 0"),
        ("two", "--jobs takes a whole number, not 'two'"),
    ):
        done = gate.verify("--once", "--jobs", bad)
        assert done.returncode == 2 and said in done.stderr, done.stderr
    done = gate.verify("--task", "x-1", "--jobs", "2")
    assert done.returncode == 1
    assert "--task verifies one task; it goes without --once, --project and --jobs" in done.stderr
