"""The verifier's look at each project's base branch, once per poll: a tip the server has not
seen yet is reported (the same route a git host's push webhook calls), which makes the verified
tasks on the old tip stale and puts them in the work queue."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from taskgate.domain.repos import is_remote
from taskgate.verifier.checkout import _LOCAL_UPLOAD_PACK, _TRUST_SOURCE, Git

Report = Callable[[str, str, str], dict[str, Any]]  # (project, ref, tip) -> the server's answer


def read_tip(git: Git, repo: str, branch: str) -> str | None:
    """The tip of `branch` in `repo` (None: no such branch, or the repository cannot be read).
    A local repository is read through upload-pack, as a checkout reads it."""
    ref = f"refs/heads/{branch}"
    if is_remote(repo):
        listed = git("ls-remote", repo, ref, ok=True)
    else:
        source = Path(repo).expanduser()
        if not source.is_dir():
            return None
        listed = git(
            "ls-remote", _LOCAL_UPLOAD_PACK, str(source.resolve()), ref, ok=True, config=_TRUST_SOURCE
        )
    for line in (listed or "").splitlines():
        sha, _, name = line.partition("\t")
        if name == ref:
            return sha
    return None


def notice_moves(git: Git, projects: Sequence[Mapping[str, Any]], report: Report) -> list[str]:
    """Report each project's base tip that moved since the server last heard of it; returns the
    lines to print (what moved, and how many verified tasks it made stale)."""
    said = []
    for q in projects:
        if not q.get("verification_on") or q.get("merge") == "none" or not q.get("repo"):
            continue
        branch = q.get("base_branch") or "main"
        tip = read_tip(git, q["repo"], branch)
        if tip is None or tip == q.get("base_tip"):
            continue
        out = report(q["project"], f"refs/heads/{branch}", tip)
        if q.get("base_tip") is None:
            continue  # the server learns the tip it had not heard of: nothing it knew moved
        stale = out.get("stale") or []
        said.append(
            f"{q['project']}: {branch} moved to {tip[:12]}"
            + (
                f"; {len(stale)} verified task{'s' if len(stale) != 1 else ''} to verify again"
                if stale
                else ""
            )
        )
    return said
