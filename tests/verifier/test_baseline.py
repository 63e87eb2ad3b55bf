"""The baseline a submission is judged against: the merge-base of the submitted commit with the
base branch, found in real git repositories (local and served over git's file protocol)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from taskgate.domain.verifier_config import VerifierConfig
from taskgate.verifier.checkout import checkout
from tests.verifier.support import git


def _repo(path: Path, branch: str = "main") -> Path:
    path.mkdir()
    git(path, "init", "--quiet", f"--initial-branch={branch}")
    (path / "a.py").write_text("A = 1\n")
    (path / "b.py").write_text("B = 1\n")
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "base")
    return path


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def test_the_baseline_is_the_merge_base_and_the_tip_is_the_branch_now(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    fork = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "-b", "work")
    sub = _commit(repo, {"a.py": "A = 2\n", "tests/test_a.py": "def test_a(): pass\n"}, "work")
    git(repo, "checkout", "--quiet", "main")
    tip = _commit(repo, {"b.py": "B = 2\n"}, "main moves on")
    with checkout(str(repo), sub) as co:
        base = co.baseline(None)
        assert (base.branch, base.tip, base.commit, base.why) == ("main", tip, fork, None)
        # b.py changed on main since, not in the submission: not the submission's change
        assert co.changed_paths(base) == ["a.py", "tests/test_a.py"]


def test_a_named_branch_wins_and_a_missing_one_is_said(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    git(repo, "branch", "release")
    sub = _commit(repo, {"a.py": "A = 3\n"}, "on main")
    with checkout(str(repo), sub) as co:
        release = co.baseline("release")
        assert release.branch == "release" and release.commit == git(repo, "rev-parse", "release")
        missing = co.baseline("no-such")
        assert (missing.branch, missing.commit) == (None, None)
        assert missing.why == "the repository has no base branch no-such"


def test_without_main_the_head_branch_is_the_base(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r", branch="trunk")
    fork = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "-b", "work")
    sub = _commit(repo, {"a.py": "A = 4\n"}, "work")
    git(repo, "checkout", "--quiet", "trunk")
    with checkout(str(repo), sub) as co:
        base = co.baseline(None)
        assert (base.branch, base.commit) == ("trunk", fork)


def test_unrelated_history_has_no_baseline_and_every_path_is_changed(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    git(repo, "checkout", "--quiet", "--orphan", "other")
    git(repo, "rm", "-rf", "--quiet", ".")
    sub = _commit(repo, {"c.py": "C = 1\n", "d/e.py": "E = 1\n"}, "unrelated")
    with checkout(str(repo), sub) as co:
        base = co.baseline(None)
        assert base.branch == "main" and base.commit is None
        assert base.why == "the submitted commit shares no history with main"
        assert co.changed_paths(base) == ["c.py", "d/e.py"]


def test_a_deep_branch_is_found_past_the_shallow_fetch(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    fork = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "-b", "work")
    for i in range(205):  # deeper than the first, shallow fetch
        git(repo, "commit", "--quiet", "--allow-empty", "-m", f"w{i}")
    sub = git(repo, "rev-parse", "HEAD")
    with checkout(f"file://{repo}", sub) as co:
        assert co.baseline("main").commit == fork


def test_the_config_takes_a_base_branch_or_the_reviewers() -> None:
    assert VerifierConfig().base_branch_choice() is None
    assert VerifierConfig(reviewer={"base_branch": "dev"}).base_branch_choice() == "dev"
    both = VerifierConfig(base_branch="trunk", reviewer={"base_branch": "dev"})
    assert both.base_branch_choice() == "trunk"
    with pytest.raises(ValidationError):
        VerifierConfig(base_branch="main..x:y")
