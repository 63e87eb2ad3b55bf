"""The submission's baseline (the merge-base with the base branch) and what it changes against
it: the paths, the scoped files changed only outside their test runner's part, the diff of the
protected ones. Later, the baseline's tree archived while git is still the verifier's."""

from __future__ import annotations

from taskgate.domain.baseline import (
    DIFF_MAX_CHARS,
    MAX_CHANGED,
    SCOPED,
    BaselineEvidence,
    harness_part,
    package_scripts,
    protect_globs,
    protected,
)
from taskgate.verifier.checkout import CheckoutError
from taskgate.verifier.state import RunError, RunState


def find(state: RunState) -> None:
    """Every git command before any check: once checks ran, the checkout (and its .git) is the
    check's."""
    co, cfg = state.checkout, state.config
    with state.timed("baseline"):
        try:
            base = co.baseline(cfg.base_branch_choice(), state.work.claimed_base)
            changed = co.changed_paths(base)
            listed = changed[:MAX_CHANGED]
            unchanged = [
                p
                for p in listed
                if (name := p.rsplit("/", 1)[-1]) in SCOPED
                and harness_part(name, co.read_at(base, p)) == harness_part(name, co.read_at(None, p))
            ]
            commands = [c.command for c in cfg.checks.values()]
            scripts = package_scripts(
                commands, co.read_at(base, "package.json"), co.read_at(None, "package.json")
            )
            globs = protect_globs(cfg.protect, [*commands, *scripts])
            held = [p for p in protected(listed, globs, unchanged) if not cfg.replaced_before_checks(p)]
            diff = co.diff_from(base, held) if held else ""
        except CheckoutError as exc:
            raise RunError(f"baseline: {exc}") from exc
        except UnicodeDecodeError as exc:
            # git printed bytes that are not UTF-8 (a path's name, a scoped file's content).
            raise RunError(f"baseline: git's answer is not UTF-8 text ({exc.reason})") from exc
    state.base = base
    state.report.baseline = BaselineEvidence(
        branch=base.branch,
        commit=base.commit,
        why=base.why,
        changed=listed,
        changed_total=len(changed),
        harness_unchanged=unchanged,
        diff=diff[:DIFF_MAX_CHARS],
        scripts=scripts,
    )
    where = f"{base.branch} at {base.commit[:12]}" if base.commit else f"none ({base.why})"
    said = f"; protected: {', '.join(held)}" if held else ""
    state.say(f"baseline: {where}; {len(changed)} changed paths{said}")


def archive(state: RunState) -> None:
    """The baseline's tree as a tar file beside the checkout: a check that fails as if its
    environment were broken is run again on it. None when there is no baseline, or the
    submission is its own (committed before the claim: running it again would fail the same way
    whatever the cause, and tell nothing)."""
    co, base = state.checkout, state.baseline
    if base.commit == co.head:
        return
    into = co.path.parent / "baseline.tar"
    with state.timed("baseline"):
        try:
            state.archive = into if co.archive(base, into) else None
        except CheckoutError as exc:
            raise RunError(f"baseline: {exc}") from exc
