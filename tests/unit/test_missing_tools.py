"""A check whose shell could not run one of its tools is the verifier's error (no attempt used);
the server decides it from the exit code and the tool the verifier names, checked against the
configured command."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import MAX_ATTEMPTS_LIMIT, Criterion, CriterionKind, check_max_attempts
from taskgate.domain.outcome import Verdict, decide
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence, EvidenceSource, RunReport
from taskgate.domain.tooling import command_words
from taskgate.domain.verifier_config import VerifierConfig

TEST = Criterion(id="AC-1.1", text="unit", kind=CriterionKind.TEST, verify_ref="a.b")
CFG = VerifierConfig.model_validate(
    {
        "checks": {
            "unit": {
                "command": "npm ci && npm test -- --reporter=junit",
                "report": {"path": "r.xml", "format": "junit"},
            },
            "lint": {"command": "npx eslint ."},
        }
    }
)
PASSED = {
    "AC-1.1": CriterionResult(
        result=Evidence.PASS, source=EvidenceSource(check="unit", report="r.xml", ref="a.b")
    )
}


def _decide(unit: CheckResult, lint: CheckResult | None = None) -> tuple[Verdict, str]:
    got = decide(
        RunReport(checks={"unit": unit, "lint": lint or CheckResult(exit_code=0)}, results=PASSED),
        criteria=[TEST],
        spec=None,
        submission=None,
        config=CFG,
    )
    return got.verdict, got.summary


@pytest.mark.parametrize(("code", "said"), [(127, "not found or not executable"), (126, "not executable")])
def test_a_tool_the_shell_could_not_run_ends_the_run_as_an_error_naming_it(code: int, said: str) -> None:
    verdict, summary = _decide(CheckResult(exit_code=code, missing_tool="npm"))
    assert verdict is Verdict.ERROR
    assert summary.startswith("the verifier's image has no `npm`: check unit")
    assert f"exited {code}, `npm` {said}" in summary and "docs/deploy.md" in summary


def test_every_missing_tool_is_named() -> None:
    verdict, summary = _decide(
        CheckResult(exit_code=127, missing_tool="npm"), CheckResult(exit_code=127, missing_tool="npx")
    )
    assert (
        verdict is Verdict.ERROR and "no `npx`: check lint" in summary and "no `npm`: check unit" in summary
    )


def test_exit_127_without_a_named_tool_is_the_checks_own_failure() -> None:
    verdict, _ = _decide(CheckResult(exit_code=127, output_tail="sh: 1: npm: not found"))
    assert verdict is Verdict.FAILED  # the output alone is the checked code's to write


def test_a_named_tool_counts_only_with_126_or_127_and_only_if_the_command_runs_it() -> None:
    assert _decide(CheckResult(exit_code=1, missing_tool="npm"))[0] is Verdict.FAILED
    assert _decide(CheckResult(exit_code=0, missing_tool="npm"))[0] is Verdict.PASSED
    # A tool the configured command never names (nor a part of a word of it: "np").
    assert _decide(CheckResult(exit_code=127, missing_tool="cargo"))[0] is Verdict.FAILED
    assert _decide(CheckResult(exit_code=127, missing_tool="np"))[0] is Verdict.FAILED


def test_the_server_reads_command_words_as_the_verifier_does() -> None:
    # "junit" and "ci" are words of the unit check's line but no command of it: a verifier (or a
    # reply forged in its name) naming them is not believed, as the verifier itself would never
    # name them (domain.tooling.command_words is the one reading).
    assert command_words(CFG.checks["unit"].command) == ["npm"]
    for word in ("junit", "ci", "test", "--reporter"):
        assert _decide(CheckResult(exit_code=127, missing_tool=word))[0] is Verdict.FAILED
    assert _decide(CheckResult(exit_code=127, missing_tool="npm"))[0] is Verdict.ERROR


def test_max_attempts_has_one_range() -> None:
    for bad in (0, -1, MAX_ATTEMPTS_LIMIT + 1):
        with pytest.raises(TaskgateError) as refused:
            check_max_attempts(bad)
        assert refused.value.code is ErrorCode.VALIDATION
        assert str(refused.value) == f"max_attempts must be between 1 and {MAX_ATTEMPTS_LIMIT}"
    for fine in (None, 1, MAX_ATTEMPTS_LIMIT):
        check_max_attempts(fine)
