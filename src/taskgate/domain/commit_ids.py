"""Full and abbreviated commit ids: what an agent may submit, how an abbreviation is resolved in a
repository, and what a signed statement may name as its subject.

An agent may submit an abbreviation (7-64 lowercase hex digits). An in-toto DigestSet's `gitCommit` is the
full id only: 40 lowercase hex digits (SHA-1) or 64 (SHA-256). The verifier resolves the
abbreviation in its checkout and sends the full id with its finish; the server takes it only if
it is a full id that starts with what was submitted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import StringConstraints

# The one spelling of a full commit id: as a string (pydantic and JSON Schema take one), compiled
# (match it with `fullmatch`, or `is_full`: `$` alone lets a trailing newline through), and as
# `Sha`, the type of every model field that holds a full commit id.
FULL_COMMIT_PATTERN = r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$"
FULL_COMMIT = re.compile(FULL_COMMIT_PATTERN)
Sha = Annotated[str, StringConstraints(pattern=FULL_COMMIT_PATTERN)]


SUBMITTED_MIN, SUBMITTED_MAX = 7, 64
SUBMITTED_PATTERN = rf"^[0-9a-f]{{{SUBMITTED_MIN},{SUBMITTED_MAX}}}$"
SUBMITTED = re.compile(SUBMITTED_PATTERN)
SUBMITTED_RULE = f"a git commit hash ({SUBMITTED_MIN}-{SUBMITTED_MAX} hex digits)"

# Objects looked at when resolving an abbreviation: more than this sharing a prefix is an
# abbreviation too short to name one commit.
PREFIX_CANDIDATES = 8


def is_full(sha: str | None) -> bool:
    return sha is not None and FULL_COMMIT.fullmatch(sha) is not None


def is_submitted(sha: str | None) -> bool:
    """Whether `sha` may be submitted as a commit: a full id or an abbreviation of one."""
    return sha is not None and SUBMITTED.fullmatch(sha) is not None


def is_abbreviation(sha: str | None) -> bool:
    """A submitted id that is not a full one: what a statement names when nobody resolved it."""
    return is_submitted(sha) and not is_full(sha)


# Runs `git <args>` in the repository and answers its stdout, or None when git exited non-zero.
# A git that could not run at all (no binary, a timeout) is the caller's to raise.
GitQuery = Callable[..., str | None]


@dataclass(frozen=True)
class Resolved:
    """What a repository says of a submitted id: `there` (exactly one commit, `commit` its full
    id), `missing` (none), `ambiguous` (more than one commit starts with it) or `unknown` (git
    could not list the objects: no repository, or one it will not read)."""

    found: Literal["there", "missing", "ambiguous", "unknown"]
    commit: str | None = None


def resolve_prefix(git: GitQuery, sha: str) -> Resolved:
    """The one commit whose id starts with `sha`, asked of a repository through `git`.

    `rev-parse <name>^{commit}` alone is not that: git reads a name as a ref before it reads it
    as an abbreviated object id, so a branch or tag named like the abbreviation
    (`git branch 1a2b3c4d <other commit>`) would stand for another commit, and a name with no
    commit behind it would still resolve. What rev-parse finds is kept only when it is a commit
    that starts with `sha`; otherwise the objects of that prefix are listed and the one commit
    among them is taken."""
    found = git("rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}")
    if found is not None and found.strip().startswith(sha):
        return Resolved("there", found.strip())
    listed = git("rev-parse", f"--disambiguate={sha}")
    if listed is None:
        return Resolved("unknown")
    oids = listed.split()
    if len(oids) > PREFIX_CANDIDATES:
        return Resolved("ambiguous")
    commits = [oid for oid in oids if (git("cat-file", "-t", oid) or "").strip() == "commit"]
    if len(commits) == 1:
        return Resolved("there", commits[0])
    return Resolved("ambiguous" if commits else "missing")


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
