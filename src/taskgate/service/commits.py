"""Whether a submitted commit is in the project's repository, where the server can tell cheaply:
the repo is a local path that exists (`taskgate serve` on the machine the agents work on). Then
a commit that is not there is refused at submit_task, before anyone waits for a verifier to say
so. Anything else (a remote URL, no git, a path that is not a repository or that git will not
read as this user, a slow disk) is "cannot tell", and the verifier finds out.

I/O (a subprocess), so not in domain/. Git runs without hooks and without the server's
environment: the repository is the agents', the server's keys are not theirs to see.
"""

from __future__ import annotations

import os
import subprocess

from taskgate.domain.repos import is_remote

TIMEOUT_S = 3.0
_GIT_SAYS_MISSING = 1  # `rev-parse --verify --quiet`: no such object (128: no repository, ...)


def in_local_repo(repo: str, sha: str) -> bool | None:
    """True: the commit is there. False: the repository is there and the commit is not. None:
    cannot tell cheaply."""
    if not repo or is_remote(repo):
        return None
    # os.path, not pathlib: the same answer, without building a Path on every submit.
    path = os.path.expanduser(repo)
    if not os.path.isdir(path):
        return None
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }
    cmd = [
        "git",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "rev-parse",
        "--verify",
        "--quiet",
        f"{sha}^{{commit}}",
    ]
    try:
        done = subprocess.run(cmd, cwd=path, env=env, capture_output=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode == 0:
        return True
    return False if done.returncode == _GIT_SAYS_MISSING else None
