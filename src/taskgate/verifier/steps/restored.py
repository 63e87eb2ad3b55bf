"""Named tests judged by the baseline's version of their files: when the submission changes test
files that exist at its baseline, a copy of the checkout with those files restored is made
before any check runs, and after the first run the checks run again there. Each test
criterion's evidence is that second run's, the first run's kept beside it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from taskgate.domain.baseline import DIFF_MAX_CHARS, is_test_file
from taskgate.domain.models import CriterionKind
from taskgate.domain.run_report import CheckResult, Evidence, Restored
from taskgate.verifier.checking import criteria_evidence, read_reports, run_checks
from taskgate.verifier.checkout import CheckoutError
from taskgate.verifier.state import RunError, RunState, SecondTree


def prepare(state: RunState) -> None:
    """A copy of the checkout with the test files the submission changed restored from the
    baseline (those that exist there; everything else as submitted), made while git and the
    checkout are still the verifier's. None when no such file changed: no second run."""
    if not state.work.of_kind(CriterionKind.TEST):
        return
    with state.timed("second_tree"):
        _prepare(state)


def _prepare(state: RunState) -> None:
    co, base = state.checkout, state.baseline
    if base.commit is None:
        return
    try:
        changed = [p for p in co.changed_paths(base) if is_test_file(p) and not p.endswith("conftest.py")]
        restored = {p: text for p in changed if (text := co.read_at(base, p)) is not None}
        diff = co.diff_from(base, sorted(restored)) if restored else ""
    except CheckoutError as exc:
        raise RunError(f"baseline tests: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise RunError(f"baseline tests: git's answer is not UTF-8 text ({exc.reason})") from exc
    if not restored:
        return
    top = Path(tempfile.mkdtemp(prefix="taskgate-verify-"))
    state.stack.callback(shutil.rmtree, top, True)
    path = top / "checkout"
    shutil.copytree(co.path, path, symlinks=True)
    for rel, text in restored.items():
        target = path / rel
        if target.is_symlink() or target.is_dir():
            # The submission turned the test file into a link or a directory: the baseline's
            # file goes back in its place, never written through the link.
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n")  # git's answer lost the last newline
    state.say(f"baseline tests: {', '.join(sorted(restored))} restored in a second tree")
    state.second = SecondTree(path=path, files=sorted(restored), diff=diff[:DIFF_MAX_CHARS])


def run(state: RunState) -> None:
    """Run the checks again on the second tree and take each test criterion's evidence from
    it, keeping the first run's beside it. A ref the second run cannot find names a test that
    is not in the baseline's files: its first-run evidence stands."""
    second = state.second
    if second is None:
        return
    v, cfg = state.verifier, state.config
    tests = state.work.of_kind(CriterionKind.TEST)
    with state.timed("second_run"):
        state.say("second run: the checks again, with the baseline's test files")
        checks: dict[str, CheckResult] = {}
        dirs = state.stack.enter_context(v.sandbox.hand_over(second.path))
        started = run_checks(v, cfg, dirs, checks)
        reports = read_reports(v, cfg, second.path, checks, started, set())
        found = criteria_evidence(v, tests, cfg, reports)
    results = state.report.results
    for c in tests:
        first, again = results[c.id], found[c.id]
        if again.result is Evidence.MISSING:
            continue
        results[c.id] = again.model_copy(
            update={
                "restored": Restored(
                    files=second.files,
                    submitted=first.result,
                    submitted_detail=first.detail,
                    diff=second.diff,
                )
            }
        )
