"""What `verified` holds for when the verifier checks the submission merged onto the base: the
base a verdict was reached on, the finding a conflict gives, and when a verdict is stale.

With `merge` (or `rebase`), a verdict holds for the submission merged onto one tip of the base
branch. A conflict is the executor's to fix and costs no attempt; a verdict whose tip is no
longer the branch's tip is stale until a run on the new tip confirms or undoes it.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taskgate.domain.commit_ids import Sha

if TYPE_CHECKING:
    from taskgate.domain.models import Task

MergeMode = Literal["merge", "rebase", "none"]
# A task that conflicts this many times in a row waits for a human: its executors keep
# submitting work that does not merge, and another attempt alone will not fix that.
CONFLICTS_TO_NEEDS_HUMAN = 3
# A conflict's finding names this many paths; the rest are counted.
CONFLICT_PATHS_SHOWN = 20


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MergedBase(_Model):
    """The base a run's checks ran on: the submission merged (or rebased) onto `tip` of
    `branch`, giving a tree `tree`. `mode` none: the commit alone (no base branch to merge onto,
    or the project asked for that); `branch` and `tip` then say what the base was, if known."""

    mode: MergeMode
    branch: str | None = Field(default=None, max_length=200)
    tip: Sha | None = None
    tree: Sha | None = None
    why: str | None = Field(default=None, max_length=500)  # why no merge was made, when none was


class BaseTip(_Model):
    """The tip of a project's base branch as last reported (by a verifier's poll, a git host's
    push webhook or the nightly run): verdicts on another tip are stale."""

    branch: str = Field(min_length=1, max_length=200)
    tip: Sha
    at: str  # ISO time it was reported
    by: str  # who reported it


class MergeConflict(_Model):
    """The submission did not merge onto `tip` of `branch`: these paths conflicted."""

    mode: Literal["merge", "rebase"]
    branch: str = Field(min_length=1, max_length=200)
    tip: Sha
    paths: list[str] = Field(min_length=1, max_length=10_000)


def conflict_summary(commit: str, c: MergeConflict, repo: str | None = None) -> str:
    """The finding a conflict gives: the base tip, the conflicting paths, what to do. `repo`: the
    project's repository as configured (a path or a URL), which the command fetches from by name,
    so it works whatever the agent's remotes are called, or in that repository itself (a local
    path has no `origin`)."""
    shown = c.paths[:CONFLICT_PATHS_SHOWN]
    more = len(c.paths) - len(shown)
    paths = ", ".join(shown) + (f" and {more} more" if more > 0 else "")
    verb = "merge" if c.mode == "merge" else "rebase"
    source = shlex.quote(repo) if repo else "<the project's repository>"
    return (
        f"merge conflict: commit {commit[:12]} does not {verb} cleanly onto {c.branch} at {c.tip[:12]} "
        f"(conflicting paths: {paths}); no check ran and no attempt was used. Rebase your work onto "
        f"the current {c.branch} (git fetch {source} {shlex.quote(c.branch)} && git rebase FETCH_HEAD), "
        "resolve the conflicts, commit, and submit the new commit"
    )


def conflicts_reason(in_row: int, last: str) -> str:
    return f"{in_row} merge conflicts in a row; the last: {last}"


def held_for(base: MergedBase | None) -> str:
    """Which base a verdict holds for, in words (the brief, `task show`, the board)."""
    if base is None:
        return "the commit alone"
    if base.mode == "none" or base.tip is None:
        return "the commit alone" + (f" ({base.why})" if base.why else "")
    how = "merged onto" if base.mode == "merge" else "rebased onto"
    return f"the commit {how} {base.branch} at {base.tip[:12]}"


def is_stale(base: MergedBase | None, tip: str | None) -> bool:
    """A verdict reached on one tip is stale once the branch's known tip is another. A verdict
    on the commit alone, or with no tip known, is never stale by this rule."""
    return (
        base is not None
        and base.mode != "none"
        and base.tip is not None
        and tip is not None
        and tip != base.tip
    )


def stale_on(base: MergedBase | None, known: BaseTip | None) -> bool:
    """A verdict reached on `base` is stale against the base branch's known tip: the same
    branch, another tip. (Whether the task still holds a verdict is the caller's question.)"""
    return (
        known is not None and base is not None and base.branch == known.branch and is_stale(base, known.tip)
    )


def held_on_a_tip(task: Task) -> bool:
    """A verified task whose verdict holds for one tip of the base branch: the verdicts a move of
    that branch makes stale, so the only ones worth reading the branch's tip for."""
    base = task.verified_base
    return task.status == "verified" and base is not None and base.mode != "none" and base.tip is not None


def stale_line(known: BaseTip) -> str:
    """What a stale verdict says, after the base it holds for (the brief, `task show`, the board)."""
    return f"stale: {known.branch} is at {known.tip[:12]} now; it is verified again on that tip"


def merge_rule(mode: MergeMode | None, branch: str | None) -> str:
    """What the verifier checks, in words for the executor's brief (short: it is in every one;
    a conflict's finding says what to do when there is one)."""
    if mode == "none":
        return "your commit alone"
    how = "rebased" if mode == "rebase" else "merged"
    return f"your commit {how} onto {branch or 'main'}'s tip"


def brief_lines(
    mode: MergeMode | None, branch: str | None, task: Task, known: BaseTip | None = None
) -> dict[str, Any]:
    """The brief's lines on merging: what is checked, the base the task's verdict holds for, and
    whether that verdict is stale (`known`: the base branch's tip as last reported)."""
    out: dict[str, Any] = {"checks_run_on": merge_rule(mode, branch)}
    if task.verified_base is not None:
        out["verified_on"] = held_for(task.verified_base)
        if task.status == "verified" and known is not None and stale_on(task.verified_base, known):
            out["stale"] = stale_line(known)
    return out
