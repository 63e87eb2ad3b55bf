"""What a project's `repo` names: a remote URL (fetched) or a local path (read in place)."""

from __future__ import annotations

import re

_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")


def is_remote(repo: str) -> bool:
    """A URL (`https://`, `ssh://`, `file://` ...) or git's scp-like `user@host:path`."""
    return "://" in repo or bool(_SCP_LIKE.match(repo))
