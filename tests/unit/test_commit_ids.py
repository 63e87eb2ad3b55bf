"""The one rule for commit ids: what may be submitted, and how an abbreviation is resolved in a
real repository (the server's submit check and the verifier's checkout both ask resolve_prefix)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from taskgate.domain.commit_ids import (
    GitQuery,
    Resolved,
    is_abbreviation,
    is_full,
    is_submitted,
    resolve_prefix,
)
from taskgate.service.commits import in_local_repo
from tests.verifier.support import AMBIGUOUS_PREFIX, ambiguous_commits, git


def _asker(repo: Path) -> tuple[list[tuple[str, ...]], GitQuery]:
    asked: list[tuple[str, ...]] = []

    def ask(*args: str) -> str | None:
        asked.append(args)
        done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
        return done.stdout if done.returncode == 0 else None

    return asked, ask


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.mark.parametrize(
    ("sha", "submitted", "full", "abbreviation"),
    [
        ("abcdef0", True, False, True),
        ("abcdef", False, False, False),
        ("a" * 40, True, True, False),
        ("a" * 64, True, True, False),
        ("a" * 63, True, False, True),
        ("a" * 65, False, False, False),
        ("ABCDEF0", False, False, False),
        ("abcdef0\n", False, False, False),
        ("abcdefg", False, False, False),
    ],
)
def test_one_pattern_decides_what_may_be_submitted(
    sha: str, submitted: bool, full: bool, abbreviation: bool
) -> None:
    assert (is_submitted(sha), is_full(sha), is_abbreviation(sha)) == (submitted, full, abbreviation)


def test_an_abbreviation_of_the_one_commit_resolves_to_its_full_id(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    _, ask = _asker(repo)
    assert resolve_prefix(ask, head[:7]) == Resolved("there", head)
    assert resolve_prefix(ask, head) == Resolved("there", head)
    assert in_local_repo(str(repo), head[:7]) == "there"


def test_a_branch_named_like_the_abbreviation_does_not_stand_for_another_commit(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "second")
    second = git(repo, "rev-parse", "HEAD")
    # A ref named like the first commit's abbreviation, pointing at the second: git's rev-parse
    # alone would answer the second commit for the first one's prefix.
    git(repo, "branch", first[:8], second)
    assert git(repo, "rev-parse", f"{first[:8]}^{{commit}}") == second
    asked, ask = _asker(repo)
    assert resolve_prefix(ask, first[:8]) == Resolved("there", first)
    assert ("rev-parse", f"--disambiguate={first[:8]}") in asked
    # A ref so named with no commit of that prefix behind it resolves to nothing.
    git(repo, "branch", "deadbeef", second)
    assert resolve_prefix(ask, "deadbeef") == Resolved("missing")
    assert in_local_repo(str(repo), "deadbeef") == "missing"


def test_a_prefix_two_commits_share_is_ambiguous(repo: Path) -> None:
    one, two = ambiguous_commits(repo)
    _, ask = _asker(repo)
    assert resolve_prefix(ask, AMBIGUOUS_PREFIX) == Resolved("ambiguous")
    assert in_local_repo(str(repo), AMBIGUOUS_PREFIX) == "ambiguous"
    # One more digit tells them apart again.
    longer = next(n for n in range(8, 41) if one[:n] != two[:n])
    assert resolve_prefix(ask, one[:longer]) == Resolved("there", one)


def test_a_blob_sharing_the_prefix_is_not_a_commit(repo: Path) -> None:
    blob = git(repo, "hash-object", "-w", "a.txt")
    _, ask = _asker(repo)
    assert resolve_prefix(ask, blob[:10]) == Resolved("missing")


def test_a_directory_that_is_no_repository_cannot_tell(tmp_path: Path) -> None:
    _, ask = _asker(tmp_path)
    assert resolve_prefix(ask, "abcdef0") == Resolved("unknown")
    assert in_local_repo(str(tmp_path), "abcdef0") is None
