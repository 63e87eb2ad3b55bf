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
import stat
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


# What a stamp is made of: per file, (inode, size, mtime, ctime) or None where it is missing.
Stamp = tuple[tuple[int, int, int, int] | None, ...]


def _git_dirs(path: str) -> tuple[str, str] | None:
    """The repository's git directory and common directory (where refs live), found as git finds
    them for a working tree (`.git` a directory, or a file naming it: a linked worktree) or a bare
    repository; None when it is neither."""
    dot = os.path.join(path, ".git")
    if os.path.isdir(dot):
        gitdir = dot
    elif (head := _small_file(dot)) is not None:
        if not head.startswith("gitdir:"):
            return None
        gitdir = os.path.join(path, head[len("gitdir:") :].strip())
    elif os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "refs")):
        gitdir = path
    else:
        return None
    common = _small_file(os.path.join(gitdir, "commondir"))
    return gitdir, os.path.join(gitdir, common.strip()) if common is not None else gitdir


def _small_file(name: str) -> str | None:
    """The start of a regular file, or None. Opened without blocking and checked after opening:
    the repository is the agents', and a FIFO put where a file belongs would otherwise hold the
    request that reads it for good."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, 4096).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def tip_stamp(repo: str, branch: str | None) -> Stamp | None:
    """A stamp of the files git keeps a branch's tip in (the loose ref, packed-refs, the reftable
    list, HEAD), read with stat only: no subprocess, a few microseconds. Git moves a ref by
    writing a new file and renaming it over the old, and even a write in place changes the ctime,
    which no process of the repository's owner can set back: while the stamp is the same, the tip
    is. None: no stamp to be had (not a local repository git's way, an odd branch name)."""
    if not is_local(repo) or (branch is not None and (".." in branch or branch.startswith(("/", "-")))):
        return None
    path = os.path.expanduser(repo)
    dirs = _git_dirs(path)
    if dirs is None:
        return None
    gitdir, common = dirs
    files = [
        os.path.join(gitdir, "HEAD"),
        os.path.join(common, "packed-refs"),
        os.path.join(common, "reftable", "tables.list"),
        *([os.path.join(common, "refs", "heads", branch)] if branch else []),
    ]
    out: list[tuple[int, int, int, int] | None] = []
    for name in files:
        try:
            st = os.stat(name)  # a symlink's target: where a write would show
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


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
