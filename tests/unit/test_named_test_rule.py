"""The server's reading of a second run on the baseline's test files: a named test that passes
only with the submission's edits to it holds the run for a person; judged by the baseline's
version, it decides like any other evidence."""

from __future__ import annotations

from taskgate.domain.models import Criterion, CriterionKind
from taskgate.domain.outcome import Verdict, decide
from taskgate.domain.run_report import (
    CheckResult,
    CriterionResult,
    Evidence,
    EvidenceSource,
    Restored,
    RunReport,
)
from taskgate.domain.verifier_config import VerifierConfig

TEST = Criterion(id="AC-1", text="digits", kind=CriterionKind.TEST, verify_ref="t.test_a")
OTHER = Criterion(id="AC-2", text="case", kind=CriterionKind.TEST, verify_ref="t.test_b")
CFG = VerifierConfig.model_validate(
    {"checks": {"unit": {"command": "pytest", "report": {"path": "r.xml", "format": "junit"}}}}
)
OK = {"unit": CheckResult(exit_code=0)}


def _result(now: Evidence, first: Evidence | None, ref: str = "t.test_a") -> CriterionResult:
    restored = (
        Restored(files=["t.py"], submitted=first, submitted_detail="1 passed", diff="-    assert f(1) == 2")
        if first is not None
        else None
    )
    source = EvidenceSource(check="unit", report="r.xml", ref=ref)
    return CriterionResult(result=now, detail=f"1 test {now.value}", source=source, restored=restored)


def test_passing_only_with_the_submissions_edits_is_held_with_both_results_and_the_diff() -> None:
    out = decide(
        RunReport(
            checks=OK,
            results={
                "AC-1": _result(Evidence.FAIL, Evidence.PASS),
                "AC-2": _result(Evidence.PASS, None, "t.test_b"),
            },
        ),
        criteria=[TEST, OTHER],
        spec=None,
        submission=None,
        config=CFG,
    )
    assert out.verdict is Verdict.NEEDS_HUMAN
    assert out.summary == (
        "the submission's edits to its named tests are what make them pass: AC-1 passes with the "
        "submission's test files and not with the baseline's (t.py): fail"
    )
    assert out.edited == ["AC-1"] and out.held == []
    assert out.diff == "-    assert f(1) == 2"
    kept = out.evidence["AC-1"]
    assert kept.result is Evidence.FAIL and kept.restored is not None
    assert kept.restored.submitted is Evidence.PASS


def test_the_baseline_version_passing_decides_like_any_pass() -> None:
    out = decide(
        RunReport(checks=OK, results={"AC-1": _result(Evidence.PASS, Evidence.PASS)}),
        criteria=[TEST],
        spec=None,
        submission=None,
        config=CFG,
    )
    assert out.verdict is Verdict.PASSED and out.edited == []


def test_failing_both_ways_is_a_plain_failure_not_a_hold() -> None:
    out = decide(
        RunReport(
            checks={"unit": CheckResult(exit_code=1)}, results={"AC-1": _result(Evidence.FAIL, Evidence.FAIL)}
        ),
        criteria=[TEST],
        spec=None,
        submission=None,
        config=CFG,
    )
    assert out.verdict is Verdict.FAILED and out.edited == []


def test_a_failing_check_with_an_edited_named_test_is_still_held() -> None:
    """The baseline's test failing makes its check fail too; the hold is what a person sees,
    not a failure that would use an attempt on a submission that bent its test."""
    out = decide(
        RunReport(
            checks={"unit": CheckResult(exit_code=0)}, results={"AC-1": _result(Evidence.FAIL, Evidence.PASS)}
        ),
        criteria=[TEST],
        spec=None,
        submission=None,
        config=CFG,
    )
    assert out.verdict is Verdict.NEEDS_HUMAN and out.edited == ["AC-1"]
