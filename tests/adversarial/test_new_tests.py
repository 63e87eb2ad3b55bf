"""New named tests must fail before the change: a real `taskgate serve`, real git commits on a
work branch off `main`, `taskgate verify` running a real pytest check. A test criterion whose
named test the submission wrote is run again on the baseline's code with the submission's test
files; passing there too, it is no evidence of the change and the task waits for a human. The
honest controls verify with no human, and run the baseline's code only where a rule needs it."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run, serving
from tests.support.server import TASKGATE
from tests.support.terminal import no_terminal
from tests.support.users import shared_tmp
from tests.verifier.support import (
    BROKEN,
    KEEPS_DIGITS,
    SLUGIFY,
    SLUGIFY_TESTS,
    Gate,
    Repo,
    pytest_config,
)

TYPD = "\n\ndef test_typd():\n    assert True\n"
# The criterion as a human wrote it, with a typo in its ref: no such test exists yet.
TYPO = {"text": "typed titles become slugs", "kind": "test", "verify_ref": "test_slug.test_typd"}
REASON = (
    "AC-1.1 passes without the change: its new test `test_slug.test_typd` passes on the baseline's code too"
)
# The baseline's tests without the digits test: the spec asks for it as new behaviour.
NO_DIGITS_TESTS = SLUGIFY_TESTS.replace(
    '    def test_keeps_digits(self):\n        assert slugify("Route 66") == "route-66"\n\n', ""
)
DIGITS_TEST = (
    'from slug import slugify\n\n\ndef test_keeps_digits():\n    assert slugify("Route 66") == "route-66"\n'
)
NEW_DIGITS = {"text": "digits are kept", "kind": "test", "verify_ref": "test_digits.test_keeps_digits"}
LOWER_TEST = 'from slug import slugify\n\n\ndef test_lowercases():\n    assert slugify("ABC") == "abc"\n'
GUARD = {
    "text": "slugs stay lowercase",
    "kind": "test",
    "verify_ref": "test_lower.test_lowercases",
    "guard": True,
}


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()  # the checks may run as another user, who must reach the repositories


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-new-tests"))


def _gate(live: Live, tmp_path: Path, slug: str = SLUGIFY, tests: str = SLUGIFY_TESTS) -> Gate:
    """`main` holds slugify and its tests; the executor works on a branch `work`."""
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": slug, "test_slug.py": tests, ".gitignore": "reports/\n"}
    )
    repo.branch("work")
    return Gate.create(live, repo, pytest_config())


def _verify(gate: Gate, tid: str, files: dict[str, str]) -> dict[str, Any]:
    gate.submit(tid, gate.repo.commit(files, "the change"))
    [line] = gate.verify_json()
    return line


def _env(live: Live) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    return {**env, "TASKGATE_SERVER": live.base, "TASKGATE_DATA_DIR": str(live.data_dir)}


def _run(gate: Gate, tid: str) -> dict[str, Any]:
    [run_] = gate.detail(tid)["runs"]
    return dict(run_)


def test_a_new_test_that_passes_whatever_the_code_does_is_held_for_a_human(
    live: Live, tmp_path: Path
) -> None:
    """After a typo'd ref, the executor adds `def test_typd(): assert True` beside the tests it
    found, and changes no code."""
    gate = _gate(live, tmp_path)
    tid = gate.task([TYPO])
    line = _verify(gate, tid, {"test_slug.py": SLUGIFY_TESTS + TYPD})
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    # test_slug.py defines a named test its baseline does not: the grading run keeps it as
    # submitted, with nothing left out to run again; the run without the change follows
    assert "second_run_s" not in line["timings"] and "without_change_s" in line["timings"]
    task = gate.detail(tid)["task"]
    assert (task["needs_human"]["why"], task["needs_human"]["reason"]) == ("passes_without_change", REASON)
    assert task["attempts_used"] == 0
    run_ = _run(gate, tid)
    assert run_["status"] == "needs_human" and run_["summary"] == REASON
    evidence = run_["evidence"]["AC-1.1"]
    # both results: it passed on the submission, and on the baseline's code with its test file
    assert evidence["result"] == "pass" and evidence["passes_without_change"] is True
    assert evidence["without_change"]["result"] == "pass"
    assert evidence["without_change"]["files"] == ["test_slug.py"]
    assert evidence["restored"] is None  # the baseline's version of the file has no such test
    shown = no_terminal([TASKGATE, "task", "show", tid], _env(live)).stdout.splitlines()
    at = shown.index("  AC-1.1 (test) typed titles become slugs  `test_slug.test_typd`")
    assert shown[at + 1 : at + 3] == [
        "      pass      1 test passed: test_slug.test_typd",
        "        passes without the change: its new test passes on the baseline's code too",
    ]


def test_the_held_new_test_is_shown_and_signed(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([{**TYPO, "verify_ref": "test_extra.test_typd"}])
    line = _verify(gate, tid, {"test_extra.py": TYPD.lstrip()})
    assert line["verdict"] == "needs_human", line
    # a new file: no test file of the baseline changed, so no rule-3 run; rule 4's alone
    assert "second_run_s" not in line["timings"] and "without_change_s" in line["timings"]
    task = gate.detail(tid)["task"]
    assert task["needs_human"]["reason"] == REASON.replace("test_slug.test_typd", "test_extra.test_typd")
    lines = gate.live.rest("GET", f"/api/tasks/{tid}/attestations").text.splitlines()
    facts = json.loads(base64.b64decode(json.loads(lines[-1])["payload"]))["predicate"]["taskgate"]
    assert facts["verdict"] == "needs_human"
    assert facts["criteria"]["AC-1.1"] == {
        "result": "pass",
        "withoutChange": "pass",
        "passesWithoutChange": True,
    }


def test_the_fix_with_a_new_test_that_fails_on_the_baseline_verifies(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path, BROKEN, NO_DIGITS_TESTS)
    tid = gate.task([NEW_DIGITS])
    line = _verify(gate, tid, {"slug.py": SLUGIFY, "test_digits.py": DIGITS_TEST})
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    # The stubbed run tells that the new test notices the change: the baseline's code need not run
    # (change sensitivity replaces rule 4's run where it tells).
    assert "stubbed_run_s" in line["timings"] and "without_change_s" not in line["timings"]
    assert gate.detail(tid)["task"]["needs_human"] is None
    evidence = _run(gate, tid)["evidence"]["AC-1.1"]
    assert evidence["result"] == "pass" and evidence["passes_stubbed"] is False
    assert evidence["stubbed"]["result"] == "fail"
    assert evidence["without_change"] is None


def test_the_new_test_alone_without_the_fix_fails_the_run(live: Live, tmp_path: Path) -> None:
    """The same new test with the broken code: a plain failure, an attempt used, no second run."""
    gate = _gate(live, tmp_path, BROKEN, NO_DIGITS_TESTS)
    tid = gate.task([NEW_DIGITS])
    line = _verify(gate, tid, {"test_digits.py": DIGITS_TEST})
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    assert "without_change_s" not in line["timings"]


def test_a_guard_criterion_passing_on_both_verifies(live: Live, tmp_path: Path) -> None:
    """The guard's test is the baseline's (a guard keeps existing behaviour); the change
    touches slugify, which the guarded test need not notice."""
    repo = Repo.create(
        tmp_path / "repo",
        {
            "slug.py": BROKEN,
            "test_slug.py": SLUGIFY_TESTS,
            "test_lower.py": LOWER_TEST,
            ".gitignore": "reports/\n",
        },
    )
    repo.branch("work")
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task([GUARD])
    line = _verify(gate, tid, {"slug.py": SLUGIFY})
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    # its guard counts (its spec is approved): no run on the baseline's code, no stubbed run
    assert "without_change_s" not in line["timings"] and "stubbed_run_s" not in line["timings"]
    evidence = _run(gate, tid)["evidence"]["AC-1.1"]
    assert evidence["result"] == "pass" and evidence["without_change"] is None
    shown = no_terminal([TASKGATE, "task", "show", tid], _env(live)).stdout
    assert "  AC-1.1 (test, guard) slugs stay lowercase  `test_lower.test_lowercases`" in shown


def test_a_guard_whose_test_the_submission_adds_is_a_spec_error(live: Live, tmp_path: Path) -> None:
    """A guard keeps behaviour the baseline has; a test the commit brings under
    the guard's name passes whatever. The ref is the spec's error: no attempt used."""
    gate = _gate(live, tmp_path)
    tid = gate.task([GUARD])
    line = _verify(gate, tid, {"test_lower.py": LOWER_TEST})
    assert (line["verdict"], line["task_status"]) == ("spec_error", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert (task["needs_human"]["why"], task["attempts_used"]) == ("spec_error", 0)
    assert task["needs_human"]["reason"] == (
        "spec error: AC-1.1 is a guard and no test file of the baseline defines its test "
        "`test_lower.test_lowercases`: a guard keeps existing behaviour, so its test must exist before the change"
    )


def test_a_guard_the_executor_put_on_its_own_task_counts_for_nothing(live: Live, tmp_path: Path) -> None:
    """The gated agent creates a task of its own with a guard criterion and writes a test that
    passes whatever the code does: the guard nobody approved is no guard."""
    gate = _gate(live, tmp_path)

    async def create() -> str:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            made = await a.ok(
                "create_task",
                project=gate.project,
                title="Typed slugs",
                criteria=[{**GUARD, "verify_ref": "test_extra.test_typd"}],
            )
            return str(made["task"]["id"])

    tid = run(create())
    assert gate.detail(tid)["task"]["criteria"][0]["guard"] is True
    line = _verify(gate, tid, {"test_extra.py": TYPD.lstrip()})
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    cid = gate.detail(tid)["task"]["criteria"][0]["id"]
    assert gate.detail(tid)["task"]["needs_human"]["reason"] == (
        f"{cid} passes without the change: its new test `test_extra.test_typd` passes on the "
        "baseline's code too (its guard counts only on a criterion of an approved spec)"
    )


def test_the_fix_with_tests_added_to_a_file_no_criterion_names_runs_them_in_its_own_tree(
    live: Live, tmp_path: Path
) -> None:
    gate = _gate(live, tmp_path, BROKEN)
    tid = gate.task([KEEPS_DIGITS])
    line = _verify(gate, tid, {"slug.py": SLUGIFY, "test_more.py": TYPD.lstrip()})
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    # the named test is in test_slug.py, as the baseline has it: no run without the change; the
    # unnamed new file is not in the grading run, and runs once more in the submission's tree
    assert "without_change_s" not in line["timings"] and "second_run_s" in line["timings"]
    assert _run(gate, tid)["grading"]["removed"] == ["test_more.py"]
    assert _run(gate, tid)["evidence"]["AC-1.1"]["without_change"] is None


def test_a_held_new_test_reopened_with_findings_uses_the_attempt(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([TYPO])
    assert _verify(gate, tid, {"test_slug.py": SLUGIFY_TESTS + TYPD})["verdict"] == "needs_human"
    r = gate.live.rest(
        "POST", f"/api/tasks/{tid}/reopen", {"findings": ["write a test that checks the code"]}
    )
    assert r.status_code == 200, r.text
    task = gate.detail(tid)["task"]
    assert (task["status"], task["attempts_used"], task["needs_human"]) == ("ready", 1, None)


def test_a_human_allows_the_new_test_and_the_run_is_verified_and_signed_so(
    live: Live, tmp_path: Path
) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([TYPO])
    sha = gate.repo.commit({"test_slug.py": SLUGIFY_TESTS + TYPD}, "the test")
    gate.submit(tid, sha)
    [line] = gate.verify_json()
    assert line["verdict"] == "needs_human", line
    assert gate.detail(tid)["task"]["needs_human"]["criteria"] == ["AC-1.1"]
    # the executor's own key may not allow it, whatever it says
    r = gate.live.rest("POST", f"/api/tasks/{tid}/resolve", {"resolution": "allow"}, token=gate.agent_key)
    assert (r.status_code, r.json()["code"]) == (403, "E_FORBIDDEN"), r.text
    r = gate.live.rest("POST", f"/api/tasks/{tid}/resolve", {"resolution": "allow", "note": "it existed"})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "needs_verification"
    assert (r.json()["allowed"]["criteria"], r.json()["allowed"]["paths"]) == (["AC-1.1"], [])
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    [allowing] = [e for e in gate.detail(tid)["history"] if e["action"] == "reverify"]
    assert allowing["detail"]["allowed_criteria"] == ["AC-1.1"] and allowing["actor"].startswith("human:")
    last = gate.detail(tid)["runs"][-1]
    # still said of the criterion, and signed with who allowed it
    assert last["evidence"]["AC-1.1"]["passes_without_change"] is True
    lines = gate.live.rest("GET", f"/api/tasks/{tid}/attestations").text.splitlines()
    facts = json.loads(base64.b64decode(json.loads(lines[-1])["payload"]))["predicate"]["taskgate"]
    assert facts["verdict"] == "passed"
    allowed = facts["baseline"]["allowed"]
    assert (allowed["criteria"], allowed["by"], allowed["commit_sha"]) == (["AC-1.1"], allowing["actor"], sha)


def test_two_humans_allowing_at_once_allow_once(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([TYPO])
    assert _verify(gate, tid, {"test_slug.py": SLUGIFY_TESTS + TYPD})["verdict"] == "needs_human"
    start = threading.Barrier(4)

    def allow(_: int) -> tuple[int, str]:
        start.wait()
        r = gate.live.rest("POST", f"/api/tasks/{tid}/resolve", {"resolution": "allow"})
        return r.status_code, r.json().get("code", "")

    with ThreadPoolExecutor(4) as pool:
        answers = sorted(pool.map(allow, range(4)))
    assert answers == [(200, ""), (409, "E_WRONG_STATE"), (409, "E_WRONG_STATE"), (409, "E_WRONG_STATE")]
    history = gate.detail(tid)["history"]
    assert [e["detail"].get("allowed_criteria") for e in history if e["action"] == "reverify"] == [["AC-1.1"]]


NODE_SLUG = 'exports.slugify = (t) => t.toLowerCase().replace(/[^a-z0-9]+/g, "-");\n'
NODE_TESTS = """\
const { describe, test } = require("node:test");
const assert = require("node:assert");
const { slugify } = require("./slug.js");

describe("slugify", () => {
  test("lowercases", () => assert.strictEqual(slugify("AB"), "ab"));
});
"""
NODE_CHECK = {
    "command": "mkdir -p reports && node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml",
    "report": {"path": "reports/junit.xml", "format": "junit"},
}


def test_a_runner_that_says_not_where_its_tests_are_is_held_too(live: Live, tmp_path: Path) -> None:
    """node --test writes neither a file nor a classname of its own: the new test added to the
    named describe is run on the baseline's code with every test file the submission changed."""
    repo = Repo.create(
        tmp_path / "repo", {"slug.js": NODE_SLUG, "slug.test.js": NODE_TESTS, ".gitignore": "reports/\n"}
    )
    repo.branch("work")
    gate = Gate.create(live, repo, {"check_timeout_minutes": 2, "checks": {"unit": NODE_CHECK}})
    tid = gate.task([{"text": "typed", "kind": "test", "verify_ref": "slugify > typd"}])
    typd = NODE_TESTS.replace("});\n", '  test("typd", () => assert.ok(true));\n});\n')
    line = _verify(gate, tid, {"slug.test.js": typd})
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    assert gate.detail(tid)["task"]["needs_human"]["reason"] == (
        "AC-1.1 passes without the change: its new test `slugify > typd` passes on the baseline's code too"
    )
    evidence = _run(gate, tid)["evidence"]["AC-1.1"]
    assert evidence["without_change"] == {
        "result": "pass",
        "detail": evidence["without_change"]["detail"],
        "files": ["slug.test.js"],
    }
