"""Placing hidden tests in a real checkout: fetched from a real repository by branch or commit,
the submission's own files at `into` replaced, and nothing written through its symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from taskgate.domain.verifier_config import HiddenTests
from taskgate.verifier import hidden
from taskgate.verifier.checkout import checkout
from tests.verifier.support import Repo, git


def _hidden(tmp_path: Path) -> tuple[Repo, str]:
    repo = Repo.create(tmp_path / "hidden", {"test_h.py": "def test_h():\n    assert True\n"})
    return repo, git(repo.path, "rev-parse", "HEAD")


def test_a_branch_or_a_commit_is_placed_over_what_the_submission_holds_there(tmp_path: Path) -> None:
    hrepo, first = _hidden(tmp_path)
    later = hrepo.commit({"test_h2.py": "def test_h2():\n    assert True\n"}, "more")
    sub = Repo.create(tmp_path / "sub", {"hidden/conftest.py": "raise SystemExit(0)\n", "a.py": "A = 1\n"})
    sha = git(sub.path, "rev-parse", "HEAD")
    with checkout(str(sub.path), sha) as co:
        placed = hidden.place(HiddenTests(repo=str(hrepo.path), ref=first, into="hidden"), co)
        assert placed.commit == first
        assert placed.files == ("hidden/test_h.py",)
        assert not (co.path / "hidden" / "conftest.py").exists()
        again = hidden.place(HiddenTests(repo=str(hrepo.path), ref="main", into="hidden"), co)
        assert again.commit == later and again.files == ("hidden/test_h.py", "hidden/test_h2.py")
        assert not (co.path / "hidden" / ".git").exists()


def test_a_symlink_on_the_way_to_into_is_refused_and_nothing_is_written_outside(tmp_path: Path) -> None:
    hrepo, _ = _hidden(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    sub = Repo.create(tmp_path / "sub", {"a.py": "A = 1\n"})
    os.symlink(outside, sub.path / "tests")
    sha = sub.commit({}, "tests is a symlink")
    with checkout(str(sub.path), sha) as co:
        assert (co.path / "tests").is_symlink()
        with pytest.raises(hidden.HiddenError) as refused:
            hidden.place(HiddenTests(repo=str(hrepo.path), ref="main", into="tests/hidden"), co)
        assert str(refused.value) == (
            "hidden tests cannot be placed at tests/hidden: the submission holds a symlink at tests"
        )
        # `into` itself as a symlink is replaced, never written through.
        os.symlink(outside, co.path / "hidden")
        hidden.place(HiddenTests(repo=str(hrepo.path), ref="main", into="hidden"), co)
        assert (co.path / "hidden").is_dir() and not (co.path / "hidden").is_symlink()
    assert list(outside.iterdir()) == []


def test_a_missing_repository_or_ref_is_said(tmp_path: Path) -> None:
    hrepo, _ = _hidden(tmp_path)
    sub = Repo.create(tmp_path / "sub", {"a.py": "A = 1\n"})
    with checkout(str(sub.path), git(sub.path, "rev-parse", "HEAD")) as co:
        # What reaches the server (and the executor's history) never says where they live.
        with pytest.raises(hidden.HiddenError) as missing:
            hidden.place(HiddenTests(repo="/no/such", ref="main", into="hidden"), co)
        assert str(missing.value) == "hidden tests: the configured repository was not found"
        assert missing.value.detail == "no directory /no/such"
        with pytest.raises(hidden.HiddenError) as no_ref:
            hidden.place(HiddenTests(repo=str(hrepo.path), ref="nope", into="hidden"), co)
        assert str(no_ref.value) == "hidden tests: cannot fetch nope from the configured repository"
        assert no_ref.value.detail.startswith("git fetch failed")


@pytest.mark.parametrize(
    "bad",
    [
        {"into": "../up"},
        {"into": "/abs"},
        {"into": "."},
        {"into": ".git/x"},
        {"ref": "--upload-pack=evil"},
        {"repo": "--upload-pack=evil"},
        {"reveal": "everything"},
    ],
)
def test_a_bad_hidden_tests_config_is_refused(bad: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        HiddenTests.model_validate({"repo": "/srv/h.git", "ref": "main", "into": "hidden", **bad})
