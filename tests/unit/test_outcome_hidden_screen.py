"""The outcome rule with hidden tests and the screen: a failing hidden test fails the run, a
config naming hidden tests needs them run, a screen hit goes to a human whatever the checks did;
with held protected paths too, the held paths are the reason."""

from __future__ import annotations

from typing import Any

from taskgate.domain.baseline import BaselineEvidence
from taskgate.domain.models import Criterion, CriterionKind, FailedTest, WhyHuman
from taskgate.domain.outcome import Outcome, Verdict, decide
from taskgate.domain.run_report import (
    CheckResult,
    CriterionResult,
    Evidence,
    EvidenceSource,
    HiddenRun,
    RunReport,
    ScreenHit,
)
from taskgate.domain.verifier_config import VerifierConfig

TEST = Criterion(id="AC-1.1", text="unit", kind=CriterionKind.TEST, verify_ref="a.b")
CHECKS = {"unit": {"command": "pytest --junitxml=r.xml", "report": {"path": "r.xml", "format": "junit"}}}
CFG = VerifierConfig.model_validate({"checks": CHECKS})
HIDDEN_CFG = VerifierConfig.model_validate(
    {"checks": CHECKS, "hidden_tests": {"repo": "/srv/h.git", "ref": "main", "into": "hidden"}}
)
PASSED = CriterionResult(
    result=Evidence.PASS, detail="1 passed", source=EvidenceSource(check="unit", report="r.xml", ref="a.b")
)
COMMIT = "a" * 40
HIT = ScreenHit(path="calc.py", line=4, rule="py.exit", text="os._exit(0)")


def _decide(**kw: Any) -> Outcome:
    """decide() on a run report of these fields (checks, results, error, hidden, screened,
    baseline) and the server's side of the rest."""
    report: dict[str, Any] = {"checks": {"unit": CheckResult(exit_code=0)}, "results": {"AC-1.1": PASSED}}
    server: dict[str, Any] = {"criteria": [TEST], "spec": None, "submission": None, "config": HIDDEN_CFG}
    names = {"checks": "checks", "results": "results", "error": "error", "hidden": "hidden_tests"}
    names |= {"screened": "screened", "baseline": "baseline"}
    for k, v in kw.items():
        if k in names:
            report[names[k]] = v
        else:
            server[k] = v
    return decide(RunReport(**report), **server)


def test_passing_hidden_tests_pass_and_a_failing_one_fails_naming_it() -> None:
    ok = _decide(hidden=HiddenRun(commit=COMMIT, ran=2))
    assert ok.verdict is Verdict.PASSED
    failing = HiddenRun(
        commit=COMMIT, ran=2, failed=[FailedTest(name="hidden.test_h.test_big")], failed_count=1
    )
    out = _decide(hidden=failing)
    assert out.verdict is Verdict.FAILED
    assert out.summary == "1 hidden test failed"
    assert out.findings == ["hidden test hidden.test_h.test_big failed"]
    assert out.hidden_tests == [FailedTest(name="hidden.test_h.test_big")]


def test_a_config_naming_hidden_tests_needs_the_run_to_report_them() -> None:
    out = _decide(hidden=None)
    assert out.verdict is Verdict.ERROR
    assert out.summary == "the verifier config names hidden tests and the run reports none ran"
    assert _decide(config=CFG).verdict is Verdict.PASSED


def test_a_screen_hit_goes_to_a_human_whether_the_run_passed_or_broke() -> None:
    for kw in (
        {"config": CFG},
        {"config": CFG, "error": "check unit exited 0 but wrote no report at r.xml"},
    ):
        out = _decide(screened=[HIT], **kw)
        assert out.verdict is Verdict.NEEDS_HUMAN, kw
        assert out.summary.startswith(
            "the submission adds code that reads or ends its grader (py.exit): calc.py:4 [py.exit] `os._exit(0)`."
        )
        assert out.findings == []
    broke = _decide(screened=[HIT], config=CFG, error="check unit exited 0 but wrote no report at r.xml")
    assert broke.summary.endswith(
        " (the run itself: verifier error: check unit exited 0 but wrote no report at r.xml)"
    )


def test_a_failing_run_with_a_screen_hit_goes_back_to_the_executor_naming_the_hit() -> None:
    """A failure is the executor's; the hold that also applies is in its findings."""
    out = _decide(screened=[HIT], config=CFG, checks={"unit": CheckResult(exit_code=1)})
    assert (out.verdict, out.summary, out.why_human) == (Verdict.FAILED, "1 check failed: unit", None)
    assert out.findings[0] == "check unit exited 1"
    assert out.findings[1].startswith(
        "also held for a human: the submission adds code that reads or ends its grader (py.exit): calc.py:4"
    )


HARNESS = BaselineEvidence(
    branch="main", commit=COMMIT, changed=["conftest.py", "calc.py"], changed_total=2, diff="+x"
)


def test_each_rule_that_holds_a_run_names_itself() -> None:
    grader = _decide(screened=[HIT], config=CFG)
    assert (grader.verdict, grader.why_human, grader.held) == (Verdict.NEEDS_HUMAN, WhyHuman.READS_GRADER, [])
    held = _decide(config=CFG, baseline=HARNESS)
    assert (held.verdict, held.why_human, held.held) == (Verdict.NEEDS_HUMAN, WhyHuman.HELD, ["conftest.py"])
    assert held.diff == "+x"
    assert _decide(config=CFG).why_human is None


def test_held_paths_win_over_a_screen_hit_and_the_summary_names_both() -> None:
    for kw in ({}, {"error": "check unit exited 0 but wrote no report at r.xml"}):
        out = _decide(screened=[HIT], config=CFG, baseline=HARNESS, **kw)
        assert out.verdict is Verdict.NEEDS_HUMAN, kw
        assert out.why_human is WhyHuman.HELD, kw
        assert out.held == ["conftest.py"]
        assert out.summary.startswith("the submission changes protected paths: conftest.py"), out.summary
        assert "; and the submission adds code that reads or ends its grader (py.exit)" in out.summary
    # Once a human allows the path, the screen's hit still holds the run verified again.
    again = _decide(screened=[HIT], config=CFG, baseline=HARNESS, allowed=["conftest.py"])
    assert again.why_human is WhyHuman.READS_GRADER


def test_what_the_hidden_tests_replace_is_not_held() -> None:
    inside = HARNESS.model_copy(update={"changed": ["hidden/conftest.py", "hiddenx/conftest.py"]})
    out = _decide(hidden=HiddenRun(commit=COMMIT, ran=1), baseline=inside)
    # hidden/ is placed whole before the checks; hiddenx/ is not the hidden tests' directory.
    assert out.held == ["hiddenx/conftest.py"]
    only = HARNESS.model_copy(update={"changed": ["hidden/conftest.py", "calc.py"]})
    assert _decide(hidden=HiddenRun(commit=COMMIT, ran=1), baseline=only).verdict is Verdict.PASSED
    assert _decide(config=CFG, baseline=only).held == ["hidden/conftest.py"]
