"""Command criteria: each approved command run in the checkout as the check user; exit 0
passes. All of a run's command criteria share one check timeout (the server's budget counts
one)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from taskgate.domain.models import Criterion, CriterionKind
from taskgate.domain.run_report import CriterionResult, Evidence, EvidenceSource
from taskgate.domain.text import tail_lines
from taskgate.domain.tooling import ADVICE, no_tool
from taskgate.domain.verifier_config import VerifierConfig
from taskgate.verifier.checking import DETAIL_CHARS, seconds
from taskgate.verifier.sandbox import RunDirs
from taskgate.verifier.state import RunError, RunState, Verifier


def run(state: RunState) -> None:
    commands = state.work.of_kind(CriterionKind.COMMAND)
    if not commands:
        return
    assert state.dirs is not None
    with state.timed("commands"):
        state.report.results.update(run_commands(state.verifier, commands, state.config, state.dirs))


def run_commands(
    v: Verifier, commands: Sequence[Criterion], cfg: VerifierConfig, dirs: RunDirs
) -> dict[str, CriterionResult]:
    deadline = time.monotonic() + cfg.check_timeout_minutes * 60
    out: dict[str, CriterionResult] = {}
    for c in commands:
        command = c.verify_ref or ""
        left = (deadline - time.monotonic()) / 60
        v.progress(f"{c.id} command: {command}")
        done = v.run(command, dirs, max(left, 0.0))
        if done.timed_out:
            raise RunError(
                f"command criteria took longer than {seconds(cfg.check_timeout_minutes)} (at {c.id})"
            )
        tool = v.missing(command, done)
        if tool is not None and done.exit_code is not None:
            raise RunError(no_tool(tool, f"{c.id}'s command", command, done.exit_code) + ADVICE)
        ok = done.exit_code == 0
        detail = f"exit {done.exit_code} in {done.duration_ms / 1000:.2f} s"
        if not ok and done.output.strip():
            detail += ":\n" + tail_lines(done.output, DETAIL_CHARS)  # its end: where the error is
        out[c.id] = CriterionResult(
            result=Evidence.PASS if ok else Evidence.FAIL,
            detail=detail,
            source=EvidenceSource(ref=command),
        )
        v.progress(f"{c.id} {'pass' if ok else 'fail'}: exit {done.exit_code}")
    return out
