"""Hidden tests (verifier/hidden.py) in a run of their own: a copy of the grading tree (the
submission's source, the baseline's harness) with every other test file taken out and the
hidden files placed at `into`, made while git is still the verifier's; after the grading run,
every check runs there and every test the hidden files define must be reported passed. Nothing
of that run's output is sent: a check's output can quote the hidden tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from taskgate.domain.run_report import CheckResult
from taskgate.domain.testdefs import TestDef, defined_tests, is_harness, is_test_path
from taskgate.verifier import hidden as hidden_tests
from taskgate.verifier.checking import clear_reports, read_reports, run_checks
from taskgate.verifier.sandbox import RUN_DIR_MODE
from taskgate.verifier.state import RunError, RunState

_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv"})


def place(state: RunState) -> None:
    spec = state.config.hidden_tests
    if spec is None:
        return
    with state.timed("hidden"):
        where = _tree(state)
        try:
            placed = hidden_tests.place(spec, state.checkout, where)
        except hidden_tests.HiddenError as exc:
            if exc.detail:
                state.say(f"hidden tests: {exc.detail}")
            raise RunError(str(exc)) from exc
    state.placed, state.hidden_tree = placed, where
    state.say(
        f"hidden tests: {len(placed.files)} files of {placed.commit[:12]} placed in a tree of their own"
    )


def _tree(state: RunState) -> Path:
    """The grading tree copied, without its test files (the harness, conftest.py included,
    stays: the hidden tests run on the baseline's)."""
    top = Path(tempfile.mkdtemp(prefix="taskgate-verify-"))
    state.stack.callback(shutil.rmtree, top, True)
    os.chmod(top, RUN_DIR_MODE)
    where = top / "checkout"
    shutil.copytree(state.checkout.path, where, symlinks=True)
    for here, dirs, files in os.walk(where):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not os.path.islink(os.path.join(here, d))]
        for name in files:
            rel = (Path(here) / name).relative_to(where).as_posix()
            if is_test_path(rel) and not is_harness(rel):
                (Path(here) / name).unlink()
    return where


def _defined(root: Path, files: tuple[str, ...]) -> list[TestDef]:
    out: list[TestDef] = []
    for rel in files:
        path = root / rel
        if path.is_symlink() or not is_test_path(rel):
            continue
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        out += [d for d in defined_tests(rel, text) if d.kind == "test"]
    return out


def run(state: RunState) -> None:
    placed, where = state.placed, state.hidden_tree
    if placed is None or where is None:
        return
    v, cfg = state.verifier, state.config
    with state.timed("hidden"):
        defined = _defined(where, placed.files)
        clear_reports(v, cfg, where)
        checks: dict[str, CheckResult] = {}
        with v.sandbox.lend(where) as dirs:
            started = run_checks(v, cfg, dirs, checks, " (hidden tests)")
            reports = read_reports(v, cfg, where, checks, started, set())
    state.report.hidden_tests = ran = hidden_tests.outcome(placed, list(reports.values()), defined)
    state.say(
        f"hidden tests: {ran.ran} ran, {ran.failed_count} failed, {len(ran.skipped)} skipped, "
        f"{len(ran.missing)} missing" + "".join(f"; {t.name}" for t in ran.failed[:5])
    )
    if ran.ran == 0 and not ran.skipped:
        # Not one of them reported: the checks do not collect `into` (the config's to fix).
        raise RunError(
            f"the hidden tests placed at {placed.spec.into} are in no check's report: "
            "the checks must collect that directory"
        )
