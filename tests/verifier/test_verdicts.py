"""Verdicts that tell the truth, end to end: a real `taskgate serve`, real pytest and
`node --test` runs writing real reports, `taskgate verify --once` as a real subprocess.

A spec error is not the executor's failure; a failed run's findings keep each failing test's
own message and the end of each failing check's output; evidence holds no terminal escapes; an
unpushed commit is the executor's to fix; flags belong to their attempt; a task waiting for a
human says why, and so does a verifier with nothing to do."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run
from tests.verifier.support import SLUGIFY, SLUGIFY_TESTS, Gate, Repo, git, pytest_config

BROKEN = SLUGIFY.replace("a-z0-9", "a-z")  # drops digits: test_keeps_digits fails
KEEPS_DIGITS = {
    "text": "digits are kept",
    "kind": "test",
    "verify_ref": "test_slug.TestSlugify.test_keeps_digits",
}
BASIC = {"text": "the basics work", "kind": "test", "verify_ref": "test_basic"}
ESCAPES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

CHUNK = """\
def chunked(items, n):
    out = []
    for i in range(0, len(items) - n, n):  # drops the last chunk
        out.append(list(items[i : i + n]))
    return out
"""
CHUNK_TESTS = """\
from chunk import chunked


class TestChunked:
    def test_even(self):
        assert chunked(list(range(6)), 2) == [[0, 1], [2, 3], [4, 5]]

    def test_odd(self):
        assert chunked(list("ABCDEFG"), 3) == [["A", "B", "C"], ["D", "E", "F"], ["G"]]

    def test_empty(self):
        assert chunked([], 3) == []
"""


def slug_gate(
    live: Live, tmp_path: Path, config: dict[str, Any] | None = None, files: dict[str, str] | None = None
) -> Gate:
    repo = Repo.create(
        tmp_path / "repo",
        {"slug.py": BROKEN, "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n", **(files or {})},
    )
    return Gate.create(live, repo, config or pytest_config())


def no_control_characters(value: Any) -> bool:
    """No terminal escape or control character (but newline and tab) anywhere in `value`."""
    return not ESCAPES.search(json.dumps(value, ensure_ascii=False))


# -- 1. an ambiguous ref is a spec error ---------------------------------------------------------


def test_a_run_failing_only_on_an_ambiguous_ref_goes_to_a_human_at_once_using_no_attempt(
    live: Live, tmp_path: Path
) -> None:
    both = "def test_basic():\n    assert True\n"
    gate = slug_gate(live, tmp_path, files={"test_a.py": both})
    tid = gate.task([KEEPS_DIGITS, BASIC])
    sha = gate.repo.commit({"slug.py": SLUGIFY, "test_b.py": both}, "fix, and a second test_basic")
    gate.submit(tid, sha, {"AC-1.1": "pass", "AC-1.2": "pass"})
    done = gate.verify("--task", tid)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    reason = "spec error: AC-1.2 `test_basic` matches 2 tests: test test_a.test_basic, test test_b.test_basic"
    assert lines[-2].startswith(f"{tid}: spec_error -> needs_human ({reason}")
    assert lines[-1] == f"{tid}: the task waits for a human: {reason}"
    assert not any("next attempt's brief" in line for line in lines)

    detail = gate.detail(tid)
    task = detail["task"]
    assert (task["status"], task["attempts_used"], task["verifier_errors_in_row"]) == ("needs_human", 0, 0)
    assert task["needs_human"]["why"] == "spec_error" and task["needs_human"]["reason"] == reason
    assert task["needs_human"]["attempt"] == 1 and task["needs_human"]["suggested"] == "revise_spec"
    # No finding for the executor, no mismatch flag though it reported "pass" on AC-1.2.
    assert task["findings"] == [] and task["flags"] == []
    [attempt] = task["attempts"]
    assert attempt["ended_at"] is None and attempt["self_report_mismatch"] == []
    assert attempt["state"] == "submitted, waiting for a human"
    [run_] = detail["runs"]
    assert run_["status"] == "spec_error" and run_["evidence"]["AC-1.2"]["result"] == "ambiguous"
    assert detail["history"][-1]["action"] == "verify_spec_error"
    metrics = gate.live.ok("GET", f"/api/projects/{gate.project}/metrics")
    assert metrics["self_report_mismatches"]["criteria"] == 0
    # The human's way out: revise the spec (the task waits in backlog until it is approved again).
    resolved = gate.live.ok("POST", f"/api/tasks/{tid}/resolve", {"resolution": "revise_spec"})
    assert resolved["status"] == "backlog" and resolved["needs_human"] is None
    assert resolved["attempts"][0]["ending"] == "resolved" and resolved["attempts"][0]["used"] is False


def test_node_an_ambiguous_group_next_to_a_real_failure_fails_and_is_listed_as_a_spec_error(
    live: Live, tmp_path: Path
) -> None:
    """node --test: the same describe in two files is two groups; with a failing test beside it
    the run is a failure as before, the ambiguous criterion listed as the spec's error, and the
    failing test's own message and full name reach the next brief."""
    repo = Repo.create(tmp_path / "repo", {"package.json": '{"name": "slug", "private": true}\n'})
    config = {
        "checks": {
            "unit": {
                "command": "mkdir -p reports && node --test --test-reporter=junit "
                "--test-reporter-destination=reports/junit.xml",
                "report": {"path": "reports/junit.xml", "format": "junit"},
            }
        }
    }
    gate = Gate.create(live, repo, config)
    tid = gate.task(
        [
            {"text": "every slugify test", "kind": "test", "verify_ref": "slugify"},
            {"text": "digits", "kind": "test", "verify_ref": "slugify > digits > keeps digits"},
        ]
    )
    head = "const { describe, it } = require('node:test');\nconst assert = require('node:assert');\n"
    sha = repo.commit(
        {
            "a.test.js": head
            + "const slugify = (s) => s.toLowerCase().replace(/[^a-z]+/g, '-');\n"
            + "describe('slugify', () => { describe('digits', () => {\n"
            + "  it('keeps digits', () => assert.strictEqual(slugify('Route 66'), 'route-66'));\n}); });\n",
            "b.test.js": head + "describe('slugify', () => { it('lowercases', () => assert.ok(true)); });\n",
        }
    )
    gate.submit(tid, sha, {"AC-1.1": "pass", "AC-1.2": "pass"})
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready")
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 1 and task["needs_human"] is None
    [finding] = task["findings"]
    assert finding["self_report_mismatch"] == ["AC-1.2"]  # not AC-1.1: that one is the spec's
    by_id = {c["id"]: c for c in finding["criteria"]}
    assert by_id["AC-1.1"]["spec_error"] is True and "matches 2 groups" in by_id["AC-1.1"]["detail"]
    assert any(d.startswith("AC-1.1 spec error") for d in finding["details"])
    [test] = by_id["AC-1.2"]["tests"]
    assert test["name"] == "slugify > digits > keeps digits"
    assert "Expected values to be strictly equal" in test["message"] and "'route-'" in test["message"]
    brief = gate.brief_after_claim(tid)
    [seen] = brief["findings"]
    assert [c["id"] for c in seen["criteria"]] == ["AC-1.1", "AC-1.2"]
    assert seen["criteria"][0]["result"] == "spec error"
    assert "Expected values to be strictly equal" in seen["criteria"][1]["tests"][0]["message"]
    assert "sends the task to a human" in brief["test_ref_rule"]


# -- 2. findings keep the error ------------------------------------------------------------------


def test_the_next_brief_has_each_failing_tests_message_and_the_end_of_the_check_output(
    live: Live, tmp_path: Path
) -> None:
    repo = Repo.create(
        tmp_path / "repo", {"chunk.py": CHUNK, "test_chunk.py": CHUNK_TESTS, ".gitignore": "reports/\n"}
    )
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task(
        [
            {"text": "pairs", "kind": "test", "verify_ref": "test_chunk.TestChunked.test_even"},
            {"text": "the last short chunk", "kind": "test", "verify_ref": "test_odd"},
            {"text": "every chunked test", "kind": "test", "verify_ref": "TestChunked"},
        ]
    )
    gate.submit(tid, git(repo.path, "rev-parse", "HEAD"))
    [line] = gate.verify_json()
    assert line["verdict"] == "failed"
    brief = gate.brief_after_claim(tid)
    [finding] = brief["findings"]
    assert list(finding)[:4] == ["attempt", "source", "summary", "criteria"]  # failing criteria first
    criteria = {c["id"]: c for c in finding["criteria"]}
    [odd] = criteria["AC-1.2"]["tests"]
    assert odd["name"] == "test_chunk.TestChunked.test_odd"  # its own full name, not "pytest > ..."
    assert "Right contains one more item: ['G']" in odd["message"]
    names = [t["name"] for t in criteria["AC-1.3"]["tests"]]
    assert names == ["test_chunk.TestChunked.test_even", "test_chunk.TestChunked.test_odd"]
    [check] = finding["checks"]
    end = check["output_end"]
    # The runner's summary and the short test summary are at the end, and the end is kept.
    assert (check["check"], check["exit_code"]) == ("unit", 1)
    # pytest's count holds the verifier's tripwires too (they must fail)
    assert re.search(r"\d+ failed, 1 passed in [\d.]+s\s*$", end), end
    assert "FAILED test_chunk.py::TestChunked::test_even" in end
    assert "FAILED test_chunk.py::TestChunked::test_odd" in end
    assert end.startswith("…\n") or end.startswith("FF.")  # cut on a line boundary
    assert "pytest > " not in json.dumps(brief)
    assert len(json.dumps(brief, separators=(",", ":"))) <= 2000 * 4  # the brief budget
    # The REST views carry the same for the board's drawer.
    detail = gate.detail(tid)
    stored = detail["task"]["findings"][0]
    assert stored["checks"][0]["output_end"].rstrip().endswith(end.rstrip()[-40:])
    assert [t["name"] for t in stored["criteria"][2]["tests"]] == names
    [run_] = [r for r in detail["runs"] if r["status"] == "failed"]
    assert run_["evidence"]["AC-1.2"]["failures"][0]["name"] == "test_chunk.TestChunked.test_odd"


# -- 3. no terminal escapes in evidence ------------------------------------------------------------


def test_checks_run_without_colour_and_no_escape_or_control_character_is_stored(
    live: Live, tmp_path: Path
) -> None:
    config = pytest_config()
    config["checks"]["env"] = {
        "command": "env | grep -E '^(NO_COLOR|FORCE_COLOR)=' | sort; "
        "printf '\\033[31mred\\033[0m \\033]8;;http://x\\033\\\\link\\033]8;;\\033\\\\ \\a\\bdone\\r\\n'; exit 3"
    }
    report = json.dumps(
        {
            "tests": [
                {
                    "id": "colour.paints",
                    "status": "failed",
                    "message": "\u001b[31mexpected\u001b[0m red\u0007",
                }
            ]
        }
    )
    config["checks"]["paint"] = {
        "command": f"mkdir -p reports && printf '%s' '{report}' > reports/paint.json",
        "report": {"path": "reports/paint.json", "format": "json"},
    }
    gate = slug_gate(live, tmp_path, config)
    tid = gate.task([KEEPS_DIGITS, {"text": "paints", "kind": "test", "verify_ref": "colour.paints"}])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    [line] = gate.verify_json()
    assert line["verdict"] == "failed"
    detail = gate.detail(tid)
    [run_] = detail["runs"]
    out = run_["checks"]["env"]["output_tail"]
    assert out.splitlines()[:2] == ["FORCE_COLOR=0", "NO_COLOR=1"]
    assert out.splitlines()[2] == "red link done"
    assert run_["evidence"]["AC-1.2"]["failures"] == [{"name": "colour.paints", "message": "expected red"}]
    assert no_control_characters(detail) and no_control_characters(gate.brief_after_claim(tid))


def test_the_verifiers_own_environment_may_still_ask_for_colour_and_the_server_strips_it(
    live: Live, tmp_path: Path
) -> None:
    config = pytest_config()
    config["checks"]["env"] = {
        "command": "printf 'NO_COLOR=%s FORCE_COLOR=%s\\n' \"$NO_COLOR\" \"$FORCE_COLOR\"; printf '\\033[1mB\\033[0m'; exit 1"
    }
    gate = slug_gate(live, tmp_path, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    gate.verify_json(env={"FORCE_COLOR": "3", "NO_COLOR": ""})
    [run_] = gate.detail(tid)["runs"]
    assert run_["checks"]["env"]["output_tail"] == "NO_COLOR= FORCE_COLOR=3\nB"


# -- 4. a commit the verifier cannot find ----------------------------------------------------------


def _remote(gate: Gate, tmp_path: Path) -> str:
    """Make the project's repo a bare copy reached by URL (a fetch, as from a forge)."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(gate.repo.path), str(bare))
    url = f"file://{bare}"
    gate.live.ok("PATCH", f"/api/projects/{gate.project}", {"repo": url})
    return url


def test_an_unpushed_commit_fails_the_run_telling_the_executor_to_push_it(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    url = _remote(gate, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    sha = gate.repo.commit({"slug.py": SLUGIFY}, "fixed, never pushed")
    gate.submit(tid, sha, {"AC-1.1": "pass"})
    [line] = gate.verify_json()
    said = f"commit {sha} is not in {url}: push it, then submit again"
    assert (line["verdict"], line["task_status"], line["summary"]) == ("failed", "ready", said)
    assert line["error"] is None and line["commit_missing"] is True
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 1 and task["verifier_errors_in_row"] == 0
    [finding] = task["findings"]
    assert finding["details"] == [said] and finding["self_report_mismatch"] == []
    # The next executor reads it, pushes, and submits the same commit: now it is verified.
    git(gate.repo.path, "push", "--quiet", url, "HEAD:refs/heads/main")

    async def again() -> dict[str, Any]:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            claimed = await a.ok("claim_task", project=gate.project, task_id=tid)
            await a.ok(
                "submit_task",
                task_id=tid,
                claim_token=claimed["claim_token"],
                commit_sha=sha,
                evidence="pushed",
            )
            return dict(claimed["brief"])

    assert run(again())["findings"][0]["summary"] == said
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("passed", "verified")


def test_a_repository_that_cannot_be_fetched_stays_a_verifier_error(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    sha = gate.repo.commit({"slug.py": SLUGIFY})
    gate.live.ok("PATCH", f"/api/projects/{gate.project}", {"repo": f"file://{tmp_path}/nowhere.git"})
    gate.submit(tid, sha)
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"], line["commit_missing"]) == (
        "error",
        "needs_verification",
        False,
    )
    assert "checkout failed" in line["error"]
    task = gate.detail(tid)["task"]
    assert (task["attempts_used"], task["verifier_errors_in_row"], task["findings"]) == (0, 1, [])


def test_submit_refuses_a_commit_the_local_repository_does_not_hold(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    missing = "0123456789abcdef0123456789abcdef01234567"
    refused, status = _submit_refused(gate, tid, missing)
    assert refused["code"] == "E_VALIDATION"
    assert refused["message"] == f"commit {missing} is not in {gate.repo.path}: push it, then submit again"
    assert status == "claimed"  # nothing changed: the executor can still submit


def _submit_refused(gate: Gate, tid: str, sha: str, *, release: bool = False) -> tuple[dict[str, Any], str]:
    """Claim the task over MCP and submit `sha`, which must be refused; release it after if told.
    The refusal and the task's status then."""

    async def go() -> tuple[dict[str, Any], str]:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            claimed = await a.ok("claim_task", project=gate.project, task_id=tid)
            refused = await a.refused(
                "submit_task",
                task_id=tid,
                claim_token=claimed["claim_token"],
                commit_sha=sha,
                evidence="done",
            )
            if release:
                await a.ok("release_task", task_id=tid, claim_token=claimed["claim_token"])
            got = await a.ok("get_task", task_id=tid)
            return dict(refused), str(got["task"]["status"])

    return run(go())


def test_a_commit_gone_from_the_local_repository_fails_the_run(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.repo.branch("work")
    sha = gate.repo.commit({"slug.py": SLUGIFY}, "on a branch")
    gate.submit(tid, sha)
    git(gate.repo.path, "checkout", "--quiet", "main")
    git(gate.repo.path, "branch", "--quiet", "-D", "work")
    git(gate.repo.path, "reflog", "expire", "--expire=now", "--all")
    git(gate.repo.path, "gc", "--quiet", "--prune=now")
    [line] = gate.verify_json()
    said = f"commit {sha} is not in {gate.repo.path}: push it, then submit again"
    assert (line["verdict"], line["task_status"], line["summary"]) == ("failed", "ready", said)
    assert gate.detail(tid)["task"]["attempts_used"] == 1


def test_a_branch_named_like_the_abbreviation_neither_hides_a_failure_nor_a_missing_commit(
    live: Live, tmp_path: Path
) -> None:
    """The executor names a branch like the abbreviation it submits, pointing at another commit
    (git reads a name as a ref first). Submit still refuses a name no commit starts with, and the
    verifier checks out the submitted commit itself: its failure is the executor's, signed about
    it, not a verifier error that uses no attempt."""
    gate = slug_gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    good = gate.repo.commit({"slug.py": SLUGIFY}, "passes")
    git(gate.repo.path, "branch", "deadbeef", good)
    refused, _ = _submit_refused(gate, tid, "deadbeef", release=True)
    assert (refused["code"], refused["message"]) == (
        "E_VALIDATION",
        f"commit deadbeef is not in {gate.repo.path}: push it, then submit again",
    )
    broken = gate.repo.commit({"slug.py": BROKEN}, "drops digits")
    git(gate.repo.path, "branch", broken[:9], good)
    gate.submit(tid, broken[:9])
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"], line["error"]) == ("failed", "ready", None)
    detail = gate.detail(tid)
    assert (detail["task"]["attempts_used"], detail["task"]["verifier_errors_in_row"]) == (1, 0)
    [run_] = detail["runs"]
    assert run_["resolved_commit"] == broken


# -- 5. flags belong to their attempt --------------------------------------------------------------


def test_a_mismatch_of_an_earlier_attempt_stays_on_that_attempt(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, git(gate.repo.path, "rev-parse", "HEAD"), {"AC-1.1": "pass"})  # broken
    gate.verify_json()
    task = gate.detail(tid)["task"]
    assert [f["kind"] for f in task["flags"]] == ["self_report_mismatch"]
    assert task["flags"][0]["attempt"] == 1 and task["flags"][0]["criteria"] == ["AC-1.1"]
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}), {"AC-1.1": "pass"})  # honest now
    [line] = gate.verify_json()
    assert line["verdict"] == "passed"
    task = gate.detail(tid)["task"]
    assert task["flags"] == []  # the card: the current attempt was verified honestly
    first, second = task["attempts"]
    assert first["self_report_mismatch"] == ["AC-1.1"] and first["state"] == "verification failed"
    assert second["self_report_mismatch"] == []
    assert second["state"] == "submitted and verified, waiting for a human"
    metrics = gate.live.ok("GET", f"/api/projects/{gate.project}/metrics")
    assert metrics["self_report_mismatches"]["criteria"] == 1  # counted per attempt, as before


# -- 6 and 8. say why; readable output --------------------------------------------------------------


def test_verify_says_why_it_did_nothing(live: Live, tmp_path: Path) -> None:
    gate = slug_gate(live, tmp_path)
    idle = gate.verify("--once", "--project", gate.project)
    assert (
        idle.returncode == 0 and idle.stdout.strip() == f"taskgate verify: nothing waiting in {gate.project}"
    )
    gate.live.ok("PUT", f"/api/projects/{gate.project}/verification", {"on": False})
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    off = f"verification is off for {gate.project}: 1 task waits for a human"
    idle = gate.verify("--once", "--project", gate.project)
    assert idle.stdout.strip() == f"taskgate verify: nothing waiting in {gate.project} ({off})"
    idle = gate.verify("--once")  # every project the key covers: this one
    assert idle.stdout.strip() == f"taskgate verify: nothing waiting ({off})"
    [attempt] = gate.detail(tid)["task"]["attempts"]
    assert attempt["state"] == "submitted, waiting for a human"
    gate.live.ok("PUT", f"/api/projects/{gate.project}/verification", {"on": True})
    [attempt] = gate.detail(tid)["task"]["attempts"]
    assert attempt["state"] == "submitted, waiting for verification"


def test_progress_names_tests_by_full_name_cuts_after_a_word_and_says_where_the_task_went(
    live: Live, tmp_path: Path
) -> None:
    # A message longer than a progress line.
    why = "the last, shorter chunk must be kept when the number of items is not a multiple of n"
    odd = '[["A", "B", "C"], ["D", "E", "F"], ["G"]]'
    tests = CHUNK_TESTS.replace(odd, f'{odd}, "{why}"')
    repo = Repo.create(
        tmp_path / "repo", {"chunk.py": CHUNK, "test_chunk.py": tests, ".gitignore": "reports/\n"}
    )
    gate = Gate.create(live, repo, pytest_config())
    gate.live.ok("PATCH", f"/api/projects/{gate.project}", {"max_attempts": 1})
    tid = gate.task([{"text": "the last short chunk", "kind": "test", "verify_ref": "test_odd"}])
    gate.submit(tid, git(repo.path, "rev-parse", "HEAD"))
    done = gate.verify("--task", tid)
    lines = done.stdout.splitlines()
    [progress] = [line for line in lines if " AC-1.1 fail: " in line]
    assert "pytest > " not in done.stdout
    assert progress.startswith(f"  {tid} AC-1.1 fail: 1 test failed: test_chunk.TestChunked.test_odd — ")
    evidence = gate.detail(tid)["runs"][0]["evidence"]["AC-1.1"]
    full = " ".join(f"{evidence['detail']} — {evidence['failures'][0]['message']}".split())
    cut = progress.split(" AC-1.1 fail: ", 1)[1]
    assert cut.endswith("…") and full.startswith(cut[:-1])
    assert full[len(cut) - 1] in " ,;:"  # the cut is after a whole word
    assert lines[-1] == (
        f"{tid}: the task waits for a human: attempts used up (1 of 1); the last failed verification: "
        "1 check failed: unit; 1 criterion without positive evidence: AC-1.1"
    )
    assert not any("next attempt's brief" in line for line in lines)
    task = gate.detail(tid)["task"]
    assert task["status"] == "needs_human" and task["needs_human"]["why"] == "attempts_used_up"
