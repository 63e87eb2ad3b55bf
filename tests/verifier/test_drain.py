"""`taskgate verify --drain` end to end: one real verifier process verifies what waits, takes a
submission that arrives while it waits for more, and exits once nothing came for --idle-exit."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.mcp.live import Live
from tests.verifier.support import (
    BROKEN,
    KEEPS_DIGITS,
    SLUGIFY,
    SLUGIFY_TESTS,
    TASKGATE,
    Gate,
    Repo,
    pytest_config,
)


def _gate(live: Live, tmp_path: Path) -> Gate:
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": BROKEN, "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"}
    )
    return Gate.create(live, repo, pytest_config())


def _until(what: str, check: Callable[[], bool], timeout: float = 90) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _drain(gate: Gate, idle: float) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": gate.live.base, "TASKGATE_VERIFIER_KEY": gate.verifier_key}
    return subprocess.Popen(
        [
            TASKGATE,
            "verify",
            "--project",
            gate.project,
            "--drain",
            "--idle-exit",
            f"{idle:g}",
            "--interval",
            "0.2",
            "--json",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_draining_verifier_takes_work_that_arrives_while_it_waits_then_exits(
    live: Live, tmp_path: Path
) -> None:
    gate = _gate(live, tmp_path)
    first = gate.task([KEEPS_DIGITS])
    second = gate.task([KEEPS_DIGITS])
    sha = gate.repo.commit({"slug.py": SLUGIFY}, "keep digits")
    gate.submit(first, sha)
    proc = _drain(gate, idle=6)
    try:
        _until("the first verdict", lambda: gate.detail(first)["task"]["status"] == "verified")
        assert proc.poll() is None  # waiting for more, not gone
        gate.submit(second, sha)
        _until("the second verdict", lambda: gate.detail(second)["task"]["status"] == "verified")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, (out, err)
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    # Both runs came from this one process: the second submission was not left for another.
    assert [(line["task_id"], line["verdict"]) for line in lines] == [(first, "passed"), (second, "passed")]


def test_a_draining_verifier_with_nothing_waiting_exits_after_its_idle_wait(
    live: Live, tmp_path: Path
) -> None:
    gate = _gate(live, tmp_path)
    began = time.monotonic()
    proc = _drain(gate, idle=1.5)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - began
    assert proc.returncode == 0, (out, err)
    assert out == ""  # no run
    assert took >= 1.5


def test_drain_goes_without_task_and_once_and_idle_exit_needs_drain(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    refused = gate.verify("--drain", "--task", tid)
    assert refused.returncode != 0
    assert "--drain verifies until the queue stays empty; it goes without --task and --once" in refused.stderr
    refused = gate.verify("--drain", "--once")
    assert refused.returncode != 0 and "goes without --task and --once" in refused.stderr
    refused = gate.verify("--idle-exit", "5", "--once")
    assert refused.returncode != 0 and "--idle-exit goes with --drain" in refused.stderr
    refused = gate.verify("--drain", "--idle-exit", "0")
    assert refused.returncode == 2 and "expected seconds between 0 and 3600" in refused.stderr
    assert gate.detail(tid)["task"]["status"] == "ready"  # nothing was started


def test_a_draining_verifier_reads_the_base_tip_and_verifies_stale_work_again(
    live: Live, tmp_path: Path
) -> None:
    """What the cloud's nightly task does with nothing submitted: its first look reads main's
    tip, which moved since the verdict, and the stale verified task is its work; then it exits."""
    gate = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}, "keep digits"))
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"]
    verified_on = gate.detail(tid)["task"]["verified_base"]["tip"]
    tip = gate.repo.commit({"README": "moved\n"}, "main moves")
    assert tip != verified_on
    proc = _drain(gate, idle=1.5)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (out, err)
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [(x["task_id"], x["verdict"], x["task_status"]) for x in lines] == [(tid, "passed", "verified")]
    task = gate.detail(tid)["task"]
    assert task["verified_base"]["tip"] == tip and task["stale"] is False
    assert [r["reverify"] for r in gate.detail(tid)["runs"]] == [False, True]
