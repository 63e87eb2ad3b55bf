"""`taskgate verify --once` end to end: real repositories, real pytest and node runs writing real
reports, a real server deciding. Each test is one situation of how a run works."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.live import Live
from tests.support.processes import alive as _alive
from tests.support.users import TEST_WORKER, check_python, ensure_user, taskgate_command
from tests.verifier.support import (
    BROKEN,
    KEEPS_DIGITS,
    PYTEST_CHECK,
    SLUGIFY,
    SLUGIFY_TESTS,
    TASKGATE,
    Gate,
    Repo,
    git,
    pytest_config,
)

GROUP = {"text": "every slugify test passes", "kind": "test", "verify_ref": "TestSlugify"}


def slug_gate(live: Live, tmp_path: Path, config: dict[str, Any] | None = None) -> Gate:
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": BROKEN, "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"}
    )
    return Gate.create(live, repo, config or pytest_config())


def only_run(gate: Gate, task_id: str) -> dict[str, Any]:
    runs = gate.detail(task_id)["runs"]
    assert len(runs) == 1, runs
    return dict(runs[0])


def test_a_passing_submission_is_verified(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS, GROUP])
    sha = gate.repo.commit({"slug.py": SLUGIFY}, "keep digits")
    gate.submit(tid, sha)
    [line] = gate.verify_json()
    assert (line["task_id"], line["verdict"], line["task_status"]) == (tid, "passed", "verified")
    assert line["commit_sha"] == sha and line["error"] is None
    assert set(line["timings"]) >= {"checkout_s", "checks_s", "reports_s", "reporting_s", "total_s"}
    run = only_run(gate, tid)
    assert run["status"] == "passed" and run["commit_sha"] == sha
    unit = run["checks"]["unit"]
    # exit 1 over the verifier's tripwires alone, which must fail: the check passed
    assert (unit["exit_code"], unit["report_failed"]) == (1, 0) and unit["tripwires_failed"] >= 1
    assert "3 passed" in unit["output_tail"]
    assert run["checks"]["unit"]["duration_ms"] > 0
    for cid, ref in (("AC-1.1", KEEPS_DIGITS["verify_ref"]), ("AC-1.2", "TestSlugify")):
        ev = run["evidence"][cid]
        assert ev["result"] == "pass", ev
        assert ev["source"] == {"check": "unit", "report": "reports/junit.xml", "ref": ref}
    assert gate.detail(tid)["task"]["status"] == "verified"
    # the checkout is gone and the source repository lists no leftover worktree
    assert git(gate.repo.path, "worktree", "list").count("\n") == 0


def test_a_failing_test_sends_the_task_back_with_findings_and_a_self_report_mismatch(
    live: Live, tmp_path: Path
) -> None:
    gate = slug_gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS, {"text": "lowercased", "kind": "test", "verify_ref": "test_lowercases"}])
    sha = git(gate.repo.path, "rev-parse", "HEAD")  # the broken slugify: digits are dropped
    gate.submit(tid, sha, {"AC-1.1": "pass", "AC-1.2": "pass"})
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready")
    detail = gate.detail(tid)
    task = detail["task"]
    assert task["attempts_used"] == 1
    attempt = task["attempts"][0]
    assert (attempt["ending"], attempt["used"]) == ("verification_failed", True)
    [finding] = task["findings"]
    assert finding["source"] == "verifier" and finding["self_report_mismatch"] == ["AC-1.1"]
    assert finding["details"][0].startswith("AC-1.1 fail") and finding["details"][-1] == "check unit exited 1"
    assert not any(d.startswith("AC-1.2") for d in finding["details"])
    [check] = finding["checks"]
    assert check["name"] == "unit" and "route-66" in check["output_end"]
    brief = gate.brief_after_claim(tid)
    [previous] = brief["findings"]
    assert previous["self_report_mismatch"] == ["AC-1.1"]
    assert [c["id"] for c in previous["criteria"]] == ["AC-1.1"]
    assert previous["checks"][0]["check"] == "unit" and "route-66" in previous["checks"][0]["output_end"]


def test_a_failing_check_fails_the_run_even_when_every_criterion_passes(live: Live, tmp_path: Path) -> None:
    config = pytest_config()
    config["checks"]["lint"] = {"command": "echo 'slug.py:1: unused import' && exit 2"}
    gate = slug_gate(live, tmp_path, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready")
    run = only_run(gate, tid)
    assert run["checks"]["lint"]["exit_code"] == 2 and run["evidence"]["AC-1.1"]["result"] == "pass"
    assert "unused import" in gate.detail(tid)["task"]["findings"][0]["checks"][0]["output_end"]


def test_a_check_that_never_ends_is_stopped_and_the_run_is_an_error(live: Live, tmp_path: Path) -> None:
    config = pytest_config()
    pidfile = tmp_path / "hang.pid"
    config["checks"]["hang"] = {"command": f"sleep 600 & echo $! > {pidfile}; wait", "timeout_minutes": 0.05}
    gate = slug_gate(live, tmp_path, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    began = time.monotonic()
    [line] = gate.verify_json()
    assert time.monotonic() - began < 30
    assert (line["verdict"], line["task_status"]) == ("error", "needs_verification")
    assert "check hang timed out after 3 s" in line["error"]
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 0 and task["verifier_errors_in_row"] == 1
    assert not _alive(int(pidfile.read_text()))


def test_a_check_that_exits_0_without_its_report_is_an_error(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(
        live, tmp_path, {"checks": {"unit": {**PYTEST_CHECK, "report": {"path": "out/none.xml"}}}}
    )
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("error", "needs_verification")
    # The check exits 1 over the tripwires in its tree: without its report, nothing tells why.
    assert "check unit exited 1 and wrote no report at out/none.xml" in line["summary"]
    assert gate.detail(tid)["task"]["attempts_used"] == 0


def test_test_criteria_with_no_configured_report_are_an_error(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path, {"checks": {"unit": {"command": PYTEST_CHECK["command"]}}})
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    [line] = gate.verify_json()
    assert line["verdict"] == "error" and "need a check with a report" in line["summary"]


def test_an_all_skipped_group_and_an_ambiguous_ref_never_pass(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    tid = gate.task(
        [
            {"text": "unicode handled", "kind": "test", "verify_ref": "TestUnicode"},
            {"text": "empty input", "kind": "test", "verify_ref": "test_empty"},
        ]
    )
    sha = gate.repo.commit(
        {
            "slug.py": SLUGIFY,
            "test_unicode.py": """\
                import pytest


                class TestUnicode:
                    @pytest.mark.skip(reason="later")
                    def test_accents(self):
                        pass

                    @pytest.mark.skip(reason="later")
                    def test_emoji(self):
                        pass
                """,
            "test_more.py": "def test_empty():\n    assert True\n",
        }
    )
    gate.submit(tid, sha)
    [line] = gate.verify_json()
    assert line["verdict"] == "failed"
    ev = only_run(gate, tid)["evidence"]
    assert ev["AC-1.1"]["result"] == "skipped", ev["AC-1.1"]
    assert ev["AC-1.2"]["result"] == "ambiguous", ev["AC-1.2"]
    assert "test_more" in ev["AC-1.2"]["detail"] and "test_slug" in ev["AC-1.2"]["detail"]


def test_a_nested_group_ref_through_node_test_suites(live: Live, tmp_path: Path) -> None:
    repo = Repo.create(tmp_path / "repo", {"package.json": '{"name": "slug", "private": true}\n'})
    config = {
        "checks": {
            "unit": {
                "command": "mkdir -p reports && node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml",
                "report": {"path": "reports/junit.xml", "format": "junit"},
            }
        }
    }
    gate = Gate.create(live, repo, config)
    tid = gate.task(
        [
            {"text": "digits", "kind": "test", "verify_ref": "slugify > digits > keeps digits"},
            {"text": "the digits group", "kind": "test", "verify_ref": "digits"},
            {"text": "outer groups optional", "kind": "test", "verify_ref": "digits > keeps digits"},
        ]
    )
    sha = repo.commit(
        {
            "slug.test.js": """\
                const { describe, it } = require('node:test');
                const assert = require('node:assert');
                const slugify = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');
                describe('slugify', () => {
                  describe('digits', () => {
                    it('keeps digits', () => assert.strictEqual(slugify('Route 66'), 'route-66'));
                  });
                  it('lowercases', () => assert.strictEqual(slugify('A'), 'a'));
                });
                """
        }
    )
    gate.submit(tid, sha)
    [line] = gate.verify_json()
    assert line["verdict"] == "passed", line
    ev = only_run(gate, tid)["evidence"]
    assert {cid: e["result"] for cid, e in ev.items()} == {
        "AC-1.1": "pass",
        "AC-1.2": "pass",
        "AC-1.3": "pass",
    }


def test_the_executors_dirty_working_tree_is_ignored(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    sha = git(gate.repo.path, "rev-parse", "HEAD")  # committed: the broken slugify
    gate.repo.write({"slug.py": SLUGIFY})  # fixed only in the working tree, never committed
    gate.submit(tid, sha)
    [line] = gate.verify_json()
    assert line["verdict"] == "failed"
    assert (gate.repo.path / "slug.py").read_text() == SLUGIFY  # and the working tree is untouched


def test_three_errors_in_a_row_need_a_human_and_reverify_resumes(live: Live, tmp_path: Path) -> None:
    broken = {"checks": {"unit": {**PYTEST_CHECK, "report": {"path": "nowhere.xml"}}}}
    gate = slug_gate(live, tmp_path, broken)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    statuses = [gate.verify_json()[0]["task_status"] for _ in range(3)]
    assert statuses == ["needs_verification", "needs_verification", "needs_human"]
    assert gate.verify_json() == []  # nothing waits any more
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 0 and task["attempts"][0]["ended_at"] is None
    gate.configure(pytest_config())  # the human fixes the verifier, then asks for another run
    gate.live.ok("POST", f"/api/tasks/{tid}/resolve", {"resolution": "reverify"})
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("passed", "verified")
    assert [r["status"] for r in sorted(gate.detail(tid)["runs"], key=lambda r: r["started_at"])] == [
        "error",
        "error",
        "error",
        "passed",
    ]


def test_a_run_is_superseded_when_the_human_accepts_meanwhile(live: Live, tmp_path: Path) -> None:
    config = pytest_config()
    marker = tmp_path / "started"
    config["checks"]["slow"] = {"command": f"touch {marker}; sleep 5"}
    gate = slug_gate(live, tmp_path, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    proc = _spawn_verify(gate)
    _wait_for(marker.exists)
    gate.live.ok("PUT", f"/api/projects/{gate.project}/verification", {"on": False})
    assert gate.live.ok("POST", f"/api/tasks/{tid}/accept")["status"] == "done"
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "superseded" in out
    assert only_run(gate, tid)["status"] == "superseded"
    task = gate.detail(tid)["task"]
    assert task["status"] == "done" and task["attempts"][0]["ending"] == "accepted"


@pytest.mark.parametrize(
    "sigint", ["SIG_DFL", "SIG_IGN"], ids=["from-a-terminal", "started-with-sigint-ignored"]
)
def test_ctrl_c_ends_the_current_run_as_an_error_without_a_hang(
    live: Live, tmp_path: Path, sigint: str
) -> None:
    """SIG_IGN: `taskgate verify &` from a script, or under nohup, inherits SIGINT ignored;
    `kill -INT` (or Ctrl-C after `fg`) must still stop it."""
    config = pytest_config()
    marker, pidfile = tmp_path / "started", tmp_path / "sleep.pid"
    config["checks"]["slow"] = {"command": f"sleep 600 & echo $! > {pidfile}; touch {marker}; wait"}
    gate = slug_gate(live, tmp_path, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    proc = _spawn_verify(gate, sigint)
    _wait_for(marker.exists)
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # faulthandler prints where every thread is stuck
        out, err = proc.communicate()
        raise AssertionError(f"taskgate verify still running 30 s after Ctrl-C:\n{out}\n{err}") from None
    assert proc.returncode == 130, out
    [checkout] = [
        line.split(" at ")[1].split(" in ")[0] for line in out.splitlines() if " checkout of " in line
    ]
    assert not Path(checkout).exists()
    run = only_run(gate, tid)
    assert run["status"] == "error" and "interrupted" in run["summary"]
    task = gate.detail(tid)["task"]
    assert (task["status"], task["attempts_used"], task["verifier_errors_in_row"]) == (
        "needs_verification",
        0,
        1,
    )
    assert not _alive(int(pidfile.read_text()))


def test_the_terminal_output_says_which_task_which_check_and_the_verdict(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, git(gate.repo.path, "rev-parse", "HEAD"))
    done = gate.verify("--task", tid)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # One step a line, each naming its task, a failing test's multi-line message included.
    assert all(line.startswith((f"{tid}:", f"  {tid} ")) for line in lines), lines
    assert lines[0].startswith(f"{tid}: verifying ")
    assert any(f"{tid} check unit: exit 1 in " in line for line in lines)
    assert any(f"{tid} AC-1.1 fail" in line for line in lines)
    assert lines[-2].startswith(f"{tid}: failed -> ready (1 check failed: unit; 1 criterion without")
    assert "checkout " in lines[-2] and "checks " in lines[-2]
    again = gate.verify("--task", tid)  # no longer waiting: refused, nothing run
    assert again.returncode == 1 and "not started (E_WRONG_STATE" in again.stdout


def test_verify_needs_a_key_and_a_reachable_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    no_key = subprocess.run(
        [TASKGATE, "verify", "--once"], env=env, capture_output=True, text=True, timeout=30
    )
    assert no_key.returncode != 0 and "TASKGATE_VERIFIER_KEY" in no_key.stderr
    env |= {"TASKGATE_VERIFIER_KEY": "tgv_000000000000_" + "x" * 32, "TASKGATE_SERVER": "http://127.0.0.1:9"}
    down = subprocess.run([TASKGATE, "verify", "--once"], env=env, capture_output=True, text=True, timeout=30)
    assert down.returncode == 2 and "E_UNREACHABLE" in down.stderr


# -- helpers ------------------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs the suite to run as root")
def test_checks_never_run_as_root_and_only_root_switches_users() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_VERIFIER_KEY": "tgv_000000000000_" + "x" * 32, "TASKGATE_SERVER": "http://127.0.0.1:9"}

    def verify(exe: str, *flags: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [exe, "verify", "--once", *flags], env=env, capture_output=True, text=True, timeout=30, **kw
        )

    as_root = verify(TASKGATE, "--check-user", "root")
    assert as_root.returncode != 0 and "checks never run as root" in as_root.stderr
    same = verify(TASKGATE, "--check-user", "nobody", "--worker-user", "nobody")
    assert same.returncode != 0 and "must be neither root nor the check user nobody" in same.stderr
    user = ensure_user(TEST_WORKER)
    plain = verify(
        taskgate_command(check_python()),
        "--check-user",
        "nobody",
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
        cwd="/",
    )
    assert plain.returncode != 0 and "needs the verifier to start as root" in plain.stderr, plain.stderr


def _wait_for(cond: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


# Starts `taskgate verify` (argv[1:]) in this same process with SIGINT set to argv[0] (SIG_DFL or
# SIG_IGN), whatever the test process itself inherited: a suite started in the background (`&`
# from a script, nohup) has SIGINT ignored, and every child would inherit that.
_WITH_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, getattr(signal, sys.argv[1])); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def _spawn_verify(gate: Gate, sigint: str = "SIG_DFL") -> subprocess.Popen[str]:
    """`taskgate verify --once` on the gate's project, started with SIGINT's disposition
    `sigint`: SIG_DFL as from a terminal, SIG_IGN as a job a script started with `&`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": gate.live.base, "TASKGATE_VERIFIER_KEY": gate.verifier_key}
    env["PYTHONFAULTHANDLER"] = "1"
    return subprocess.Popen(
        [sys.executable, "-c", _WITH_SIGINT, sigint, TASKGATE, "verify", "--once", "--project", gate.project],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
