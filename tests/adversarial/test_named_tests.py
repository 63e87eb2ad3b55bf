"""Named tests are judged by the baseline's version: a real `taskgate serve`, real git commits on
a work branch off `main`, `taskgate verify` running a real pytest check. A submission that
changes the file defining a named test is run a second time with that file as it is at the
baseline; a named test that passes only as the submission edited it holds the task for a human.
The honest controls verify with no human, and the fix alone runs the check once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.live import Live, serving
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

NAMED = 'assert slugify("Route 66") == "route-66"'
# A test added beside the named ones, in the same class of the same file.
BESIDE = SLUGIFY_TESTS.replace(
    "    def test_lowercases(self):",
    '    def test_keeps_inner_digits(self):\n        assert slugify("a1b") == "a1b"\n\n'
    "    def test_lowercases(self):",
)
REASON = (
    "the submission's edits to its named tests are what make them pass: AC-1.1 passes with the "
    "submission's test files and not with the baseline's (test_slug.py): fail"
)


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()  # the checks may run as another user, who must reach the repositories


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-named"))


def _gate(live: Live, tmp_path: Path) -> Gate:
    """`main` holds the broken slugify and its tests; the executor works on a branch `work`."""
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": BROKEN, "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"}
    )
    repo.branch("work")
    return Gate.create(live, repo, pytest_config())


def _submit(live: Live, tmp_path: Path, files: dict[str, str]) -> tuple[Gate, str, dict[str, Any]]:
    gate = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit(files, "the change"))
    [line] = gate.verify_json()
    return gate, tid, line


@pytest.mark.parametrize(
    "edited",
    [
        pytest.param(SLUGIFY_TESTS.replace(NAMED, 'assert slugify("Route 66") == "route"'), id="expected"),
        pytest.param(SLUGIFY_TESTS.replace(NAMED, "assert True"), id="assert-true"),
    ],
)
def test_a_named_test_edited_to_pass_the_broken_code_is_held_for_a_human(
    live: Live, tmp_path: Path, edited: str
) -> None:
    assert edited != SLUGIFY_TESTS
    gate, tid, line = _submit(live, tmp_path, {"test_slug.py": edited})  # slugify still broken
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    assert "second_run_s" in line["timings"]
    task = gate.detail(tid)["task"]
    held = task["needs_human"]
    assert held["why"] == "tests_edited"
    assert held["reason"] == REASON
    assert "test_slug.py" in held["diff"] and f"-        {NAMED}" in held["diff"]
    assert task["attempts_used"] == 0
    [run] = gate.detail(tid)["runs"]
    assert run["status"] == "needs_human" and run["summary"] == REASON
    evidence = run["evidence"]["AC-1.1"]
    # both results: the baseline's test fails on the submitted code, the edited one passed
    assert evidence["result"] == "fail"
    assert evidence["restored"]["submitted"] == "pass"
    assert evidence["restored"]["files"] == ["test_slug.py"]


def test_the_fix_with_tests_added_beside_the_named_ones_verifies(live: Live, tmp_path: Path) -> None:
    gate, tid, line = _submit(live, tmp_path, {"slug.py": SLUGIFY, "test_slug.py": BESIDE})
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    [run] = gate.detail(tid)["runs"]
    evidence = run["evidence"]["AC-1.1"]
    # judged by the second run: the baseline's named test passes on the submitted code
    assert evidence["result"] == "pass"
    assert evidence["restored"]["submitted"] == "pass"
    assert evidence["restored"]["files"] == ["test_slug.py"]
    assert '+        assert slugify("a1b")' in evidence["restored"]["diff"]


def test_the_fix_alone_runs_the_check_once(live: Live, tmp_path: Path) -> None:
    gate, tid, line = _submit(live, tmp_path, {"slug.py": SLUGIFY})
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    assert "second_run_s" not in line["timings"] and "checks_s" in line["timings"]
    [run] = gate.detail(tid)["runs"]
    assert run["evidence"]["AC-1.1"]["result"] == "pass"
    assert run["evidence"]["AC-1.1"]["restored"] is None


def test_the_test_file_made_a_link_is_restored_in_its_place(live: Live, tmp_path: Path) -> None:
    """The gated agent replaces the named test's file with a link to a gutted copy: the second
    tree puts the baseline's file back in place of the link, never writing through it."""
    gate = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.repo.write({"fixtures/slug_cases.txt": SLUGIFY_TESTS.replace(NAMED, "assert True")})
    target = gate.repo.path / "test_slug.py"
    target.unlink()
    target.symlink_to("fixtures/slug_cases.txt")
    gate.submit(tid, gate.repo.commit({}, "link the test file"))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    # The link is also a file the verifier cannot read as source (domain/loading.py): that hold
    # names the path, and the reason says both rules.
    assert (task["needs_human"]["why"], task["needs_human"]["paths"]) == ("held", ["test_slug.py"])
    assert task["needs_human"]["reason"] == (
        "the submission adds files the verifier cannot read as source: test_slug.py (symlink to "
        "fixtures/slug_cases.txt). A human decides: send it back to the executor, or allow it and "
        f"verify again; and {REASON}"
    )
    [run] = gate.detail(tid)["runs"]
    assert run["evidence"]["AC-1.1"]["restored"]["submitted"] == "pass"


def test_an_edited_named_test_reopened_with_findings_uses_the_attempt(live: Live, tmp_path: Path) -> None:
    gate, tid, line = _submit(live, tmp_path, {"test_slug.py": SLUGIFY_TESTS.replace(NAMED, "assert True")})
    assert line["verdict"] == "needs_human", line
    r = gate.live.rest("POST", f"/api/tasks/{tid}/reopen", {"findings": ["fix slugify, not its test"]})
    assert r.status_code == 200, r.text
    task = gate.detail(tid)["task"]
    assert (task["status"], task["attempts_used"]) == ("ready", 1)
    assert task["attempts"][0]["ending"] == "reopened" and task["needs_human"] is None
    assert task["findings"][-1]["summary"] == "fix slugify, not its test"
