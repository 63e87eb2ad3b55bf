"""The outcome rule: the server, not the verifier, decides a run (DESIGN.md section 4, seed 000).

A run passes only if every check exited 0 and every criterion has positive evidence.
Skipped, missing or ambiguous evidence is not a pass. A broken check (timeout, no report,
checkout failure) is an error, which uses no attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from taskgate.domain.models import Criterion, CriterionKind, SelfReport, Spec, Submission


class Evidence(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"
    MISSING = "missing"
    AMBIGUOUS = "ambiguous"


class CheckResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    exit_code: int | None = None
    timed_out: bool = False
    output_tail: str = Field(default="", max_length=20_000)
    duration_ms: int | None = Field(default=None, ge=0)


class EvidenceSource(BaseModel):
    """Where a criterion's evidence came from: the check and report a test ref was read from,
    or the command a command criterion ran."""

    model_config = ConfigDict(extra="forbid")
    check: str | None = Field(default=None, max_length=64)
    report: str | None = Field(default=None, max_length=512)
    ref: str = Field(max_length=4000)


class CriterionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    result: Evidence
    detail: str = Field(default="", max_length=20_000)
    rationale: str | None = Field(default=None, max_length=20_000)
    source: EvidenceSource | None = None


class Verdict(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"


@dataclass
class Outcome:
    verdict: Verdict
    summary: str
    findings: list[str] = field(default_factory=list)
    self_report_mismatch: list[str] = field(default_factory=list)


def command_criteria_allowed(criteria: list[Criterion], spec: Spec | None) -> bool:
    """A command criterion's verify_ref runs only if it is one of its spec's own criteria and a
    human approved that spec (or an architect, for low risk: the only approval an architect can
    give). A command an agent attached to a task by itself was approved by nobody."""
    commands = [c for c in criteria if c.kind is CriterionKind.COMMAND]
    if not commands:
        return True
    if spec is None or spec.approved_by is None:
        return False
    approved = {(c.id, c.verify_ref) for c in spec.criteria if c.kind is CriterionKind.COMMAND}
    return all((c.id, c.verify_ref) in approved for c in commands)


def decide(
    *,
    criteria: list[Criterion],
    spec: Spec | None,
    checks: dict[str, CheckResult],
    results: dict[str, CriterionResult],
    submission: Submission | None,
    expected_checks: list[str] | None = None,
    error: str | None = None,
) -> Outcome:
    """`expected_checks`: the names in the project's verifier config; a check the verifier did not
    report is an error (the verifier broke), never a silent pass."""
    if error:
        return Outcome(Verdict.ERROR, f"verifier error: {error}")
    if not criteria:
        return Outcome(Verdict.ERROR, "the task holds no acceptance criterion; nothing can be verified")
    unreported = sorted(set(expected_checks or []) - set(checks))
    if unreported:
        return Outcome(Verdict.ERROR, f"configured checks not reported: {', '.join(unreported)}")
    timed_out = sorted(name for name, c in checks.items() if c.timed_out)
    if timed_out:
        return Outcome(Verdict.ERROR, f"check timed out: {', '.join(timed_out)}")
    held_ids = {c.id for c in criteria}
    if not command_criteria_allowed(criteria, spec):
        return Outcome(
            Verdict.ERROR,
            "a command criterion was not approved by a human with its spec; it was not run",
        )
    findings: list[str] = []
    failing_checks = sorted(n for n, c in checks.items() if c.exit_code != 0)
    for name in failing_checks:
        tail = checks[name].output_tail.strip()
        findings.append(
            f"check {name} exited {checks[name].exit_code}" + (f": {tail[-2000:]}" if tail else "")
        )
    failed_criteria = []
    for c in criteria:
        r = results.get(c.id)
        evidence = r.result if r is not None else Evidence.MISSING
        if (
            c.kind is CriterionKind.REVIEW
            and evidence is Evidence.PASS
            and not (r and (r.rationale or "").strip())
        ):
            evidence = Evidence.MISSING  # a reviewer's pass without a rationale is no evidence
        if evidence is not Evidence.PASS:
            failed_criteria.append(c.id)
            detail = (r.detail or r.rationale or "") if r is not None else "no evidence recorded"
            findings.append(f"{c.id} {evidence.value}: {detail}".rstrip(": "))
    unknown = sorted(set(results) - held_ids)
    if unknown:
        findings.append(f"evidence for criteria the task does not hold was ignored: {', '.join(unknown)}")
    mismatch = []
    if submission is not None:
        mismatch = sorted(
            cid for cid in failed_criteria if submission.self_report.get(cid) is SelfReport.PASS
        )
    if not failing_checks and not failed_criteria:
        return Outcome(
            Verdict.PASSED, f"all {len(checks)} checks exited 0; all {len(criteria)} criteria passed"
        )
    summary = (
        f"{len(failing_checks)} failing checks, {len(failed_criteria)} criteria without positive evidence"
    )
    return Outcome(Verdict.FAILED, summary, findings, mismatch)
