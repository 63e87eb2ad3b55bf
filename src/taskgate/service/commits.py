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
from typing import Literal

from taskgate.domain.repos import is_remote

TIMEOUT_S = 3.0
_GIT_SAYS_MISSING = 1  # `rev-parse --verify --quiet`: no such object (128: no repository, ...)
_PREFIX_CANDIDATES = 8  # objects sharing the prefix looked at; more: no one commit is named


# What the local repository says of a submitted commit: there (one commit has that id or
# prefix), missing (none), ambiguous (an abbreviation more than one commit starts with).
Found = Literal["there", "missing", "ambiguous"]


def in_local_repo(repo: str, sha: str) -> Found | None:
    """Whether the repository holds the commit; None: cannot tell cheaply."""
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

    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args]
        try:
            return subprocess.run(
                cmd, cwd=path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None

    done = git("rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}")
    if done is None:
        return None
    if done.returncode == 0 and done.stdout.strip().startswith(sha):
        return "there"
    if done.returncode not in (0, _GIT_SAYS_MISSING):
        return None
    # git read the name as a ref (a branch or tag named like the abbreviation, which may name
    # another commit or none that starts with it), or found nothing: the commit is there only
    # if exactly one commit object has this prefix (what the verifier checks out,
    # verifier/checkout.py `_commit_object`).
    listed = git("rev-parse", f"--disambiguate={sha}")
    if listed is None or listed.returncode != 0:
        return None
    oids = listed.stdout.split()
    if len(oids) > _PREFIX_CANDIDATES:
        return "ambiguous"
    kinds = [git("cat-file", "-t", oid) for oid in oids]
    if any(k is None for k in kinds):
        return None
    commits = sum(1 for k in kinds if k is not None and k.stdout.strip() == "commit")
    return "there" if commits == 1 else "ambiguous" if commits else "missing"
