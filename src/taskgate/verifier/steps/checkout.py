"""A clean checkout of the submitted commit (verifier/checkout.py): the run's first git work.
A commit the repository does not hold ends the run with nothing run (the executor pushes it)."""

from __future__ import annotations

from taskgate.verifier.checkout import CheckoutError, CommitMissing, checkout
from taskgate.verifier.state import RunError, RunState


def fetch(state: RunState) -> None:
    v, work = state.verifier, state.work
    with state.timed("checkout"):
        try:
            co = state.stack.enter_context(checkout(work.repo, work.commit_sha, env=v.env, token=v.git_token))
        except CommitMissing as exc:
            state.report.commit_missing = True
            state.say(f"checkout: {exc}")
            state.stopped = True
            return
        except CheckoutError as exc:
            raise RunError(f"checkout failed: {exc}") from exc
    state.co = co
    state.report.commit = co.head
    state.say(
        f"checkout of {co.head[:12]} from {work.repo} at {co.path} in {state.gathered.timings['checkout']:.2f} s"
    )
