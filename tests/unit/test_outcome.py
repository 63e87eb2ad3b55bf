"""The server's outcome rule: passed only with exit 0 everywhere and positive evidence for all."""

from __future__ import annotations

from datetime import UTC, datetime

from taskgate.domain.models import (
    Criterion,
    CriterionKind,
    FailedTest,
    Risk,
    SelfReport,
    Spec,
    SpecStatus,
    Submission,
)
from taskgate.domain.outcome import Outcome, Verdict, decide
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence, EvidenceSource, RunReport
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
        RunReport(checks=OK if checks is None else checks, results=results, error=error),
        criteria=criteria,
        spec=spec,
        submission=submission,
        config=config,
    )


def test_passes_only_with_all_checks_zero_and_all_criteria_positive() -> None:
    got = _decide([TEST, REVIEW], {"AC-1.1": TEST_PASS, "AC-1.2": PASS}, spec=_spec(True))
    assert got.verdict is Verdict.PASSED
    bad_check = {"unit": CheckResult(exit_code=1, output_tail="boom")}
    got = _decide([TEST], {"AC-1.1": TEST_PASS}, checks=bad_check)
    assert got.verdict is Verdict.FAILED and got.findings == ["check unit exited 1"]
    assert [(c.name, c.exit_code, c.output_end) for c in got.checks] == [("unit", 1, "boom")]


def test_skipped_missing_ambiguous_are_not_passed() -> None:
    for ev in (Evidence.SKIPPED, Evidence.FAIL):
        got = _decide([TEST], {"AC-1.1": CriterionResult(result=ev, source=FROM_REPORT)})
        assert got.verdict is Verdict.FAILED
    got = _decide([TEST], {"AC-1.1": CriterionResult(result=Evidence.AMBIGUOUS, source=FROM_REPORT)})
    assert got.verdict is Verdict.SPEC_ERROR  # never a pass; no executor's failure either
    got = _decide([TEST], {})
    assert got.verdict is Verdict.FAILED and "AC-1.1 missing" in got.findings[0]


TEST2 = Criterion(id="AC-1.4", text="more", kind=CriterionKind.TEST, verify_ref="test_basic")
AMBIGUOUS_BASIC = CriterionResult(
    result=Evidence.AMBIGUOUS,
    detail="`test_basic` matches 71 tests: test a.test_basic, test b.test_basic and 69 more",
)
SAID_PASS = Submission(
    commit_sha="abcdef1",
    evidence="x",
    actor="agent:b",
    credential_id="k",
    submitted_at=T0,
    self_report={"AC-1.1": SelfReport.PASS, "AC-1.4": SelfReport.PASS},
)


def test_only_ambiguous_refs_are_a_spec_error_with_no_mismatch_and_the_reason() -> None:
    got = _decide([TEST, TEST2], {"AC-1.1": TEST_PASS, "AC-1.4": AMBIGUOUS_BASIC}, submission=SAID_PASS)
    assert got.verdict is Verdict.SPEC_ERROR
    assert got.summary == (
        "spec error: AC-1.4 `test_basic` matches 71 tests: test a.test_basic, test b.test_basic and 69 more"
    )
    assert got.self_report_mismatch == []
    assert [(c.id, c.spec_error) for c in got.criteria] == [("AC-1.4", True)]


def test_ambiguous_refs_with_a_real_failure_fail_and_are_listed_as_spec_errors() -> None:
    failing = CriterionResult(
        result=Evidence.FAIL,
        detail="1 test failed: a.b",
        source=FROM_REPORT,
        failures=[FailedTest(name="a.b", message="assert 1 == 2")],
    )
    got = _decide([TEST, TEST2], {"AC-1.1": failing, "AC-1.4": AMBIGUOUS_BASIC}, submission=SAID_PASS)
    assert got.verdict is Verdict.FAILED
    assert got.self_report_mismatch == ["AC-1.1"]  # the ambiguous one is the spec's, not the agent's
    assert got.findings[0] == "AC-1.1 fail: 1 test failed: a.b"
    assert got.findings[1].startswith("AC-1.4 spec error (the spec's to fix, not the code's): `test_basic`")
    assert [(t.name, t.message) for t in got.criteria[0].tests] == [("a.b", "assert 1 == 2")]
    # A failing check is a real failure too.
    got = _decide(
        [TEST2], {"AC-1.4": AMBIGUOUS_BASIC}, checks={"unit": CheckResult(exit_code=1, output_tail="boom")}
    )
    assert got.verdict is Verdict.FAILED


def test_an_ambiguous_result_on_a_criterion_that_has_no_ref_to_fix_is_a_failure() -> None:
    bogus = CriterionResult(result=Evidence.AMBIGUOUS, rationale="unsure")
    got = _decide([REVIEW], {"AC-1.2": bogus})
    assert got.verdict is Verdict.FAILED and not got.criteria[0].spec_error


def test_a_missing_commit_fails_the_run_with_the_hint_and_no_mismatch() -> None:
    got = decide(
        RunReport(checks={}, results={}, commit_missing=True),
        criteria=[TEST],
        spec=None,
        submission=SAID_PASS,
        config=CFG,
        fetched=("abcdef1", "file:///srv/repo.git"),
    )
    assert got.verdict is Verdict.FAILED and got.self_report_mismatch == []
    assert got.findings == ["commit abcdef1 is not in file:///srv/repo.git: push it, then submit again"]
    assert got.summary == got.findings[0]


def test_failing_criteria_come_before_failing_checks_and_a_check_keeps_the_end_of_its_output() -> None:
    output = "".join(f"line {i}\n" for i in range(1000)) + "=== 1 failed, 2 passed in 0.1s ==="
    failing = CriterionResult(result=Evidence.FAIL, detail="1 test failed: a.b", source=FROM_REPORT)
    got = _decide(
        [TEST], {"AC-1.1": failing}, checks={"unit": CheckResult(exit_code=1, output_tail=output[-20_000:])}
    )
    assert got.findings == ["AC-1.1 fail: 1 test failed: a.b", "check unit exited 1"]
    end = got.checks[0].output_end
    assert end.endswith("=== 1 failed, 2 passed in 0.1s ===") and end.startswith("…\nline ")
    assert len(end) <= 2000


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
    """A task with test criteria and no configured report ends as an error."""
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
