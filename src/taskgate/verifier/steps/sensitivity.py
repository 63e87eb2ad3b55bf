"""Named tests must notice the change (domain/stubs.py). While git is still the verifier's, a
copy of the tree that judges is made with the body of every function the submission added or
changed replaced by a raise, and with only the test files that define a named test (the run
asks about the named tests, so it runs those alone). After the checks, each passing test
criterion (a guard whose guard counts aside: it keeps behaviour the change need not touch) is
run again there; its evidence keeps how it did (`stubbed`). The server holds a run whose named
test still passes. Where the change touches no function, the run says the check did not apply.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from taskgate.domain import stubs
from taskgate.domain.models import Criterion, CriterionKind
from taskgate.domain.run_report import CheckResult, Evidence, Sensitivity, StubbedRun
from taskgate.domain.testdefs import (
    JS_SUFFIXES,
    PY_SUFFIXES,
    defined_tests,
    defines_ref,
    is_test_path,
    is_test_side,
)
from taskgate.verifier.checking import criteria_evidence, read_reports, run_checks
from taskgate.verifier.checkout import CheckoutError, changed_lines, read_committed
from taskgate.verifier.state import RunError, RunState, StubbedTree

# What these extra runs are, on their progress lines: failing here is what an honest change does.
STUBBED = " (changed functions stubbed out: expected to fail)"
NO_FUNCTION = "the change touches no function (a constant, a data file): the check did not apply"
# Directories never walked for test files: what is installed, not the project's tests.
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "site-packages", "__pycache__"})


def targets(state: RunState) -> list[Criterion]:
    """The test criteria the run asks about: all but the guards whose guard counts."""
    return [c for c in state.work.of_kind(CriterionKind.TEST) if c.id not in state.work.guards]


def prepare(state: RunState) -> None:
    """The stubbed tree, made from the tree that judges (the grading tree) while
    the checkout is still the verifier's. None when nothing changed or no criterion asks."""
    if not targets(state):
        return
    with state.timed("stubbed_tree"):
        _prepare(state)


def _prepare(state: RunState) -> None:
    co, base = state.checkout, state.baseline
    if base.commit is not None and base.commit == co.head:
        return  # the submission changes nothing: there is no change to notice
    into = [state.config.hidden_tests.into] if state.config.hidden_tests else []
    merged = state.report.base
    # After a merge HEAD is the merge commit: its diff against the tip is the submission's part.
    against = merged.tip if merged is not None and merged.mode != "none" and merged.tip else base.commit
    try:
        changed = co.changed_paths(base)
        sources = [p for p in changed if p.endswith(PY_SUFFIXES + JS_SUFFIXES) and not is_test_side(p, into)]
        lines = _changed_lines(state, against, sources)
        stubbed: dict[str, stubs.Stubbed] = {}
        for path in sources:
            text = read_committed(co, path)
            if text is None:
                continue  # deleted, a link or too large: nothing to stub (loading names the odd ones)
            new = (
                against is None or co.git("cat-file", "-e", f"{against}:{path}", cwd=co.path, ok=True) is None
            )
            try:
                done = stubs.stub_changed(path, text, None if new else lines.get(path, frozenset()))
            except ValueError as exc:
                state.say(f"change sensitivity: {exc}; its functions are not stubbed")
                continue
            if done is not None:
                stubbed[path] = done
    except CheckoutError as exc:
        raise RunError(f"change sensitivity: {exc}") from exc
    if not stubbed:
        state.report.sensitivity = Sensitivity(note=NO_FUNCTION)
        state.say(f"change sensitivity: {NO_FUNCTION}")
        return
    functions = [f"{p}: {name}" for p, done in stubbed.items() for name in done.functions]
    source = co.path  # the grading tree by now: the stubbed run judges as the grading run does
    top = Path(tempfile.mkdtemp(prefix="taskgate-verify-"))
    state.stack.callback(shutil.rmtree, top, True)
    tree = top / "checkout"
    shutil.copytree(source, tree, symlinks=True)
    for rel, done in stubbed.items():
        target = tree / rel
        if target.is_symlink() or not target.is_file():
            continue  # the grading tree put something else there: never written through
        target.write_text(done.text)
    kept = _keep_named_tests(tree, targets(state), into)
    state.report.sensitivity = Sensitivity(functions=functions[:500])
    state.stubbed = StubbedTree(path=tree, functions=functions)
    state.say(
        f"change sensitivity: {len(functions)} changed functions stubbed out ({', '.join(functions[:5])}"
        + (" ..." if len(functions) > 5 else "")
        + f"); named tests run from {', '.join(kept) if kept else 'every test file'}"
    )


def _changed_lines(state: RunState, against: str | None, paths: list[str]) -> dict[str, frozenset[int]]:
    """The new side's lines each path adds or changes against `against`; a hunk that only
    deletes marks the line before it, so the function it was cut from counts as changed."""
    if not paths or against is None:
        return {}
    return changed_lines(state.checkout, against, paths, deletions=True)


def _keep_named_tests(tree: Path, criteria: list[Criterion], into: list[str]) -> list[str]:
    """Remove from `tree` the test files (by the runners' naming rules; conftest.py is harness)
    that define tests, none of them named, and that no kept file names (by its stem: an import of
    it, or of a helper in it); the files kept that define a named test. A criterion whose test no
    file is seen to define (a test made at run time) keeps every test file: nothing removed."""
    texts: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(tree).as_posix()
            if name == "conftest.py" or not rel.endswith(PY_SUFFIXES + JS_SUFFIXES):
                continue
            if is_test_path(rel, into) and not full.is_symlink():
                try:
                    texts[rel] = full.read_text()
                except (OSError, UnicodeDecodeError):
                    continue  # not read: kept
    defs = {rel: defined_tests(rel, text) for rel, text in texts.items()}
    defining: set[str] = set()
    for c in criteria:
        ref = c.verify_ref or ""
        found = {rel for rel in texts if _names_file(rel, ref) or defines_ref(defs[rel], ref)}
        if not found:
            return []
        defining |= found
    kept, todo = set(defining), list(defining)
    while todo:
        text = texts[todo.pop()]
        for rel in texts:
            stem = rel.rsplit("/", 1)[-1].split(".", 1)[0]
            if rel not in kept and re.search(rf"\b{re.escape(stem)}\b", text):
                kept.add(rel)
                todo.append(rel)
    for rel in texts:
        if rel not in kept and defs[rel]:
            (tree / rel).unlink()
    return sorted(defining)


def _names_file(rel: str, ref: str) -> bool:
    """Whether `ref` names the test file itself as a group: its module path (`tests.test_parse`),
    whole or its tail, or its path."""
    module = rel.rsplit(".", 1)[0].replace("/", ".")
    return bool(ref) and (ref in (module, rel) or module.endswith("." + ref))


def run(state: RunState) -> None:
    """Each passing target criterion's named tests once more in the stubbed tree; the evidence
    keeps how each did there. A criterion the stubbed run does not report is said on the run:
    the check could not tell."""
    tree = state.stubbed
    if tree is None:
        return
    results = state.report.results
    asked = [c for c in targets(state) if results[c.id].result is Evidence.PASS]
    if not asked:
        return
    v = state.verifier
    # Only the checks whose reports the asked criteria's evidence came from: the others hold none
    # of the named tests.
    sources = {s.check for c in asked if (s := results[c.id].source) is not None and s.check}
    cfg = state.config.model_copy(
        update={"checks": {n: k for n, k in state.config.checks.items() if n in sources}}
    )
    with state.timed("stubbed_run"):
        state.say(
            f"change sensitivity: {', '.join(c.id for c in asked)} again with the changed functions stubbed out"
        )
        checks: dict[str, CheckResult] = {}
        dirs = state.stack.enter_context(v.sandbox.hand_over(tree.path))
        try:
            started = run_checks(v, cfg, dirs, checks, label=STUBBED)
            reports = read_reports(v, cfg, tree.path, checks, started, set())
        except RunError as exc:
            # A stub can hang a check or stop its report: the run could not tell, nothing more.
            state.say(f"change sensitivity: the stubbed run broke ({exc}); it tells nothing")
            _note(state, f"the stubbed run broke: {exc}")
            return
        found = criteria_evidence(v, asked, cfg, reports, label=STUBBED)
    untold = []
    for c in asked:
        again = found[c.id]
        if again.result is Evidence.FAIL and not any(stubs.MARKER in t.message for t in again.failures):
            # It failed, but not on a stub: something else in the stubbed tree broke it, which
            # tells nothing of whether it notices the change.
            again = again.model_copy(
                update={
                    "result": Evidence.MISSING,
                    "detail": f"failed without a stub's error: {again.detail}",
                }
            )
        results[c.id] = results[c.id].model_copy(
            update={"stubbed": StubbedRun(result=again.result, detail=again.detail)}
        )
        if again.result not in (Evidence.PASS, Evidence.FAIL):
            untold.append(f"{c.id} ({again.result.value})")
    if untold:
        _note(state, f"the stubbed run did not tell for {', '.join(untold)}")


def _note(state: RunState, note: str) -> None:
    if state.report.sensitivity is not None:
        state.report.sensitivity = state.report.sensitivity.model_copy(update={"note": note[:2000]})
