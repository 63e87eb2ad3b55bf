"""Full and abbreviated commit ids: what a signed statement may name as its subject.

An agent may submit an abbreviation (7-64 hex digits). An in-toto DigestSet's `gitCommit` is the
full id only: 40 lowercase hex digits (SHA-1) or 64 (SHA-256). The verifier resolves the
abbreviation in its checkout and sends the full id with its finish; the server takes it only if
it is a full id that starts with what was submitted.
"""

from __future__ import annotations

import re

# As a pattern string too: the models' fields declare it (pydantic takes a string).
FULL_COMMIT_PATTERN = r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$"
FULL_COMMIT = re.compile(FULL_COMMIT_PATTERN)


def is_full(sha: str | None) -> bool:
    return sha is not None and FULL_COMMIT.fullmatch(sha) is not None


def resolution_problem(submitted: str, resolved: str) -> str | None:
    """Why `resolved` cannot be the full commit of the `submitted` one, or None."""
    if not is_full(resolved):
        return (
            f"commit {resolved[:80]!r} is not a full commit id (40 or 64 lowercase hex digits, as "
            "`git rev-parse HEAD` prints it)"
        )
    if not resolved.startswith(submitted):
        return f"commit {resolved} is not the submitted commit {submitted}: it does not start with it"
    return None


def full_commit(submitted: str, *resolved: str | None) -> str | None:
    """The full id of a submitted commit: the first full resolution that extends it, else the
    submitted id itself when it is full; None when only an abbreviation is known."""
    for sha in resolved:
        if sha is not None and resolution_problem(submitted, sha) is None:
            return sha
    return submitted if is_full(submitted) else None
