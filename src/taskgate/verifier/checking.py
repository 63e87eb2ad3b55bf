"""Running the configured checks in a tree and reading what they report: every run of a
verification (and a batch's) does this the same way, on whichever tree it judges.

A report is the check's own, never the commit's: every report path is cleared before the checks
run, and a report last written before its check started is not read. A check that times out
ends the run as an error.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from taskgate.domain.grading import without_tripwire_output
from taskgate.domain.models import Criterion
from taskgate.domain.reports import Report, ReportError
from taskgate.domain.run_report import CheckResult, CriterionResult, EvidenceSource
from taskgate.domain.runners import runner_line
from taskgate.domain.testrefs import failed_names, match_reports
from taskgate.domain.text import TAIL_CHARS, clip_words
from taskgate.domain.verifier_config import VerifierConfig
from taskgate.verifier.reading import ReportMissing, read_report
from taskgate.verifier.sandbox import RunDirs
from taskgate.verifier.state import RunError, Verifier

DETAIL_CHARS = 1000
REPORT_FAILED_LISTED = 10  # failing testcases of a report named with its check's result


def seconds(minutes: float) -> str:
    return f"{minutes * 60:.0f} s" if minutes < 1 else f"{minutes:g} min"


def tail(text: str, n: int = TAIL_CHARS) -> str:
    return text[-n:]


def one_line(text: str, limit: int = 200) -> str:
    """A detail on one progress line, cut after a whole word: a test's multi-line message would
    break the terminal's one-line-per-step reading (the evidence sent to the server keeps it)."""
    return clip_words(text, limit)


def run_checks(
    v: Verifier,
    cfg: VerifierConfig,
    dirs: RunDirs,
    into: dict[str, CheckResult],
    label: str = "",
    tripwires: Sequence[str] = (),
) -> dict[str, float]:
    """Run every check in `dirs`, recording each result in `into`; returns when each started
    (wall clock, as file times are). `label`: what this run is, said on its progress lines.
    `tripwires`: their tokens, whose part of each check's output is left out of what is kept
    (the end a finding quotes is the executor's tests')."""
    started: dict[str, float] = {}
    for name, check in cfg.checks.items():
        minutes = check.timeout_minutes or cfg.check_timeout_minutes
        v.progress(f"check {name}{label}: {check.command}")
        # A second's slack: some filesystems keep file times coarser than the clock.
        started[name] = time.time() - 1.0
        done = v.run(check.command, dirs, minutes)
        into[name] = CheckResult(
            exit_code=done.exit_code,
            timed_out=done.timed_out,
            output_tail=tail(without_tripwire_output(done.output, tripwires)),
            duration_ms=done.duration_ms,
            missing_tool=v.missing(check.command, done),
            runner=runner_line(done.head, done.output),
        )
        if done.timed_out:
            v.progress(f"check {name}{label}: timed out after {seconds(minutes)}, stopped")
            raise RunError(f"check {name} timed out after {seconds(minutes)}")
        ran = f" ({into[name].runner})" if into[name].runner else ""
        v.progress(f"check {name}{label}: exit {done.exit_code} in {done.duration_ms / 1000:.2f} s{ran}")
        if into[name].missing_tool:
            v.progress(f"check {name}{label}: its shell could not run `{into[name].missing_tool}` here")
    return started


def clear_reports(v: Verifier, cfg: VerifierConfig, tree: Path) -> set[str]:
    """Delete every report path before the checks run (a report is the check's own, never
    the commit's); returns the checks whose report path the commit held a file at."""
    committed: set[str] = set()
    for name, check in cfg.checks.items():
        if check.report is None:
            continue
        target = tree / check.report.path
        if not target.parent.resolve().is_relative_to(tree.resolve()):
            # A committed link out of the checkout: deleting through it would reach the
            # verifier's own files. Reading it is refused later for the same reason.
            committed.add(name)
            continue
        if target.is_symlink() or target.exists():
            committed.add(name)
            v.progress(f"report {name}: the commit holds {check.report.path}; deleted before the check")
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
    return committed


def read_reports(
    v: Verifier,
    cfg: VerifierConfig,
    tree: Path,
    checks: dict[str, CheckResult],
    started: dict[str, float],
    committed: set[str],
) -> dict[str, Report]:
    """Each check's report in `tree`, its digest and failing testcases noted on its result in
    `checks`. A check that exited 0 without one ends the run as an error."""
    reports: dict[str, Report] = {}
    for name, check in cfg.checks.items():
        if check.report is None:
            continue
        if name in committed:
            checks[name] = checks[name].model_copy(update={"report_problem": "committed"})
        try:
            read = read_report(tree, check.report, owner=v.sandbox.check_uid)
        except ReportMissing:
            if checks[name].exit_code == 0:
                raise RunError(f"check {name} exited 0 but wrote no report at {check.report.path}") from None
            # It failed before writing one: a failing check, whose criteria have no evidence.
            v.progress(f"report {name}: none at {check.report.path} (the check failed)")
            continue
        except ReportError as exc:
            raise RunError(f"report of check {name}: {exc}") from exc
        if read.mtime < started[name]:
            # Written before the check began (a file copied with its old time): not this run's.
            checks[name] = checks[name].model_copy(
                update={"report_problem": "stale", "report_sha256": read.sha256}
            )
            v.progress(f"report {name}: {check.report.path} was last written before the check started")
            continue
        reports[name] = read.report
        failing = failed_names(read.report)
        checks[name] = checks[name].model_copy(
            update={
                "report_sha256": read.sha256,
                "report_failed": len(failing),
                "report_failed_names": failing[:REPORT_FAILED_LISTED],
            }
        )
        v.progress(f"report {name}: {check.report.path} read (sha256 {read.sha256})")
    return reports


def criteria_evidence(
    v: Verifier,
    tests: Sequence[Criterion],
    cfg: VerifierConfig,
    reports: dict[str, Report],
    label: str = "",
) -> dict[str, CriterionResult]:
    """Each test criterion's evidence, read from the reports by its ref (domain/testrefs.py)."""
    paths = {n: c.report.path for n, c in cfg.checks.items() if c.report is not None}
    out: dict[str, CriterionResult] = {}
    for c in tests:
        ref = c.verify_ref or ""
        found, check = match_reports(reports, ref)
        source = EvidenceSource(check=check, report=paths[check], ref=ref) if check else None
        out[c.id] = CriterionResult(
            result=found.evidence,
            detail=found.detail[:DETAIL_CHARS],
            source=source,
            failures=list(found.failures),
        )
        said = found.detail + (f" — {found.failures[0].message}" if found.failures else "")
        v.progress(f"{c.id}{label} {found.evidence.value}: {one_line(said)}")
    return out
