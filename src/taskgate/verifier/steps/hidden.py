"""Hidden tests (verifier/hidden.py): placed in the checkout last before the checks (nothing of
the submission's is compared with them), and picked out of the checks' reports after; every
check's output withheld, and a hidden test's message kept out of the criteria's evidence unless
the config reveals it."""

from __future__ import annotations

from taskgate.domain.models import FailedTest
from taskgate.verifier import hidden as hidden_tests
from taskgate.verifier.state import RunError, RunState


def place(state: RunState) -> None:
    spec = state.config.hidden_tests
    if spec is None:
        return
    with state.timed("hidden"):
        try:
            placed = hidden_tests.place(spec, state.checkout)
        except hidden_tests.HiddenError as exc:
            if exc.detail:
                state.say(f"hidden tests: {exc.detail}")
            raise RunError(str(exc)) from exc
    state.placed = placed
    state.say(f"hidden tests: {len(placed.files)} files of {placed.commit[:12]} placed")


def read(state: RunState) -> None:
    placed = state.placed
    if placed is None:
        return
    report = state.report
    report.hidden_tests = ran = hidden_tests.outcome(placed, list(state.reports.values()))
    for name, c in report.checks.items():
        report.checks[name] = c.model_copy(update={"output_tail": hidden_tests.WITHHELD})
    if placed.spec.reveal != "messages":
        for cid, r in report.results.items():
            if any(placed.holds(*_split(t.name)) for t in r.failures):
                report.results[cid] = r.model_copy(
                    update={
                        "detail": "a hidden test failed (its message is not revealed)",
                        "failures": [FailedTest(name=t.name) for t in r.failures],
                    }
                )
    state.say(
        f"hidden tests: {ran.ran} ran, {ran.failed_count} failed"
        + "".join(f"; {t.name}" for t in ran.failed[:5])
    )
    if ran.ran == 0 and all(c.exit_code == 0 for c in report.checks.values()):
        raise RunError(
            f"the hidden tests placed at {placed.spec.into} are in no check's report: "
            "the checks must collect that directory"
        )


def _split(full_name: str) -> tuple[str, str]:
    classname, _, name = full_name.rpartition(".")
    return classname, name
