"""Whether a submitted commit is in the project's repository, where the server can tell cheaply:
the repo is a local path that exists (`taskgate serve` on the machine the agents work on). Then
a commit that is not there is refused at submit_task, before anyone waits for a verifier to say
so. Anything else (a remote URL, no git, a path that is not a repository or that git will not
read as this user, a slow disk) is "cannot tell", and the verifier finds out. The base branch's
tip is read here too: when a task is claimed (the baseline of a submission committed straight
onto that branch, which the verifier cannot find afterwards), and when a verdict on a tip is
shown or accepted (service/staleness.py seen_base: a moved tip makes it stale, verifier or not).

I/O (a subprocess), so not in domain/. Git runs without hooks and without the server's
environment: the repository is the agents', the server's keys are not theirs to see.
"""

from __future__ import annotations

import os
import subprocess
from typing import Literal

from taskgate.domain.commit_ids import GitQuery, is_full, resolve_prefix
from taskgate.domain.models import ClaimTip
from taskgate.domain.repos import is_remote

TIMEOUT_S = 3.0


class _CannotRun(Exception):
    """git did not answer (not installed, too slow): nothing is known about the commit."""


# What the local repository says of a submitted commit: there (one commit has that id or
# prefix), missing (none), ambiguous (an abbreviation more than one commit starts with).
Found = Literal["there", "missing", "ambiguous"]


def is_local(repo: str) -> bool:
    """Whether `repo` names a local path this server can look in (it may still not be a
    repository git reads)."""
    return bool(repo) and not is_remote(repo) and os.path.isdir(os.path.expanduser(repo))


def _local_git(repo: str) -> GitQuery | None:
    """git in the local repository `repo` (stdout, or None when it failed), or None when the
    repository is not a local path this server can read."""
    if not is_local(repo):
        return None
    path = os.path.expanduser(repo)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }

    def git(*args: str) -> str | None:
        cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args]
        try:
            done = subprocess.run(
                cmd, cwd=path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _CannotRun from exc
        return done.stdout if done.returncode == 0 else None

    return git


def in_local_repo(repo: str, sha: str) -> Found | None:
    """Whether the repository holds the commit; None: cannot tell cheaply."""
    git = _local_git(repo)
    if git is None:
        return None
    try:
        found = resolve_prefix(git, sha).found
    except _CannotRun:
        return None
    return None if found == "unknown" else found


def base_tip(repo: str, choice: str | None) -> ClaimTip | None:
    """The base branch's tip in the local repository now: `choice` (a human named it), else
    `main`, else the branch HEAD names, as the verifier chooses. None: cannot tell (not a local
    repository, no such branch, git did not answer)."""
    git = _local_git(repo)
    if git is None:
        return None
    try:
        names = (
            [choice]
            if choice
            else ["main", (git("symbolic-ref", "--quiet", "--short", "HEAD") or "").strip()]
        )
        for name in names:
            if not name or name.startswith("-"):
                continue
            tip = git("rev-parse", "--verify", "--quiet", "--end-of-options", f"refs/heads/{name}^{{commit}}")
            if tip and is_full(tip.strip()):
                return ClaimTip(branch=name, commit=tip.strip())
    except _CannotRun:
        return None
    return None
