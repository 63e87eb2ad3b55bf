"""What the checks run on: the submission merged (or rebased) onto the base branch's tip, as
the config's `merge` asks (verifier/merging.py); the commit alone with `none`, or by default
when the repository has no base branch to merge onto. A conflict ends the run before any check:
merging is not verification."""

from __future__ import annotations

from taskgate.domain.merging import MergeConflict, MergedBase
from taskgate.verifier.checkout import CheckoutError
from taskgate.verifier.merging import Conflict, onto_base
from taskgate.verifier.state import RunError, RunState


def merge(state: RunState) -> None:
    with state.timed("merge"):
        _merge(state)


def _merge(state: RunState) -> None:
    cfg, co, base = state.config, state.checkout, state.baseline
    if cfg.merge == "none":
        state.report.base = MergedBase(mode="none", why="the verifier config sets merge: none")
        return
    # A submission the base branch already holds merges onto its tip whatever its baseline.
    if base.tip is None or (base.commit is None and not base.on_branch):
        if cfg.merge is not None:
            raise RunError(f"the verifier config sets merge: {cfg.merge}, and {base.why}")
        state.report.base = MergedBase(mode="none", branch=base.branch, tip=base.tip, why=base.why)
        state.say(f"merge: none ({base.why}); the checks run on the commit alone")
        return
    mode = cfg.merge or "merge"
    try:
        done = onto_base(co, mode, base)
    except CheckoutError as exc:
        raise RunError(f"{mode} onto {base.branch} failed: {exc}") from exc
    assert base.branch is not None
    if isinstance(done, Conflict):
        state.report.conflict = MergeConflict(
            mode=done.mode, branch=base.branch, tip=base.tip, paths=done.paths
        )
        state.say(
            f"{mode}: conflict onto {base.branch} at {base.tip[:12]} in {', '.join(done.paths[:5])}"
            + (" ..." if len(done.paths) > 5 else "")
            + "; no check runs"
        )
        state.stopped = True
        return
    state.report.base = MergedBase(mode=mode, branch=base.branch, tip=base.tip, tree=done.tree)
    state.say(f"{mode}: onto {base.branch} at {base.tip[:12]}, tree {done.tree[:12]}; the checks run there")
