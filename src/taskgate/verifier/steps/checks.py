"""The run that judges: every configured check in the checkout, handed to the check user; their
reports read; each test criterion's evidence read from them by its ref."""

from __future__ import annotations

from taskgate.domain.models import CriterionKind
from taskgate.verifier.checking import clear_reports, criteria_evidence, read_reports, run_checks
from taskgate.verifier.state import RunState


def clear(state: RunState) -> None:
    """Delete every report path before anything runs (a report is the check's own, never the
    commit's)."""
    state.committed = clear_reports(state.verifier, state.config, state.checkout.path)


def hand_over(state: RunState) -> None:
    """From here on the checkout is the check user's: the verifier runs no git in it again."""
    v = state.verifier
    state.dirs = state.stack.enter_context(v.sandbox.hand_over(state.checkout.path))
    if v.sandbox.user is not None:
        state.say(f"checks run as {v.sandbox.user.name} (uid {v.sandbox.user.uid})")


def run(state: RunState) -> None:
    v, cfg, dirs = state.verifier, state.config, state.dirs
    assert dirs is not None
    with state.timed("checks"):
        tokens = [w.tripwire.token for w in state.written]
        state.started = run_checks(v, cfg, dirs, state.report.checks, tripwires=tokens)
    with state.timed("reports"):
        state.reports = read_reports(
            v, cfg, state.checkout.path, state.report.checks, state.started, state.committed
        )


def evidence(state: RunState) -> None:
    """Each test criterion's evidence, from this run's reports."""
    with state.timed("reports"):
        state.report.results.update(
            criteria_evidence(
                state.verifier, state.work.of_kind(CriterionKind.TEST), state.config, state.reports
            )
        )
