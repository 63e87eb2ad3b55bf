"""New named tests must fail before the change, where the change-sensitivity run
(steps/sensitivity.py) could not tell: the change touches no function, or the stubbed run did not
report the test. The files the submission changes are copied
aside before the checks (after them, the checkout is whatever the checks made of it); after the
first run and the second, each passing test criterion whose named test the submission wrote is
run again: every check on the baseline's tree with the submission's test files put back. The
evidence keeps how it did there (`without_change`); the server holds a run whose new test passed
there too. A guard whose guard counts expects to pass there: nothing runs for it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from taskgate.domain import newtests
from taskgate.domain.baseline import is_test_file
from taskgate.domain.models import CriterionKind
from taskgate.domain.reports import Report
from taskgate.domain.run_report import CheckResult, Evidence, WithoutChange
from taskgate.domain.testrefs import matched_tests
from taskgate.verifier.checking import clear_reports, criteria_evidence, read_reports, run_checks
from taskgate.verifier.state import RunState, Submitted
from taskgate.verifier.trees import baseline_tree, occupied

# What this extra run is, on its progress lines: a new test failing here is what it should do.
BASELINE_CODE = " (the baseline's code: a new test is expected to fail)"


def keep(state: RunState) -> None:
    """The files the submission changes, copied aside as the first run will see them, while
    the checkout is still the verifier's. Nothing when it changes nothing (or is its own
    baseline)."""
    if not state.work.of_kind(CriterionKind.TEST):
        return
    co, base, cfg, baseline = state.checkout, state.baseline, state.config, state.report.baseline
    with state.timed("second_tree"):
        if baseline is None or base.commit == co.head:
            return
        changed = [p for p in baseline.changed if not cfg.replaced_before_checks(p)]
        if not changed:
            return
        top = Path(tempfile.mkdtemp(prefix="taskgate-submitted-"))
        state.stack.callback(shutil.rmtree, top, True)
        for rel in changed:
            src = co.path / rel
            if occupied(co.path, rel, parents_only=True) is not None:
                continue  # under a link: nothing of its own to keep
            if src.is_symlink() or src.is_file():
                (top / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, top / rel, follow_symlinks=False)
        state.submitted = Submitted(path=top, changed=changed)


def run(state: RunState) -> None:
    """A passing test criterion whose named test the submission wrote (defined in a file it
    changes, unless the second run found it in the baseline's version) must fail before the
    change: the checks run again on the baseline's tree with the submission's test files,
    and each such criterion keeps how it did there. No run when there is no such criterion,
    or each is a guard whose guard counts."""
    sub = state.submitted
    if sub is None:
        return
    tests = state.work.of_kind(CriterionKind.TEST)
    root = str(state.checkout.path)
    results, plan = state.report.results, state.grading_plan
    wrote: dict[str, set[str]] = {}
    for c in tests:
        r = results[c.id]
        if c.id in state.work.guards or r.result is not Evidence.PASS:
            continue  # a guard expects to pass before; what does not pass here holds nothing
        if r.stubbed is not None and r.stubbed.result in (Evidence.PASS, Evidence.FAIL):
            continue  # the stubbed run told whether the test notices the change: nothing to add
        found = matched_tests(state.reports, c.verify_ref or "")
        files = newtests.defining_files(found, sub.changed, root)
        if not files and newtests.unplaced(found):
            # The runner did not say where (node --test): the changed test files whose source
            # defines the named test, never another runner's files that merely changed.
            files = newtests.defining_sources(
                c.verify_ref or "", {p: _text(sub.path / p) for p in sub.changed if is_test_file(p)}
            )
        if not files:
            continue  # its test is in files the submission left as they were
        if plan is not None and files <= set(plan.restore):
            continue  # the grading run took these files as the baseline has them: judged by them
        wrote[c.id] = files
    if not wrote:
        return
    reported = [t for report in state.reports.values() for t in report.all_tests()]
    kept = newtests.paths_of_tests(sub.changed, reported, set().union(*wrote.values()), root)
    state.say(
        f"without the change: {', '.join(wrote)} name tests the submission wrote; the checks again "
        f"on the baseline's code with its test files ({', '.join(kept)})"
    )
    with state.timed("without_change"):
        there = _on_baseline_code(state, sub, kept)
    news = [c for c in tests if c.id in wrote]
    before = criteria_evidence(state.verifier, news, state.config, there, BASELINE_CODE)
    for c in news:
        again = before[c.id]
        results[c.id] = results[c.id].model_copy(
            update={"without_change": WithoutChange(result=again.result, detail=again.detail, files=kept)}
        )


def _text(path: Path) -> str | None:
    """A kept file's text, or None (deleted, a link, not text)."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _on_baseline_code(state: RunState, sub: Submitted, kept: list[str]) -> dict[str, Report]:
    """Every check on the baseline's tree (the empty tree when there is none) with the
    submission's versions of `kept`; their reports."""
    v, cfg = state.verifier, state.config
    with baseline_tree(state.archive) as where:
        for rel in kept:
            if occupied(where, rel, parents_only=True) is not None:
                continue  # the baseline has a link or a file above it: never written through
            target = where / rel
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.is_symlink() or target.exists():
                target.unlink()
            src = sub.path / rel
            if src.is_symlink() or src.exists():  # else the submission deletes it
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target, follow_symlinks=False)
        clear_reports(v, cfg, where)
        checks: dict[str, CheckResult] = {}
        with v.sandbox.lend(where) as there:
            started = run_checks(v, cfg, there, checks, BASELINE_CODE)
            # Read while the tree is still the check user's: a report must be its own.
            return read_reports(v, cfg, where, checks, started, set())
