"""The change-sensitivity run's tree and the loading and guard steps, on real git repositories and
a real checkout: the verifier's steps before any check runs (verifier/steps/sensitivity.py,
loading.py, guards.py), run in the pipeline's order on a run state of the server's work item."""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from taskgate.verifier.state import Gathered, RunState, Verifier, Work
from taskgate.verifier.steps import (
    baseline,
    checkout,
    grading,
    guards,
    loading,
    merge,
    screen,
    sensitivity,
    without_change,
)
from tests.verifier.support import Repo

CHECK = {"command": "pytest --junitxml=r.xml", "report": {"path": "r.xml", "format": "junit"}}
LIB = """\
def slugify(text):
    text = text.strip()
    return text.lower()


def unrelated(x):
    return x
"""
TESTS = "from lib import slugify\n\n\ndef test_lower():\n    assert slugify('A') == 'a'\n"
OTHER_TESTS = "def test_other():\n    assert True\n"


def _criterion(ref: str, *, guard: bool = False) -> dict[str, Any]:
    return {"id": "AC-1.1", "text": "t", "kind": "test", "verify_ref": ref, "guard": guard}


def _prepared(repo: Repo, sha: str, ref: str = "test_lib.test_lower", *, guard: bool = False) -> RunState:
    """Every step up to the hand-over that these rules need, on `sha` as submitted."""
    item = {
        "repo": str(repo.path),
        "commit_sha": sha,
        "config": {"checks": {"unit": CHECK}},
        "criteria": [_criterion(ref, guard=guard)],
        "guards": ["AC-1.1"] if guard else [],
    }
    work = Work.of(item)
    assert work.config is not None
    stack = ExitStack()
    state = RunState(Verifier(env=dict(os.environ)), work, work.config, stack, Gathered())
    for step in (
        checkout.fetch,
        baseline.find,
        screen.read,
        loading.read,
        guards.check,
        merge.merge,
        without_change.keep,
        grading.prepare,
        sensitivity.prepare,
    ):
        step(state)
    return state


def _repo(tmp_path: Path) -> Repo:
    repo = Repo.create(
        tmp_path / "repo",
        {"lib.py": LIB, "test_lib.py": TESTS, "test_other.py": OTHER_TESTS, "conftest.py": ""},
    )
    repo.branch("work")
    return repo


def test_the_stubbed_tree_stubs_the_changed_function_and_keeps_the_named_tests_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sha = repo.commit({"lib.py": LIB.replace("text.lower()", "text.lower().replace(' ', '-')")})
    state = _prepared(repo, sha)
    try:
        tree = state.stubbed
        assert tree is not None
        assert tree.functions == ["lib.py: slugify"]
        stubbed = (tree.path / "lib.py").read_text()
        assert "taskgate: stubbed out" in stubbed.split("def unrelated")[0]
        assert stubbed.split("def unrelated")[1] == "(x):\n    return x\n"  # untouched, byte for byte
        # the named tests' file and the harness stay; another test file goes
        assert (tree.path / "test_lib.py").is_file() and (tree.path / "conftest.py").is_file()
        assert not (tree.path / "test_other.py").exists()
        # the checkout itself is untouched
        assert (state.checkout.path / "test_other.py").is_file()
        assert "taskgate" not in (state.checkout.path / "lib.py").read_text()
    finally:
        state.stack.close()


def test_a_change_that_only_deletes_lines_stubs_the_function_they_left(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sha = repo.commit({"lib.py": LIB.replace("    text = text.strip()\n", "")})
    state = _prepared(repo, sha)
    try:
        assert state.stubbed is not None and state.stubbed.functions == ["lib.py: slugify"]
    finally:
        state.stack.close()


def test_a_ref_no_test_file_is_seen_to_define_keeps_every_test_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sha = repo.commit({"lib.py": LIB.replace("return x", "return x or None")})
    state = _prepared(repo, sha, ref="test_made_at_run_time")
    try:
        assert state.stubbed is not None and state.stubbed.functions == ["lib.py: unrelated"]
        assert (state.stubbed.path / "test_other.py").is_file() and (
            state.stubbed.path / "test_lib.py"
        ).is_file()
    finally:
        state.stack.close()


def test_a_change_to_a_constant_says_the_check_did_not_apply(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sha = repo.commit({"lib.py": "SEPARATOR = '-'\n\n\n" + LIB, "data/cases.csv": "a,b\n"})
    state = _prepared(repo, sha)
    try:
        assert state.stubbed is None
        assert state.report.sensitivity is not None and state.report.sensitivity.functions == []
        assert state.report.sensitivity.note == sensitivity.NO_FUNCTION
    finally:
        state.stack.close()


def test_a_guard_is_not_stubbed_and_must_be_the_baselines(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sha = repo.commit({"lib.py": LIB.replace("text.lower()", "text.casefold()")})
    held = _prepared(repo, sha, guard=True)
    try:
        assert held.stubbed is None and held.report.missing_guards == []
    finally:
        held.stack.close()
    sha = repo.commit({"test_new.py": "def test_typo():\n    pass\n"})
    typo = _prepared(repo, sha, ref="test_new.test_typo", guard=True)
    try:
        assert typo.report.missing_guards == ["AC-1.1"]  # the commit's own test does not count
    finally:
        typo.stack.close()


def test_loading_names_committed_bytecode_and_a_link_and_nothing_for_source(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo.path / "__pycache__").mkdir()
    (repo.path / "__pycache__/lib.cpython-311.pyc").write_bytes(b"\xa7\r\r\n\x01\x00\x00\x00" + bytes(8))
    (repo.path / "vendor.txt").write_text(LIB)
    (repo.path / "fast.py").symlink_to("vendor.txt")
    sha = repo.commit({"lib.py": LIB + "\n\ndef more():\n    return 1\n"})
    state = _prepared(repo, sha)
    try:
        found = {(h.path, h.kind) for h in state.report.loading}
        assert found == {("__pycache__/lib.cpython-311.pyc", "bytecode"), ("fast.py", "symlink")}
        assert state.changes == ["__pycache__/lib.cpython-311.pyc", "fast.py", "lib.py", "vendor.txt"]
    finally:
        state.stack.close()


def test_a_test_file_the_named_tests_import_stays_in_the_stubbed_tree(tmp_path: Path) -> None:
    """Removing it would break the named test for a reason that is not the stub."""
    repo = _repo(tmp_path)
    cases = (
        "CASES = [('A', 'a')]\n\n\ndef test_cases_are_pairs():\n    assert all(len(c) == 2 for c in CASES)\n"
    )
    named = "from lib import slugify\nfrom test_cases import CASES\n\n\ndef test_pairs():\n    assert CASES\n"
    sha = repo.commit(
        {"test_cases.py": cases, "test_new.py": named, "lib.py": LIB.replace("strip()", "strip(' ')")}
    )
    state = _prepared(repo, sha, ref="test_new.test_pairs")
    try:
        assert state.stubbed is not None
        assert (state.stubbed.path / "test_cases.py").is_file() and (
            state.stubbed.path / "test_new.py"
        ).is_file()
        assert not (state.stubbed.path / "test_other.py").exists()
    finally:
        state.stack.close()
