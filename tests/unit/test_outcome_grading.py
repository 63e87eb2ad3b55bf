"""The outcome rule where the grading run's rules meet: a named test that passes with the change stubbed
out, what the verifier cannot read as source, a guard whose test the baseline lacks, and which
verdict wins when a failure, a hold and a spec error meet on one run."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from taskgate.domain import loading
from taskgate.domain.baseline import BaselineEvidence
from taskgate.domain.models import Criterion, CriterionKind, Risk, Spec, SpecStatus, WhyHuman
from taskgate.domain.outcome import Outcome, Verdict, decide
from taskgate.domain.run_report import (
    CheckResult,
    CriterionResult,
    Evidence,
    EvidenceSource,
    LoadingHit,
    RunReport,
    StubbedRun,
)
from taskgate.domain.verifier_config import VerifierConfig

REF = "test_slug.test_keeps_digits"
TEST = Criterion(id="AC-1.2", text="digits", kind=CriterionKind.TEST, verify_ref=REF)
GUARD = Criterion(id="AC-1.3", text="keeps", kind=CriterionKind.TEST, verify_ref="keeps digitz", guard=True)
CHECKS = {"unit": {"command": "pytest --junitxml=r.xml", "report": {"path": "r.xml", "format": "junit"}}}
CFG = VerifierConfig.model_validate({"checks": CHECKS})
COMMIT = "a" * 40
NOW = datetime(2026, 1, 1, tzinfo=UTC)
HIDDEN_PYC = LoadingHit(path="__pycache__/slug.cpython-312.pyc", kind="bytecode", why="bytecode")
SHADOW = LoadingHit(path="tests/json.py", kind="shadow", why="shadows the standard library's json")
STUB_REASON = "AC-1.2's test passes with every changed function stubbed out: it does not test the change"


def _passed(ref: str, stubbed: Evidence | None = None) -> CriterionResult:
    return CriterionResult(
        result=Evidence.PASS,
        detail="1 test passed",
        source=EvidenceSource(check="unit", report="r.xml", ref=ref),
        stubbed=StubbedRun(result=stubbed) if stubbed is not None else None,
    )


def _decide(
    results: dict[str, CriterionResult],
    criteria: list[Criterion] | None = None,
    *,
    spec: Spec | None = None,
    exit_code: int = 0,
    **report: Any,
) -> Outcome:
    server: dict[str, Any] = {k: report.pop(k) for k in ("allowed", "allowed_criteria") if k in report}
    run = RunReport(checks={"unit": CheckResult(exit_code=exit_code)}, results=results, **report)
    return decide(run, criteria=criteria or [TEST], spec=spec, submission=None, config=CFG, **server)


def test_a_named_test_that_passes_with_the_change_stubbed_out_goes_to_a_human() -> None:
    out = _decide({"AC-1.2": _passed(REF, Evidence.PASS)})
    assert (out.verdict, out.why_human, out.summary) == (
        Verdict.NEEDS_HUMAN,
        WhyHuman.PASSES_WITHOUT_CHANGE,
        STUB_REASON,
    )
    assert out.unchanged == ["AC-1.2"]  # what a human's allow covers
    assert out.evidence["AC-1.2"].passes_stubbed is True
    assert out.evidence["AC-1.2"].stubbed == StubbedRun(result=Evidence.PASS)


def test_a_named_test_that_fails_when_stubbed_or_did_not_tell_passes() -> None:
    for seen in (Evidence.FAIL, Evidence.MISSING, None):
        out = _decide({"AC-1.2": _passed(REF, seen)})
        assert out.verdict is Verdict.PASSED, seen
        assert out.evidence["AC-1.2"].passes_stubbed is False


def test_a_human_allowance_or_an_approved_guard_excuses_the_stubbed_pass() -> None:
    run = RunReport(
        checks={"unit": CheckResult(exit_code=0)}, results={"AC-1.2": _passed(REF, Evidence.PASS)}
    )
    allowed = decide(
        run, criteria=[TEST], spec=None, submission=None, config=CFG, allowed_criteria=["AC-1.2"]
    )
    assert allowed.verdict is Verdict.PASSED
    guard = TEST.model_copy(update={"guard": True})
    spec = Spec(
        id="SPEC-1",
        project="p",
        number=1,
        title="t",
        risk=Risk.LOW,
        criteria=[guard],
        status=SpecStatus.APPROVED,
        created_by="human:a",
        created_at=NOW,
        updated_at=NOW,
        approved_by="human:a",
    )
    kept = decide(run, criteria=[guard], spec=spec, submission=None, config=CFG)
    assert kept.verdict is Verdict.PASSED
    # a guard of the task's own (no approved spec) is no guard: still held, and said so
    unapproved = decide(run, criteria=[guard], spec=None, submission=None, config=CFG)
    assert unapproved.verdict is Verdict.NEEDS_HUMAN
    assert unapproved.summary == STUB_REASON + " (its guard counts only on a criterion of an approved spec)"


def test_what_the_verifier_cannot_read_holds_the_run_naming_the_paths() -> None:
    out = _decide({"AC-1.2": _passed(REF)}, loading=[HIDDEN_PYC, SHADOW])
    assert (out.verdict, out.why_human) == (Verdict.NEEDS_HUMAN, WhyHuman.HELD)
    assert out.held == [HIDDEN_PYC.path, SHADOW.path]
    hits = [loading.Hit(h.path, h.kind, h.why) for h in (HIDDEN_PYC, SHADOW)]
    assert out.summary == loading.reason(hits)
    assert out.summary.startswith(
        "the submission adds files the verifier cannot read as source: __pycache__/slug.cpython-312.pyc (bytecode)"
    )
    assert "changes what gets loaded besides its source: tests/json.py" in out.summary


def test_a_human_allowing_the_paths_lets_the_run_pass() -> None:
    out = _decide({"AC-1.2": _passed(REF)}, loading=[HIDDEN_PYC], allowed=[HIDDEN_PYC.path])
    assert out.verdict is Verdict.PASSED


def test_protected_paths_and_loading_hits_both_appear_in_the_reason() -> None:
    baseline = BaselineEvidence(
        branch="main", commit=COMMIT, changed=["conftest.py"], changed_total=1, diff="+x"
    )
    out = _decide({"AC-1.2": _passed(REF)}, loading=[HIDDEN_PYC], baseline=baseline)
    assert out.held == ["conftest.py", HIDDEN_PYC.path]
    assert out.summary.startswith(
        "the submission changes protected paths: conftest.py; and the submission adds"
    )


def test_what_the_verifier_cannot_read_holds_even_a_failing_run_and_other_holds_ride_along() -> None:
    # An unreadable file changes what a run is built from: a human's call whatever the run says.
    failing = CriterionResult(result=Evidence.FAIL, detail="1 test failed", source=_passed(REF).source)
    out = _decide({"AC-1.2": failing}, exit_code=1, loading=[HIDDEN_PYC])
    assert (out.verdict, out.why_human) == (Verdict.NEEDS_HUMAN, WhyHuman.HELD)
    assert out.summary.startswith("the submission adds files the verifier cannot read"), out.summary
    # but a stubbed pass on a run whose check fails is the executor's failure, the hold named
    out = _decide({"AC-1.2": _passed(REF, Evidence.PASS)}, exit_code=1)
    assert out.verdict is Verdict.FAILED
    assert out.findings[-1] == f"also held for a human: {STUB_REASON}"


def test_a_guard_whose_test_the_baseline_lacks_is_a_spec_error_that_uses_no_attempt() -> None:
    reason = (
        "spec error: AC-1.3 is a guard and no test file of the baseline defines its test `keeps digitz`: "
        "a guard keeps existing behaviour, so its test must exist before the change"
    )
    # the executor's commit adds `it('keeps digitz', ...)`, which passes: still the spec's error
    out = _decide({"AC-1.3": _passed("keeps digitz")}, [GUARD], missing_guards=["AC-1.3"])
    assert (out.verdict, out.summary) == (Verdict.SPEC_ERROR, reason)
    # before it, the test is missing: not the executor's failure either
    missing = CriterionResult(result=Evidence.MISSING, detail="no test matches")
    out = _decide({"AC-1.3": missing}, [GUARD], exit_code=0, missing_guards=["AC-1.3"])
    assert (out.verdict, out.summary) == (Verdict.SPEC_ERROR, reason)
    assert out.criteria[0].spec_error is True
    # with a hold and a failing check on the same run, the reason says all of them
    out = _decide({"AC-1.3": missing}, [GUARD], exit_code=1, missing_guards=["AC-1.3"], loading=[HIDDEN_PYC])
    assert out.verdict is Verdict.SPEC_ERROR
    assert out.summary.startswith(reason + "; and the submission adds files the verifier cannot read")
    assert out.summary.endswith("; the run also failed: 1 check failed: unit")


def test_a_spec_error_and_a_hold_on_one_run_both_appear_in_the_reason() -> None:
    ambiguous = CriterionResult(result=Evidence.AMBIGUOUS, detail="matches 2 tests")
    out = _decide({"AC-1.2": ambiguous}, loading=[HIDDEN_PYC])
    assert (out.verdict, out.why_human) == (Verdict.NEEDS_HUMAN, WhyHuman.HELD)
    assert out.summary.endswith("; and spec error: AC-1.2 matches 2 tests")
    assert out.summary.startswith("the submission adds files the verifier cannot read as source")


def test_a_protected_path_the_loading_rules_also_see_is_named_once() -> None:
    baseline = BaselineEvidence(branch="main", commit=COMMIT, changed=[".npmrc"], changed_total=1, diff="+x")
    npmrc = LoadingHit(path=".npmrc", kind="manager_config", why="read by npm")
    out = _decide({"AC-1.2": _passed(REF)}, loading=[npmrc], baseline=baseline)
    assert (out.summary, out.held) == ("the submission changes protected paths: .npmrc", [".npmrc"])
