"""The grading run (domain/grading.py): the checkout becomes the tree that judges, the
submission's source with the baseline's test side and harness, plus only the new test files
that define a named test. Made while git and the checkout are still the verifier's. Where the
submission adds or changes test-side files the grading run leaves out, a copy of its whole tree
is kept first, and after the grading run the checks run once more there: its failures are
findings for the executor, and an existing test the submission changed that fails in the
grading run and passes there is a changed expectation."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from taskgate.domain import grading, newtests
from taskgate.domain.baseline import DIFF_MAX_CHARS, protect_globs, protected
from taskgate.domain.models import CriterionKind
from taskgate.domain.run_report import ChangedTest, CheckResult, GradingTree, Restored
from taskgate.domain.testdefs import is_test_path
from taskgate.domain.testrefs import matched_tests
from taskgate.verifier.checking import clear_reports, criteria_evidence, read_reports, run_checks
from taskgate.verifier.checkout import Checkout, CheckoutError
from taskgate.verifier.sandbox import RUN_DIR_MODE
from taskgate.verifier.state import RunError, RunState
from taskgate.verifier.trees import occupied

_BATCH = 200  # paths per git command


def prepare(state: RunState) -> None:
    with state.timed("grading_tree"):
        try:
            _prepare(state)
        except CheckoutError as exc:
            raise RunError(f"grading tree: {exc}") from exc


def _source_rev(state: RunState) -> str | None:
    """Where the baseline's test side is read: the base tip the submission was merged onto
    (its test side is what the submission lands beside), else the baseline commit."""
    base, merged = state.baseline, state.report.base
    if merged is not None and merged.mode != "none" and base.tip is not None:
        return base.tip
    return base.commit


def _prepare(state: RunState) -> None:
    co, base, evidence = state.checkout, state.baseline, state.report.baseline
    rev = _source_rev(state)
    if evidence is None or rev is None or base.commit is None or base.commit == co.head:
        return  # no baseline to take a test side from, or the submission is its own
    changed = list(evidence.changed)
    at_baseline = _present(co, rev, changed)
    refs = [c.verify_ref or "" for c in state.work.of_kind(CriterionKind.TEST)]
    cfg = state.config
    globs = protect_globs(cfg.protect, [*(c.command for c in cfg.checks.values()), *evidence.scripts])
    plan = grading.plan(
        changed,
        baseline_text=lambda p: _text_at(co, rev, p) if p in at_baseline else None,
        submitted_text=lambda p: _text(co.path, p),
        at_baseline=at_baseline,
        harness_unchanged=evidence.harness_unchanged,
        refs=refs,
        harness=set(protected(changed, globs, evidence.harness_unchanged)),
    )
    if not plan.changes_tree:
        if plan.named:
            state.report.grading = GradingTree(named=list(plan.named))
        return
    diff = co.diff_from(base, list(plan.unnamed)) if plan.unnamed else ""
    if plan.unnamed:
        state.submitted_tree = _copy(state, co.path)
    _restore(co, rev, list(plan.restore))
    for rel in plan.remove:
        _remove(co.path, rel)
    state.grading_plan = plan
    state.report.grading = GradingTree(
        restored=list(plan.restore),
        removed=list(plan.remove),
        named=list(plan.named),
        diff=diff[:DIFF_MAX_CHARS],
    )
    said = [f"{len(plan.restore)} test-side paths as the baseline has them"]
    if plan.remove:
        said.append(f"{len(plan.remove)} the baseline lacks left out")
    if plan.named:
        said.append(f"new named test files kept: {', '.join(plan.named[:5])}")
    state.say("grading tree: " + "; ".join(said))


def _present(co: Checkout, rev: str, paths: list[str]) -> set[str]:
    out: set[str] = set()
    for i in range(0, len(paths), _BATCH):
        listed = co.git("ls-tree", "-r", "-z", "--name-only", rev, "--", *paths[i : i + _BATCH], cwd=co.path)
        out.update(p for p in listed.split("\0") if p)
    return out


def _text_at(co: Checkout, rev: str, path: str) -> str | None:
    try:
        return co.git("cat-file", "blob", f"{rev}:{path}", cwd=co.path, ok=True)
    except UnicodeDecodeError:
        return None


def _text(root: Path, rel: str) -> str | None:
    """A file of the submission's tree as text; None when absent, a link, or not UTF-8."""
    if occupied(root, rel, parents_only=True) is not None:
        return None
    target = root / rel
    if target.is_symlink() or not target.is_file():
        return None
    try:
        return target.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _copy(state: RunState, tree: Path) -> Path:
    """The submission's whole tree, copied aside before the grading tree replaces its test side,
    in a run directory the check user may pass through."""
    top = Path(tempfile.mkdtemp(prefix="taskgate-verify-"))
    state.stack.callback(shutil.rmtree, top, True)
    os.chmod(top, RUN_DIR_MODE)
    where = top / "checkout"
    shutil.copytree(tree, where, symlinks=True)
    return where


def _clear_way(root: Path, rel: str) -> None:
    """Whatever of the submission's stands where the baseline's file goes: a link or a file
    above it, or a link or directory at it. Removed, never written through."""
    blocker = occupied(root, rel, parents_only=True)
    if blocker is not None:
        _remove(root, blocker)
    target = root / rel
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)


def _restore(co: Checkout, rev: str, paths: list[str]) -> None:
    for rel in paths:
        _clear_way(co.path, rel)
    for i in range(0, len(paths), _BATCH):
        co.git("checkout", rev, "--", *paths[i : i + _BATCH], cwd=co.path)


def _remove(root: Path, rel: str) -> None:
    if occupied(root, rel, parents_only=True) is not None:
        return  # under a link or a file: not in the tree
    target = root / rel
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.is_symlink() or target.exists():
        target.unlink()


def run_submitted(state: RunState) -> None:
    """The checks once more on the submission's whole tree (kept aside before the grading tree
    was made): its failures are findings for the executor; a test criterion keeps how it did
    there beside its evidence; a changed existing test that fails in the grading run and passes
    here is a changed expectation."""
    where, plan, kept = state.submitted_tree, state.grading_plan, state.report.grading
    if where is None or plan is None or kept is None:
        return
    v, cfg = state.verifier, state.config
    tests = state.work.of_kind(CriterionKind.TEST)
    with state.timed("second_run"):
        state.say("second run: the checks on the submission's whole tree, its own test files included")
        clear_reports(v, cfg, where)
        checks: dict[str, CheckResult] = {}
        with v.sandbox.lend(where) as dirs:
            started = run_checks(v, cfg, dirs, checks, " (the submission's tree)")
            reports = read_reports(v, cfg, where, checks, started, set())
        found = criteria_evidence(v, tests, cfg, reports, " (the submission's tree)")
    state.submitted_reports = reports
    restored_tests = [p for p in plan.restore if is_test_path(p)]
    changed = grading.changed_expectations(
        state.reports.values(), reports.values(), restored_tests, str(state.checkout.path)
    )
    state.report.grading = kept.model_copy(
        update={
            "submitted": checks,
            "changed": [
                ChangedTest(test=c.test, files=list(c.files), message=c.message[:20_000])
                for c in changed[:50]
            ],
        }
    )
    for ch in changed:
        state.say(
            f"changed expectation: {ch.test} fails with the baseline's {', '.join(ch.files)}, passes as submitted"
        )
    results, root = state.report.results, str(state.checkout.path)
    for c in tests:
        # Only a named test whose file the grading run took as the baseline has it: its
        # evidence differs between the two trees because the submission edited that file.
        named = matched_tests(state.reports, c.verify_ref or "")
        files = newtests.defining_files(named, restored_tests, root) or (
            set(restored_tests) if named and newtests.unplaced(named) else set()
        )
        if not files:
            continue
        there = found[c.id]
        results[c.id] = results[c.id].model_copy(
            update={
                "restored": Restored(
                    files=sorted(files)[:200],
                    submitted=there.result,
                    submitted_detail=there.detail,
                    diff=kept.diff,
                )
            }
        )
