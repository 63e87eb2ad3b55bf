"""A check that failed as if its environment were broken (its runner could not start, or it
wrote no report) runs again on the baseline's tree; failing the same way there, it is the
environment's failure, not the submission's: the run is an error (domain/tooling.py)."""

from __future__ import annotations

from taskgate.domain.tooling import environment_failure, fails_on_baseline
from taskgate.verifier.checking import tail
from taskgate.verifier.state import RunError, RunState
from taskgate.verifier.trees import baseline_tree


def recheck(state: RunState) -> None:
    if state.archive is None:
        return
    cfg = state.config
    for name, check in cfg.checks.items():
        done = state.report.checks[name]
        if done.missing_tool is not None:
            continue  # already the verifier's error: a tool missing from its PATH
        missing = check.report is not None and name not in state.reports and done.report_problem is None
        how = environment_failure(check.command, done.exit_code, done.output_tail, missing)
        if how is None:
            continue
        state.say(f"check {name}: {how}; run again on the baseline's tree")
        with state.timed("environment"):
            again = _on_baseline(state, name)
        if again == how:
            raise RunError(fails_on_baseline(name, how))
        state.say(f"check {name} on the baseline: {again or 'not that failure'}")


def _on_baseline(state: RunState, name: str) -> str | None:
    """How check `name` fails on the baseline's tree (environment_failure's words), or None."""
    v, cfg = state.verifier, state.config
    check = cfg.checks[name]
    with baseline_tree(state.archive) as where, v.sandbox.lend(where) as there:
        done = v.run(check.command, there, check.timeout_minutes or cfg.check_timeout_minutes)
        wrote = check.report is not None and (where / check.report.path).is_file()
    if done.timed_out:
        return None
    missing = check.report is not None and not wrote
    return environment_failure(check.command, done.exit_code, tail(done.output), missing)
