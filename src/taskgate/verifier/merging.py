"""The submission merged onto the base branch's tip, in the verifier's own checkout: what the
checks run on when the project's `merge` setting asks for it.

Made while git is still the verifier's (after the checkout, before it is handed to the check
user), in the checkout's own repository: the repository the submission came from is only read,
and none of its branches moves. The checkout's repository has only the config `git init` writes,
so a merge driver or filter a submitted `.gitattributes` names runs nothing (those are defined in
config, which the submission cannot reach).
"""

from __future__ import annotations

from dataclasses import dataclass

from taskgate.domain.merging import MergeMode
from taskgate.verifier.checkout import Baseline, Checkout, CheckoutError

# Who the verifier's merge and rebase commits name: made in a checkout that is thrown away, they
# need an identity, and should never be mistaken for anyone's work.
_IDENTITY = ("user.name=taskgate verifier", "user.email=verifier@taskgate.invalid")


@dataclass(frozen=True)
class Merged:
    """What the checks run on: `head` (the merge, the rebased submission, or the submission
    itself when it already contains the tip) whose tree is `tree`, made onto `base.tip`."""

    mode: MergeMode
    base: Baseline
    head: str
    tree: str


@dataclass(frozen=True)
class Conflict:
    """The submission does not merge cleanly onto `base.tip`: these paths conflict."""

    mode: MergeMode
    base: Baseline
    paths: list[str]


def onto_base(co: Checkout, mode: MergeMode, base: Baseline) -> Merged | Conflict:
    """Merge (or rebase) the checked-out submission onto `base.tip` in the checkout. The base
    must have a tip and a merge-base with the submission, or already hold it (the caller decides
    what else to do)."""
    if base.tip is None or (base.commit is None and not base.on_branch):
        raise CheckoutError(base.why or "no base to merge onto")
    if mode == "rebase":
        return _rebase(co, base)
    done = co.git(
        "merge", "--quiet", "--no-edit", "--no-ff", base.tip, cwd=co.path, config=_IDENTITY, ok=True
    )
    if done is None:
        return Conflict(mode, base, _unmerged(co))
    return _merged(co, mode, base)


def _rebase(co: Checkout, base: Baseline) -> Merged | Conflict:
    assert base.tip is not None
    # A submission the branch already holds has nothing of its own to replay onto the tip.
    upstream = co.head if base.on_branch or base.commit is None else base.commit
    done = co.git(
        "rebase", "--quiet", "--no-autosquash", "--onto", base.tip, upstream,
        cwd=co.path, config=_IDENTITY, ok=True,
    )  # fmt: skip
    if done is None:
        paths = _unmerged(co)
        co.git("rebase", "--abort", cwd=co.path, check=False)
        return Conflict("rebase", base, paths)
    return _merged(co, "rebase", base)


def _merged(co: Checkout, mode: MergeMode, base: Baseline) -> Merged:
    head = co.git("rev-parse", "HEAD", cwd=co.path)
    tree = co.git("rev-parse", "HEAD^{tree}", cwd=co.path)
    return Merged(mode, base, head, tree)


def _unmerged(co: Checkout) -> list[str]:
    listed = co.git("diff", "--name-only", "-z", "--diff-filter=U", cwd=co.path, check=False)
    paths = sorted({p for p in listed.split("\0") if p})
    if not paths:
        # git stopped without an unmerged path (e.g. an untracked file in the way): still no merge.
        raise CheckoutError("git could not merge and named no conflicting path")
    return paths
