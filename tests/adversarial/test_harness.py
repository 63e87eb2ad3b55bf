"""The gated agent bends the harness, not the code: a real `taskgate serve`, real git commits on
a work branch off `main`, `taskgate verify` running a real pytest check. Each test that tries a
way round ends `needs_human` or failed with the reason naming what the submission did; the honest
controls end `verified` with no human.

The baseline is the merge-base of the submission with `main`; what the submission changes
against it is recorded on the run, signed in its statement, and read by the protect rules."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskgate.domain.baseline import changed_digest
from tests.mcp.live import Live, serving
from tests.support.cheats import ALL_PASS
from tests.support.users import shared_tmp
from tests.verifier.support import (
    BROKEN,
    KEEPS_DIGITS,
    SLUGIFY,
    SLUGIFY_TESTS,
    TASKGATE,
    Gate,
    Repo,
    git,
    pytest_config,
)

# A `pytest` package of the commit's own, which `python -m pytest` runs instead of pytest: a
# version line and an all-pass report.
FAKE_PYTEST = """\
import os

print("platform linux -- Python 3.12.0, pytest-8.3.2, pluggy-1.5.0")
os.makedirs("reports", exist_ok=True)
with open("reports/junit.xml", "w") as f:
    f.write('<testsuites><testsuite name="pytest"><testcase classname="test_slug.TestSlugify" '
            'name="test_keeps_digits"/></testsuite></testsuites>')
"""
# A conftest that makes pytest exit 0 whatever failed.
EXIT_ZERO = """\
def pytest_sessionfinish(session, exitstatus):
    session.exitstatus = 0
"""


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()  # the checks may run as another user, who must reach the repositories


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-harness"))


def _gate(live: Live, tmp_path: Path, **config: Any) -> tuple[Gate, str]:
    """A project whose `main` holds the broken slugify and its tests; the executor works on a
    branch `work`. Returns the gate and the fork point (the baseline every submission has)."""
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": BROKEN, "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"}
    )
    fork = git(repo.path, "rev-parse", "HEAD")
    repo.branch("work")
    return Gate.create(live, repo, pytest_config(**config)), fork


def _run(gate: Gate, tid: str) -> dict[str, Any]:
    return dict(gate.detail(tid)["runs"][0])


def _statement(run: dict[str, Any]) -> dict[str, Any]:
    envelope = run["attestation"]
    payload: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return payload


def _cli(live: Live, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": live.base, "TASKGATE_TOKEN": live.admin_token}
    return subprocess.run([TASKGATE, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def _verify_one(gate: Gate) -> dict[str, Any]:
    [line] = gate.verify_json()
    return line


# -- rule 1: the baseline ----------------------------------------------------------------------


def test_the_fix_alone_verifies_and_its_baseline_is_recorded_and_signed(live: Live, tmp_path: Path) -> None:
    gate, fork = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    sha = gate.repo.commit({"slug.py": SLUGIFY}, "keep digits")
    git(gate.repo.path, "checkout", "--quiet", "main")
    gate.repo.commit({"README.md": "main moves on\n"}, "docs")  # not the submission's change
    gate.submit(tid, sha)
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    run = _run(gate, tid)
    base = run["baseline"]
    assert (base["branch"], base["commit"], base["why"]) == ("main", fork, None)
    assert base["changed"] == ["slug.py"] and base["changed_total"] == 1
    assert (base["protected"], base["test_files"]) == ([], [])
    facts = _statement(run)["predicate"]["taskgate"]["baseline"]
    assert facts == {
        "branch": "main",
        "commit": fork,
        "changedPaths": 1,
        "changedPathsSha256": changed_digest(["slug.py"]),
    }


def test_no_base_branch_is_said_on_the_run_and_in_the_statement(live: Live, tmp_path: Path) -> None:
    gate, _ = _gate(live, tmp_path, base_branch="trunk")
    tid = gate.task([KEEPS_DIGITS])
    sha = gate.repo.commit({"slug.py": SLUGIFY}, "keep digits")
    gate.submit(tid, sha)
    line = _verify_one(gate)
    assert line["verdict"] == "passed", line
    run = _run(gate, tid)
    base = run["baseline"]
    assert (base["commit"], base["why"]) == (None, "the repository has no base branch trunk")
    # against the empty tree: every path of the submission is a change
    assert base["changed"] == [".gitignore", "slug.py", "test_slug.py"]
    assert base["test_files"] == ["test_slug.py"]
    facts = _statement(run)["predicate"]["taskgate"]["baseline"]
    assert facts["commit"] is None and facts["none"] == "the repository has no base branch trunk"


# -- rule 2: protected paths --------------------------------------------------------------------


def test_a_conftest_that_passes_every_test_is_held_for_a_human_with_its_diff(
    live: Live, tmp_path: Path
) -> None:
    gate, fork = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    sha = gate.repo.commit({"conftest.py": ALL_PASS}, "make the tests pass")  # slugify still broken
    gate.submit(tid, sha)
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    held = task["needs_human"]
    assert held["why"] == "held"
    assert held["reason"] == "the submission changes protected paths: conftest.py"
    assert held["paths"] == ["conftest.py"]
    assert '+    report.outcome = "passed"' in held["diff"] and "conftest.py" in held["diff"]
    assert task["attempts_used"] == 0 and task["attempts"][0]["ended_at"] is None
    run = _run(gate, tid)
    assert run["status"] == "needs_human" and run["summary"] == held["reason"]
    assert run["baseline"]["protected"] == ["conftest.py"] and run["baseline"]["test_files"] == [
        "conftest.py"
    ]
    statement = _statement(run)["predicate"]
    assert statement["result"] == "WARNED"
    assert statement["taskgate"]["baseline"]["protectedChanged"] == ["conftest.py"]
    assert statement["taskgate"]["baseline"]["commit"] == fork
    shown = _cli(live, "task", "show", tid)
    assert shown.returncode == 0, shown.stderr
    assert (
        f"changed paths against the baseline, main at {fork[:12]}: 1\n  conftest.py  [protected, test]"
        in shown.stdout
    )


def test_a_human_allows_the_change_and_the_run_says_who(live: Live, tmp_path: Path) -> None:
    gate, _ = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    conftest = "import os\n\nos.environ.setdefault('SLUG_MODE', 'strict')\n"
    sha = gate.repo.commit({"slug.py": SLUGIFY, "conftest.py": conftest}, "fix, with a fixture file")
    gate.submit(tid, sha)
    assert _verify_one(gate)["verdict"] == "needs_human"
    r = gate.live.rest("POST", f"/api/tasks/{tid}/resolve", {"resolution": "allow", "note": "fine"})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "needs_verification" and r.json()["allowed"]["paths"] == ["conftest.py"]
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    runs = gate.detail(tid)["runs"]
    last = next(x for x in runs if x["status"] == "passed")
    [allowing] = [e for e in gate.detail(tid)["history"] if e["action"] == "reverify"]
    assert allowing["detail"]["allowed"] == ["conftest.py"] and allowing["actor"].startswith("human:")
    allowed = last["baseline"]["allowed"]
    assert (allowed["paths"], allowed["by"], allowed["commit_sha"]) == (
        ["conftest.py"],
        allowing["actor"],
        sha,
    )
    assert _statement(last)["predicate"]["taskgate"]["baseline"]["allowed"]["by"] == allowing["actor"]


def test_an_allowance_is_only_for_a_held_task(live: Live, tmp_path: Path) -> None:
    gate, _ = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}, "fix"))
    before = gate.live.dump()
    r = gate.live.rest("POST", f"/api/tasks/{tid}/resolve", {"resolution": "allow"})
    assert r.status_code == 409 and r.json()["code"] == "E_WRONG_STATE", r.text
    assert gate.live.dump() == before


def test_a_held_task_reopened_with_findings_uses_the_attempt(live: Live, tmp_path: Path) -> None:
    gate, _ = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"conftest.py": ALL_PASS}, "pass them all"))
    assert _verify_one(gate)["verdict"] == "needs_human"
    r = gate.live.rest(
        "POST", f"/api/tasks/{tid}/reopen", {"findings": ["fix slugify, not the test harness"]}
    )
    assert r.status_code == 200, r.text
    task = gate.detail(tid)["task"]
    assert (task["status"], task["attempts_used"]) == ("ready", 1)
    assert task["attempts"][0]["ending"] == "reopened" and task["needs_human"] is None
    assert task["findings"][-1]["summary"] == "fix slugify, not the test harness"


@pytest.mark.parametrize(
    ("files", "held"),
    [
        ({"pytest.ini": "[pytest]\naddopts = -p slugplugin\n", "slugplugin.py": EXIT_ZERO}, ["pytest.ini"]),
        (
            {
                "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-p slugplugin"\n',
                "slugplugin.py": EXIT_ZERO,
            },
            ["pyproject.toml"],
        ),
        (
            {"pytest/__init__.py": "", "pytest/__main__.py": FAKE_PYTEST},
            ["pytest/__init__.py", "pytest/__main__.py"],
        ),
        ({"lib/sitecustomize.py": "import os\n"}, ["lib/sitecustomize.py"]),
        ({"tests/conftest.py": EXIT_ZERO}, ["tests/conftest.py"]),
    ],
    ids=["pytest-ini-plugin", "pyproject-pytest-table", "pytest-package", "sitecustomize", "nested-conftest"],
)
def test_each_default_protected_path_holds_the_run(
    live: Live, tmp_path: Path, files: dict[str, str], held: list[str]
) -> None:
    gate, _ = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    # With the fix, so that the checks pass: the hold is what stands (a failing check would go
    # back to the executor with the hold in its findings; tested below).
    gate.submit(tid, gate.repo.commit({**files, "slug.py": SLUGIFY}, "harness"))
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    reason = gate.detail(tid)["task"]["needs_human"]["reason"]
    # The protected paths lead; a plugin the change adds may be named by the loading rules or the
    # screen after them, and a runner of the commit's own passes the stubbed run too.
    first, _, rest = reason.partition("; and ")
    assert first == "the submission changes protected paths: " + ", ".join(held), reason
    assert rest == "" or rest.startswith(
        (
            "the submission adds code that reads or ends its grader",
            "the submission changes what gets loaded",
            "AC-1.1's test passes with every changed function stubbed out",
        )
    ), reason


def test_a_harness_change_is_held_even_where_its_check_fails(live: Live, tmp_path: Path) -> None:
    """A changed harness is a human's call whatever the run says: the submission changed what a
    run is built from. No attempt is used; the human reopens (the failure is in the findings)."""
    gate, _ = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"lib/sitecustomize.py": "import os\n"}, "harness"))  # slugify broken
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 0 and task["needs_human"]["why"] == "held"
    # the loading rules see it too (imported at interpreter start): a protected path is named once
    assert task["needs_human"]["paths"] == ["lib/sitecustomize.py"]
    assert task["needs_human"]["reason"].startswith(
        "the submission changes protected paths: lib/sitecustomize.py"
    ), task["needs_human"]["reason"]


def test_another_table_of_pyproject_is_no_change_to_the_harness(live: Live, tmp_path: Path) -> None:
    repo = Repo.create(
        tmp_path / "repo",
        {
            "slug.py": BROKEN,
            "test_slug.py": SLUGIFY_TESTS,
            ".gitignore": "reports/\n",
            "pyproject.toml": '[project]\nname = "slug"\nversion = "1.0"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n',
        },
    )
    repo.branch("work")
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task([KEEPS_DIGITS])
    text = '[project]\nname = "slug"\nversion = "1.1"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    gate.submit(tid, repo.commit({"slug.py": SLUGIFY, "pyproject.toml": text}, "fix and bump"))
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    base = _run(gate, tid)["baseline"]
    assert base["changed"] == ["pyproject.toml", "slug.py"] and base["protected"] == []


def test_a_file_a_check_runs_by_path_is_protected(live: Live, tmp_path: Path) -> None:
    repo = Repo.create(
        tmp_path / "repo",
        {
            "slug.py": BROKEN,
            "test_slug.py": SLUGIFY_TESTS,
            ".gitignore": "reports/\n",
            "scripts/check.sh": "#!/bin/sh\nexit 0\n",
        },
    )
    repo.branch("work")
    config = pytest_config()
    config["checks"]["lint"] = {"command": "sh scripts/check.sh"}
    gate = Gate.create(live, repo, config)
    # the executor's brief names what it may not change
    told = gate.brief_after_claim(gate.task([KEEPS_DIGITS]))["verifier_checks"]
    assert told["protected_paths"][-1] == "scripts/check.sh" and "**/conftest.py" in told["protected_paths"]
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, repo.commit({"slug.py": SLUGIFY, "scripts/check.sh": "#!/bin/sh\ntrue\n"}, "fix"))
    line = _verify_one(gate)
    assert line["verdict"] == "needs_human", line
    assert gate.detail(tid)["task"]["needs_human"]["reason"] == (
        "the submission changes protected paths: scripts/check.sh"
    )


def test_protect_off_lets_the_checks_decide(live: Live, tmp_path: Path) -> None:
    gate, _ = _gate(live, tmp_path, protect=[])
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY, "conftest.py": "X = 1\n"}, "fix"))
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line


def test_an_own_protect_list_replaces_the_default(live: Live, tmp_path: Path) -> None:
    gate, _ = _gate(live, tmp_path, protect=["slug.py"])
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY, "conftest.py": "X = 1\n"}, "fix"))
    line = _verify_one(gate)
    assert line["verdict"] == "needs_human", line
    assert (
        gate.detail(tid)["task"]["needs_human"]["reason"] == "the submission changes protected paths: slug.py"
    )


def test_a_bad_protect_glob_is_refused_and_changes_nothing(live: Live, tmp_path: Path) -> None:
    gate, _ = _gate(live, tmp_path)
    before = gate.live.dump()
    r = gate.live.rest(
        "PUT", f"/api/projects/{gate.project}/verifier-config", pytest_config(protect=["../outside/*"])
    )
    assert r.status_code == 422 and r.json()["code"] == "E_VALIDATION", r.text
    assert "protect glob '../outside/*' must be relative to the checkout" in r.text
    assert gate.live.dump() == before


# -- rule 5: reports are the check's own ------------------------------------------------------


PASSING_REPORT = (
    '<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="1">'
    '<testcase classname="test_slug.TestSlugify" name="test_keeps_digits"/></testsuite></testsuites>'
)


def test_a_committed_report_fails_the_run_with_a_finding(live: Live, tmp_path: Path) -> None:
    gate, _ = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.repo.write({"slug.py": SLUGIFY, "reports/junit.xml": PASSING_REPORT})
    git(gate.repo.path, "add", "-f", "slug.py", "reports/junit.xml")
    git(gate.repo.path, "commit", "--quiet", "-m", "fix, with a report")
    gate.submit(tid, git(gate.repo.path, "rev-parse", "HEAD"))
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    finding = gate.detail(tid)["task"]["findings"][-1]
    assert "the commit holds the report file reports/junit.xml: the check writes it" in finding["details"]
    run = _run(gate, tid)
    assert run["checks"]["unit"]["report_problem"] == "committed"
    # the check wrote its own report: the criterion's evidence is the real run's
    assert run["evidence"]["AC-1.1"]["result"] == "pass"


def test_a_conftest_that_makes_the_check_exit_0_does_not_run_in_the_grading_run(
    live: Live, tmp_path: Path
) -> None:
    """The submission's conftest sets pytest's exit status to 0 over failing tests; the grading
    run takes the harness as the baseline has it (none), so the check fails as it is. The rule
    for a check that exits 0 over failed testcases is tests/unit/test_grading_rules.py's."""
    gate, _ = _gate(live, tmp_path, protect=[])  # the conftest alone would be held otherwise
    tid = gate.task([{"text": "empty stays empty", "kind": "test", "verify_ref": "test_slug.test_empty"}])
    gate.submit(tid, gate.repo.commit({"conftest.py": EXIT_ZERO}, "exit 0"))
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    run = _run(gate, tid)
    assert run["grading"]["removed"] == ["conftest.py"]
    assert run["checks"]["unit"]["exit_code"] == 1 and run["checks"]["unit"]["report_failed"] == 1
    assert run["evidence"]["AC-1.1"]["result"] == "pass"
    finding = gate.detail(tid)["task"]["findings"][-1]
    assert finding["summary"] == "1 check failed: unit"
    assert "check unit exited 1" in finding["details"]


STALE = """\
REPORT = '''__REPORT__'''


def pytest_unconfigure(config):
    import os

    path = os.path.join("reports", "junit.xml")
    with open(path, "w") as f:
        f.write(REPORT)
    os.utime(path, (1_000_000_000, 1_000_000_000))
"""


def test_a_conftest_that_writes_a_stale_report_does_not_run_in_the_grading_run(
    live: Live, tmp_path: Path
) -> None:
    """The submission's conftest writes a passing report dated before the check; the grading
    run leaves it out, so the check's own report stands. The rule for a report written before
    its check started is tests/unit/test_grading_rules.py's."""
    gate, _ = _gate(live, tmp_path, protect=[])
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(
        tid, gate.repo.commit({"conftest.py": STALE.replace("__REPORT__", PASSING_REPORT) + EXIT_ZERO})
    )
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    run = _run(gate, tid)
    assert run["grading"]["removed"] == ["conftest.py"]
    assert run["checks"]["unit"]["report_problem"] is None
    assert run["evidence"]["AC-1.1"]["result"] == "fail"


def test_the_fix_with_tests_in_a_new_file_verifies_and_the_test_file_is_marked(
    live: Live, tmp_path: Path
) -> None:
    gate, _ = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    extra = "from slug import slugify\n\n\ndef test_spaces():\n    assert slugify('a  b') == 'a-b'\n"
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY, "test_more.py": extra}, "fix and test"))
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    base = _run(gate, tid)["baseline"]
    assert base["changed"] == ["slug.py", "test_more.py"] and base["test_files"] == ["test_more.py"]
