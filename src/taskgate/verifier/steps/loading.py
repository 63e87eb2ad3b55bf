"""What the verifier cannot read is a human's call (domain/loading.py): the paths the submission
adds or changes that are loaded or run but are not source the screen reads, or that change what
gets loaded, found from git's facts before the merge brings in the base's files (git's work, so
before the checkout is handed over); after the checks, the test files the submission adds or
changes that no report of its own tree names. Each hit holds the run for a person, the paths
named in the reason."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable

from taskgate.domain import loading
from taskgate.domain.baseline import check_commands
from taskgate.domain.reports import Report
from taskgate.domain.run_report import MAX_LOADING, LoadingHit
from taskgate.domain.screen import MAX_BYTES
from taskgate.verifier.checkout import CheckoutError
from taskgate.verifier.state import RunError, RunState


def read(state: RunState) -> None:
    co, base = state.checkout, state.baseline
    if base.commit is not None and base.commit == co.head:
        return  # the submission changes nothing
    with state.timed("loading"):
        try:
            changes = _changes(state)
            if not changes:
                return
            tree = [
                p for p in co.git("ls-tree", "-r", "-z", "--name-only", "HEAD", cwd=co.path).split("\0") if p
            ]
            texts = {p: _read_at(state, p) for p in loading.baseline_paths(changes)}
        except CheckoutError as exc:
            raise RunError(f"loading: {exc}") from exc
        commands = check_commands([c.command for c in state.config.checks.values()], state.report.baseline)
        hits = loading.find(
            changes,
            tree=tree,
            commands=commands,
            baseline_text=texts,
            # The verifier's interpreter stands for the checks': both are the image's Python.
            knowledge=loading.Knowledge(stdlib=frozenset(sys.stdlib_module_names)),
        )
    _record(state, hits)
    state.changes = [c.path for c in changes if c.present]


def _read_at(state: RunState, path: str) -> str | None:
    try:
        return state.checkout.read_at(state.baseline, path)
    except UnicodeDecodeError:
        return None  # not text at the baseline: no section of it to compare


def _changes(state: RunState) -> list[loading.Change]:
    """Each changed path as git's raw diff gives it, with its bytes from the fresh checkout (the
    submitted tree: the merge comes later): a link's target, a file's first MAX_BYTES + 1."""
    co, base = state.checkout, state.baseline
    old = base.commit or co.git("hash-object", "-t", "tree", os.devnull, cwd=co.path)
    raw = co.git("diff", "--raw", "-z", "--no-renames", "--no-abbrev", old, "HEAD", cwd=co.path)
    fields = raw.split("\0")
    out: list[loading.Change] = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(":") or not path:
            continue
        old_mode, new_mode, _, _, letter = meta[1:].split(" ")[:5]
        status = loading.STATUS_LETTERS.get(letter[:1], "modified")
        if status == "deleted":
            out.append(loading.Change.of(path, status, old_mode, None))
            continue
        out.append(_present(co.path / path, path, status, new_mode))
    return out


def _present(full: os.PathLike[str], path: str, status: loading.Status, mode: str) -> loading.Change:
    if mode == loading.MODE_GITLINK:
        return loading.Change.of(path, status, mode, None)
    try:
        st = os.lstat(full)
    except OSError:
        return loading.Change.of(path, status, mode, b"")
    if stat.S_ISLNK(st.st_mode):
        return loading.Change.of(path, status, mode, os.fsencode(os.readlink(full)))
    if not stat.S_ISREG(st.st_mode):
        return loading.Change.of(path, status, mode, b"")
    with open(full, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    return loading.Change.of(path, status, mode, data, size=st.st_size)


def uncollected(state: RunState) -> None:
    """The test files the submission adds or changes that no report of the run on its own tree
    names."""
    with_report = [n for n, c in state.config.checks.items() if c.report is not None]
    # The run on the submission's whole tree where there was one: the grading run leaves out the
    # test files no criterion names, so it cannot say whether the runner collects them.
    reports = state.submitted_reports if state.submitted_reports is not None else state.reports
    if not with_report or any(n not in reports for n in with_report):
        return  # a check without its report names nothing: no file can be judged uncollected
    found = uncollected_in(state.changes, reports.values())
    if found:
        _record(state, found)


def uncollected_in(changed: Iterable[str], reports: Iterable[Report]) -> list[loading.Hit]:
    """loading.uncollected over the reports of a run that had the submission's test files."""
    tests = [t for report in reports for t in report.all_tests()]
    return loading.uncollected(
        changed, files=[t.file for t in tests], classnames=[t.classname for t in tests]
    )


def _record(state: RunState, hits: list[loading.Hit]) -> None:
    if not hits:
        return
    state.say(f"loading: {loading.reason(hits)}")
    have = state.report.loading
    room = MAX_LOADING - len(have)
    have.extend(LoadingHit(path=h.path[:1000], kind=h.kind, why=h.why[:400]) for h in hits[:room])
