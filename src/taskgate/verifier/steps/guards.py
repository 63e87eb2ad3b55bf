"""A guard keeps behaviour the baseline already has, so its named test must exist there: a guard
whose ref no test file of the baseline defines (domain/testdefs.py) names a test that is not
there, a spec error the server reports as such, and the executor's commit cannot supply it
(a test it adds under that name would pass whatever). Git's work: before the hand-over."""

from __future__ import annotations

from taskgate.domain.models import CriterionKind
from taskgate.domain.testdefs import JS_SUFFIXES, PY_SUFFIXES, defined_tests, defines_ref, is_test_path
from taskgate.verifier.checkout import CheckoutError
from taskgate.verifier.state import RunError, RunState


def check(state: RunState) -> None:
    guards = [c for c in state.work.of_kind(CriterionKind.TEST) if c.id in state.work.guards]
    co, base = state.checkout, state.baseline
    if not guards or base.commit is None:
        return  # no baseline: nothing to find them in (the run is judged against the empty tree)
    into = [state.config.hidden_tests.into] if state.config.hidden_tests else []
    with state.timed("guards"):
        try:
            listed = co.git("ls-tree", "-r", "-z", "--name-only", base.commit, cwd=co.path).split("\0")
            defs = []
            for path in listed:
                if path.endswith(PY_SUFFIXES + JS_SUFFIXES) and is_test_path(path, into):
                    try:
                        text = co.read_at(base, path)
                    except UnicodeDecodeError:
                        continue
                    if text is not None:
                        defs += defined_tests(path, text)
        except CheckoutError as exc:
            raise RunError(f"guards: {exc}") from exc
    missing = [c.id for c in guards if not defines_ref(defs, c.verify_ref or "")]
    state.report.missing_guards = missing
    for cid in missing:
        ref = next(c.verify_ref for c in guards if c.id == cid)
        state.say(f"guard {cid}: no test file of the baseline defines `{ref}`")
