"""A conflict's finding tells the executor a command that works for the project's repository as
configured: fetched from by its path or URL, so a local path (which has no `origin`) works, in
the repository itself or in any clone of it, whatever its remotes are called."""

from __future__ import annotations

import subprocess
from pathlib import Path

from taskgate.domain.merging import MergeConflict, conflict_summary

TIP = "9f8e7d6c5b4a" + "0" * 28


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _command(summary: str) -> str:
    return summary.split("(git fetch ", 1)[1].split("), resolve", 1)[0]


def test_the_command_names_the_repository_as_configured() -> None:
    c = MergeConflict(mode="merge", branch="main", tip=TIP, paths=["conf.py"])
    local = conflict_summary("1a2b3c4d5e6f", c, "/home/me/src/my app")
    assert "(git fetch '/home/me/src/my app' main && git rebase FETCH_HEAD)" in local
    assert "origin" not in local
    url = conflict_summary("1a2b3c4d5e6f", c, "https://example.com/me/app.git")
    assert "git fetch https://example.com/me/app.git main && git rebase FETCH_HEAD" in url
    assert "git fetch <the project's repository> main" in conflict_summary("1a2b3c4d5e6f", c)


def test_the_command_works_in_the_local_repository_itself(tmp_path: Path) -> None:
    """Run as the finding says, in the project's own repository (no remote at all): the work is
    rebased onto the current main."""
    repo = tmp_path / "my app"
    repo.mkdir()
    _git(repo, "init", "--quiet", "--initial-branch=main")
    _git(repo, "config", "user.email", "a@b.c")
    _git(repo, "config", "user.name", "a")
    (repo / "a.txt").write_text("a\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "--quiet", "-m", "base")
    _git(repo, "checkout", "--quiet", "-b", "work")
    (repo / "b.txt").write_text("b\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "--quiet", "-m", "work")
    _git(repo, "checkout", "--quiet", "main")
    (repo / "c.txt").write_text("c\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "--quiet", "-m", "main moves")
    tip = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "--quiet", "work")
    c = MergeConflict(mode="merge", branch="main", tip=tip, paths=["b.txt"])
    command = "git fetch " + _command(conflict_summary("1a2b3c4d5e6f", c, str(repo)))
    subprocess.run(["bash", "-c", command], cwd=repo, check=True, capture_output=True)
    assert _git(repo, "merge-base", "HEAD", "main") == tip
    assert (repo / "b.txt").is_file() and (repo / "c.txt").is_file()
