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
from taskgate.domain.run_report import Evidence, Tripwires
from taskgate.domain.testdefs import JS_SUFFIXES, PY_SUFFIXES, TestDef, is_harness, is_test_path
from taskgate.domain.testrefs import failed_names, match_reports
from taskgate.domain.tripwires import Tripwire, canary, tripwire_cases, twin, without_tripwires
from taskgate.verifier.checking import REPORT_FAILED_LISTED
from taskgate.verifier.state import RunError, RunState, Written
from taskgate.verifier.trees import occupied

_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", "site-packages"})
_MAX_FILE_BYTES = 2_000_000
_TRIES = 5  # fresh names for a tripwire whose file would land on one of the tree's own


_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def _token() -> str:
    """A fresh name part: letters and digits with no fixed prefix or length, so nothing can
    tell a tripwire from a test by the shape of its name."""
    size = 10 + secrets.randbelow(7)
    return secrets.choice(_ALNUM[:26]) + "".join(secrets.choice(_ALNUM) for _ in range(size - 1))


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
    stops = {
        n: w
        for n, c in cfg.checks.items()
        if c.report is not None and (w := grading.stops_at_first_failure(c.command))
    }
    if stops:
        for name, word in stops.items():
            notes.append(
                f"check {name} stops at its first failing test ({word}): a tripwire, which fails by "
                "design, would stop it before the tests after it; none is written"
            )
        state.report.tripwires = Tripwires(notes=notes[:100])
        for n in notes:
            state.say(f"tripwires: {n}")
        return
    files = _test_files(root)
    written: list[Written] = []
    canaries: dict[tuple[str, str], str] = {}  # (directory, language) -> a named test's file
    near: dict[tuple[str, str], set[str]] = {}  # (directory, language) -> the criteria named there
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
            where = (d.path.rpartition("/")[0], "py" if d.path.endswith(PY_SUFFIXES) else "js")
            canaries.setdefault(where, d.path)
            near.setdefault(where, set()).add(c.id)
            try:
                made = _fresh(root, functools.partial(_twin, d, files[d.path]))
            except ValueError as exc:
                notes.append(f"{c.id}: no twin of `{of}` in {d.path}: {exc}")
                continue
            if made is None:
                notes.append(f"{c.id}: `{of}` in {d.path} has no assertion the verifier can perturb: no twin")
                continue
            written.append(Written(made, c.id, (c.id,)))
    for where, path in canaries.items():
        made = _fresh(root, functools.partial(canary, path, text=files[path]))
        if made is not None:
            written.append(Written(made, None, tuple(sorted(near[where]))))
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
    check's failing testcases counted without them (checks.run kept its output without them). A tripwire no report holds
    is `missing` only where a report holds a named test it stands beside: a runner that wrote
    no report, or never started, is the checks' failure or the run's error, not a bent grader."""
    if state.report.tripwires is None:
        return
    with state.timed("tripwires"):
        _read(state)


def _read(state: RunState) -> None:
    kept = state.report.tripwires
    assert kept is not None
    tokens = [w.tripwire.token for w in state.written]
    raw = state.reports
    for name, spec in state.config.checks.items():
        done = state.report.checks[name]
        if spec.report is None or name in raw or done.report_problem is not None:
            continue
        if tokens and done.exit_code == 1 and done.missing_tool is None:
            # Its runner's "tests failed" may be the tripwires' alone: only a report tells.
            raise RunError(
                f"check {name} exited 1 and wrote no report at {spec.report.path}: with the "
                "verifier's tripwires in its tree only the report tells a failure from theirs"
            )
    clean = {name: without_tripwires(report, tokens) for name, report in raw.items()}
    refs = {c.id: c.verify_ref or "" for c in state.work.of_kind(CriterionKind.TEST)}
    results = []
    for w in state.written:
        reported, check = _reported(raw, w.tripwire.token)
        if reported == "missing":
            found = [match_reports(clean, refs[cid]) for cid in w.beside]
            if not any(r.evidence is not Evidence.MISSING for r, _ in found):
                continue  # nothing it stands beside was reported: not judged
            check = next((name for r, name in found if name is not None), None)
        results.append(w.result(reported, check))
        if reported != "failed":
            state.say(f"tripwire {w.tripwire.kind} {w.tripwire.name}: reported {reported}, must fail")
    state.report.tripwires = kept.model_copy(update={"placed": results[:200]})
    for name, report in raw.items():
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


def _reported(reports: dict[str, Report], token: str) -> tuple[str, str | None]:
    """What the reports say of one tripwire, and a check whose report holds it: `passed` if any
    case of it passed in any report, `skipped` if every one was skipped, `failed` otherwise,
    `missing` where no report holds it."""
    got: set[TestOutcome] = set()
    check = None
    for name, report in reports.items():
        cases = tripwire_cases(report, token)
        if cases and (check is None or TestOutcome.PASSED in {t.outcome for t in cases}):
            check = name
        got.update(t.outcome for t in cases)
    if not got:
        return "missing", None
    if TestOutcome.PASSED in got:
        return "passed", check
    if got == {TestOutcome.SKIPPED}:
        return "skipped", check
    return "failed", check
