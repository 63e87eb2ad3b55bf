"""Tripwires in the grading run (domain/tripwires.py): before the checkout is handed over, a
twin of each named test (its expected values perturbed) and a canary beside each named test's
file, with names drawn fresh for this run, are written where the runner collects the named test.
After the checks, each must be reported failed; what each check reported of them is kept on the
run, and the reports lose them before any criterion's evidence is read from them."""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from taskgate.domain import grading
from taskgate.domain.models import CriterionKind
from taskgate.domain.reports import Report, TestOutcome
from taskgate.domain.run_report import Tripwires
from taskgate.domain.testdefs import JS_SUFFIXES, PY_SUFFIXES, TestDef, is_harness, is_test_path
from taskgate.domain.testrefs import failed_names
from taskgate.domain.tripwires import Tripwire, canary, tripwire_cases, twin, without_tripwires
from taskgate.verifier.checking import REPORT_FAILED_LISTED
from taskgate.verifier.state import RunState, Written
from taskgate.verifier.trees import occupied

_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", "site-packages"})
_MAX_FILE_BYTES = 2_000_000
_TRIES = 5  # fresh names for a tripwire whose file would land on one of the tree's own


def _token() -> str:
    return "tw" + secrets.token_hex(8)


def _test_files(root: Path) -> dict[str, str]:
    """The grading tree's test files (by the runners' naming rules) as text."""
    out: dict[str, str] = {}
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not os.path.islink(os.path.join(here, d))]
        for name in files:
            if not name.endswith(PY_SUFFIXES + JS_SUFFIXES):
                continue
            full = Path(here) / name
            rel = full.relative_to(root).as_posix()
            if not is_test_path(rel) or is_harness(rel) or full.is_symlink():
                continue
            try:
                if full.stat().st_size > _MAX_FILE_BYTES:
                    continue
                out[rel] = full.read_text()
            except (OSError, UnicodeDecodeError):
                continue
    return out


def place(state: RunState) -> None:
    tests = state.work.of_kind(CriterionKind.TEST)
    if not tests:
        return
    with state.timed("tripwires"):
        _place(state)


def _write(root: Path, made: Tripwire) -> bool:
    if occupied(root, made.path) is not None:
        return False
    target = root / made.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(made.text)
    return True


def _fresh(root: Path, make: Callable[[str], Tripwire | None]) -> Tripwire | None:
    """The tripwire `make` builds for a fresh token, written into `root`; None when it has none
    (a test with no assertion to perturb)."""
    for _ in range(_TRIES):
        made = make(_token())
        if made is None or _write(root, made):
            return made
    return None


def _twin(d: TestDef, text: str, token: str) -> Tripwire | None:
    return twin(d.path, text, d, token)


def _place(state: RunState) -> None:
    root, cfg = state.checkout.path, state.config
    notes: list[str] = []
    named_one_by_one: set[str] = set()
    for name, check in cfg.checks.items():
        if check.report is None:
            continue
        listed = grading.names_test_files(check.command)
        if listed:
            named_one_by_one.update(listed)
            notes.append(
                f"check {name} names its test files one by one ({', '.join(listed[:5])}): the verifier "
                "cannot make it collect tripwires beside them; none is written for those files"
            )
    files = _test_files(root)
    written: list[Written] = []
    canaries: dict[tuple[str, str], str] = {}  # (directory, language) -> a named test's file
    for c in state.work.of_kind(CriterionKind.TEST):
        defs = grading.named_definitions(files, c.verify_ref or "")
        if not defs:
            notes.append(f"{c.id}: no test file of the grading tree defines `{c.verify_ref}`: no twin")
            continue
        for d in defs:
            of = " > ".join([*d.groups, d.name])
            if d.path in named_one_by_one:
                continue
            # A canary beside every named test's file, twinned or not: it catches what bends
            # every result.
            folder = d.path.rpartition("/")[0]
            canaries.setdefault((folder, "py" if d.path.endswith(PY_SUFFIXES) else "js"), d.path)
            try:
                made = _fresh(root, functools.partial(_twin, d, files[d.path]))
            except ValueError as exc:
                notes.append(f"{c.id}: no twin of `{of}` in {d.path}: {exc}")
                continue
            if made is None:
                notes.append(f"{c.id}: `{of}` in {d.path} has no assertion the verifier can perturb: no twin")
                continue
            written.append(Written(made, c.id))
    for path in canaries.values():
        made = _fresh(root, functools.partial(canary, path, text=files[path]))
        if made is not None:
            written.append(Written(made, None))
    state.written = written
    state.report.tripwires = Tripwires(notes=notes[:100])
    for n in notes:
        state.say(f"tripwires: {n}")
    if written:
        twins = sum(1 for w in written if w.tripwire.kind == "twin")
        state.say(
            f"tripwires: {twins} twins and {len(written) - twins} canaries written into the grading tree"
        )


def read(state: RunState) -> None:
    """What each check reported of each tripwire; then the reports without them, and each
    check's failing testcases counted without them."""
    kept = state.report.tripwires
    if kept is None:
        return
    tokens = [w.tripwire.token for w in state.written]
    raw = state.reports
    results = []
    for w in state.written:
        reported, check = "missing", None
        for name, report in raw.items():
            cases = tripwire_cases(report, w.tripwire.token)
            if not cases:
                continue
            check = name
            outcomes = {t.outcome for t in cases}
            if TestOutcome.PASSED in outcomes:
                reported = "passed"
            elif outcomes == {TestOutcome.SKIPPED}:
                reported = "skipped" if reported == "missing" else reported
            elif reported == "missing":
                reported = "failed"
        results.append(w.result(reported, check))
        if reported != "failed":
            state.say(f"tripwire {w.tripwire.kind} {w.tripwire.name}: reported {reported}, must fail")
    state.report.tripwires = kept.model_copy(update={"placed": results[:200]})
    clean: dict[str, Report] = {}
    for name, report in raw.items():
        clean[name] = without_tripwires(report, tokens)
        failing = failed_names(clean[name])
        tripped = sum(
            1 for tok in tokens for t in tripwire_cases(report, tok) if t.outcome is TestOutcome.FAILED
        )
        state.report.checks[name] = state.report.checks[name].model_copy(
            update={
                "report_failed": len(failing),
                "report_failed_names": failing[:REPORT_FAILED_LISTED],
                "tripwires_failed": tripped,
            }
        )
    state.reports = clean
