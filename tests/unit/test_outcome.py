"""The server's outcome rule: passed only with exit 0 everywhere and positive evidence for all."""

from __future__ import annotations

from datetime import UTC, datetime

from taskgate.domain.models import Criterion, CriterionKind, Risk, SelfReport, Spec, SpecStatus, Submission
from taskgate.domain.outcome import CheckResult, CriterionResult, Evidence, Verdict, decide

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
PASS = CriterionResult(result=Evidence.PASS, rationale="fine")


def test_passes_only_with_all_checks_zero_and_all_criteria_positive() -> None:
    got = decide(
        criteria=[TEST, REVIEW],
        spec=_spec(True),
        checks=OK,
        results={"AC-1.1": PASS, "AC-1.2": PASS},
        submission=None,
    )
    assert got.verdict is Verdict.PASSED
    bad_check = {"unit": CheckResult(exit_code=1, output_tail="boom")}
    got = decide(criteria=[TEST], spec=None, checks=bad_check, results={"AC-1.1": PASS}, submission=None)
    assert got.verdict is Verdict.FAILED and "check unit exited 1: boom" in got.findings[0]


def test_skipped_missing_ambiguous_are_not_passed() -> None:
    for ev in (Evidence.SKIPPED, Evidence.AMBIGUOUS, Evidence.FAIL):
        got = decide(
            criteria=[TEST],
            spec=None,
            checks=OK,
            results={"AC-1.1": CriterionResult(result=ev)},
            submission=None,
        )
        assert got.verdict is Verdict.FAILED
    got = decide(criteria=[TEST], spec=None, checks=OK, results={}, submission=None)
    assert got.verdict is Verdict.FAILED and "AC-1.1 missing" in got.findings[0]


def test_a_review_pass_without_rationale_is_missing() -> None:
    bare = CriterionResult(result=Evidence.PASS, rationale="  ")
    got = decide(criteria=[REVIEW], spec=None, checks=OK, results={"AC-1.2": bare}, submission=None)
    assert got.verdict is Verdict.FAILED and got.findings[0].startswith("AC-1.2 missing")


def test_timeouts_and_errors_are_errors_not_failures() -> None:
    got = decide(
        criteria=[TEST], spec=None, checks={"unit": CheckResult(timed_out=True)}, results={}, submission=None
    )
    assert got.verdict is Verdict.ERROR
    got = decide(criteria=[TEST], spec=None, checks={}, results={}, submission=None, error="no report")
    assert got.verdict is Verdict.ERROR


def test_command_criteria_need_an_approved_spec() -> None:
    results = {"AC-1.3": PASS}
    assert (
        decide(criteria=[COMMAND], spec=_spec(False), checks=OK, results=results, submission=None).verdict
        is Verdict.ERROR
    )
    assert (
        decide(criteria=[COMMAND], spec=None, checks=OK, results=results, submission=None).verdict
        is Verdict.ERROR
    )
    assert (
        decide(criteria=[COMMAND], spec=_spec(True), checks=OK, results=results, submission=None).verdict
        is Verdict.PASSED
    )


def test_self_report_mismatch_names_criteria_the_agent_called_passing() -> None:
    sub = Submission(
        commit_sha="abcdef1",
        evidence="x",
        actor="agent:b",
        credential_id="k",
        submitted_at=T0,
        self_report={"AC-1.1": SelfReport.PASS, "AC-1.2": SelfReport.FAIL},
    )
    got = decide(
        criteria=[TEST, REVIEW],
        spec=None,
        checks=OK,
        results={
            "AC-1.1": CriterionResult(result=Evidence.FAIL),
            "AC-1.2": CriterionResult(result=Evidence.FAIL),
        },
        submission=sub,
    )
    assert got.self_report_mismatch == ["AC-1.1"]


def test_no_criteria_is_an_error_never_a_pass() -> None:
    got = decide(criteria=[], spec=None, checks=OK, results={}, submission=None)
    assert got.verdict is Verdict.ERROR


def test_an_agent_added_command_outside_the_spec_is_an_error() -> None:
    own = Criterion(id="AC-p-1.1", text="x", kind=CriterionKind.COMMAND, verify_ref="rm -rf /")
    got = decide(criteria=[own], spec=_spec(True), checks=OK, results={"AC-p-1.1": PASS}, submission=None)
    assert got.verdict is Verdict.ERROR
    swapped = Criterion(id="AC-1.3", text="lint", kind=CriterionKind.COMMAND, verify_ref="curl x | sh")
    got = decide(criteria=[swapped], spec=_spec(True), checks=OK, results={"AC-1.3": PASS}, submission=None)
    assert got.verdict is Verdict.ERROR
