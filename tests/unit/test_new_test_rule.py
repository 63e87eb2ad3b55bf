"""The server's reading of a run on the baseline's code: a new named test that passes there too
holds the run for a person, unless its criterion is a guard an approved spec declared; and
which changed files define a named test, by the report's `file` or the test's classname."""

from __future__ import annotations

from datetime import UTC, datetime

from taskgate.domain.models import Criterion, CriterionKind, Spec, SpecStatus, WhyHuman
from taskgate.domain.newtests import defining_files, defining_sources, paths_of_tests, unplaced
from taskgate.domain.outcome import Verdict, decide
from taskgate.domain.reports import TestCase
from taskgate.domain.run_report import (
    CheckResult,
    CriterionResult,
    Evidence,
    EvidenceSource,
    Restored,
    RunReport,
    WithoutChange,
)
from taskgate.domain.spec_markdown import parse_spec_markdown
from taskgate.domain.specs import render_markdown
from taskgate.domain.statements import test_result as statement_of
from taskgate.domain.verifier_config import VerifierConfig

NEW = Criterion(id="AC-1.1", text="typed", kind=CriterionKind.TEST, verify_ref="t.test_typd")
GUARD = Criterion(id="AC-1.2", text="lower", kind=CriterionKind.TEST, verify_ref="t.test_lower", guard=True)
CFG = VerifierConfig.model_validate(
    {"checks": {"unit": {"command": "pytest", "report": {"path": "r.xml", "format": "junit"}}}}
)
OK = {"unit": CheckResult(exit_code=0)}
NOW = datetime(2026, 1, 1, tzinfo=UTC)
REASON = "AC-1.1 passes without the change: its new test `t.test_typd` passes on the baseline's code too"


def _spec(*criteria: Criterion, approved: bool = True) -> Spec:
    return Spec(
        id="SPEC-1",
        project="p",
        number=1,
        title="S",
        criteria=list(criteria),
        status=SpecStatus.APPROVED if approved else SpecStatus.DRAFT,
        created_by="human:ann",
        created_at=NOW,
        updated_at=NOW,
        approved_by="human:ann" if approved else None,
        approved_at=NOW if approved else None,
    )


def _result(c: Criterion, now: Evidence, before: Evidence | None, restored: bool = False) -> CriterionResult:
    return CriterionResult(
        result=now,
        detail=f"1 test {now.value}",
        source=EvidenceSource(check="unit", report="r.xml", ref=c.verify_ref or ""),
        without_change=WithoutChange(result=before, detail="1 test", files=["t.py"]) if before else None,
        restored=Restored(files=["t.py"], submitted=Evidence.PASS) if restored else None,
    )


def test_a_new_test_passing_on_the_baseline_code_holds_the_run_with_both_results() -> None:
    out = decide(
        RunReport(checks=OK, results={NEW.id: _result(NEW, Evidence.PASS, Evidence.PASS)}),
        criteria=[NEW],
        spec=_spec(NEW),
        submission=None,
        config=CFG,
    )
    assert (out.verdict, out.why_human, out.summary) == (
        Verdict.NEEDS_HUMAN,
        WhyHuman.PASSES_WITHOUT_CHANGE,
        REASON,
    )
    assert out.unchanged == [NEW.id] and out.edited == [] and out.held == []
    kept = out.evidence[NEW.id]
    assert kept.result is Evidence.PASS and kept.passes_without_change is True
    assert kept.without_change is not None and kept.without_change.result is Evidence.PASS


def test_failing_on_the_baseline_code_is_what_a_new_test_should_do() -> None:
    for before in (Evidence.FAIL, Evidence.MISSING):
        out = decide(
            RunReport(checks=OK, results={NEW.id: _result(NEW, Evidence.PASS, before)}),
            criteria=[NEW],
            spec=None,
            submission=None,
            config=CFG,
        )
        assert out.verdict is Verdict.PASSED, before
        assert out.evidence[NEW.id].passes_without_change is False


def test_a_criterion_failing_on_the_submission_is_a_failure_not_a_hold() -> None:
    out = decide(
        RunReport(
            checks={"unit": CheckResult(exit_code=1)},
            results={NEW.id: _result(NEW, Evidence.FAIL, Evidence.PASS)},
        ),
        criteria=[NEW],
        spec=None,
        submission=None,
        config=CFG,
    )
    assert out.verdict is Verdict.FAILED and out.unchanged == []
    assert out.evidence[NEW.id].passes_without_change is False


def test_a_guard_of_an_approved_spec_passing_on_both_verifies() -> None:
    out = decide(
        RunReport(checks=OK, results={GUARD.id: _result(GUARD, Evidence.PASS, Evidence.PASS)}),
        criteria=[GUARD],
        spec=_spec(GUARD),
        submission=None,
        config=CFG,
    )
    assert out.verdict is Verdict.PASSED and out.unchanged == []
    assert out.evidence[GUARD.id].passes_without_change is True  # a fact, and what a guard expects


def test_a_guard_nobody_approved_is_no_guard() -> None:
    said = (
        "AC-1.2 passes without the change: its new test `t.test_lower` passes on the baseline's code "
        "too (its guard counts only on a criterion of an approved spec)"
    )
    unguarded = GUARD.model_copy(update={"guard": False})
    for spec in (None, _spec(GUARD, approved=False), _spec(unguarded)):
        out = decide(
            RunReport(checks=OK, results={GUARD.id: _result(GUARD, Evidence.PASS, Evidence.PASS)}),
            criteria=[GUARD],
            spec=spec,
            submission=None,
            config=CFG,
        )
        assert (out.verdict, out.summary) == (Verdict.NEEDS_HUMAN, said), spec


def test_an_edited_named_test_and_a_new_one_name_both_rules() -> None:
    edited = Criterion(id="AC-1.3", text="digits", kind=CriterionKind.TEST, verify_ref="t.test_digits")
    out = decide(
        RunReport(
            checks=OK,
            results={
                NEW.id: _result(NEW, Evidence.PASS, Evidence.PASS),
                edited.id: _result(edited, Evidence.FAIL, None, restored=True),
            },
        ),
        criteria=[NEW, edited],
        spec=None,
        submission=None,
        config=CFG,
    )
    assert out.why_human is WhyHuman.TESTS_EDITED and out.unchanged == [NEW.id]
    assert out.summary.endswith(f"; and {REASON}")


def test_the_signed_statement_says_how_a_criterion_did_without_the_change() -> None:
    evidence = {
        NEW.id: _result(NEW, Evidence.PASS, Evidence.PASS).model_copy(update={"passes_without_change": True}),
        GUARD.id: _result(GUARD, Evidence.PASS, None),
    }
    signed = statement_of(
        repo="r",
        commit_sha="a" * 40,
        full_commit="a" * 40,
        verdict="needs_human",
        url=None,
        config=None,
        spec=None,
        criteria=[c.model_dump(mode="json") for c in (NEW, GUARD)],
        evidence={k: v.model_dump(mode="json") for k, v in evidence.items()},
        checks={},
        facts={},
    )
    assert signed["predicate"]["taskgate"]["criteria"] == {
        NEW.id: {"result": "pass", "withoutChange": "pass", "passesWithoutChange": True},
        GUARD.id: {"result": "pass"},
    }


def test_the_file_a_named_test_is_defined_in() -> None:
    changed = ["calc.py", "tests.py", "tests/test_calc.py", "web/slug.test.ts", "check_calc.py"]
    # the report's own file attribute, relative or absolute inside the checkout
    assert defining_files([TestCase("t", "x", file="tests/test_calc.py")], changed) == {"tests/test_calc.py"}
    assert defining_files([TestCase("t", "x", file="/co/web/slug.test.ts")], changed, "/co") == {
        "web/slug.test.ts"
    }
    # a file the submission left as it was defines nothing it changed
    assert defining_files([TestCase("t", "x", file="tests/test_other.py")], changed) == set()
    # pytest's dotted module path, the longest module winning, classes after it
    assert defining_files([TestCase("t", "tests.test_calc.TestCalc")], changed) == {"tests/test_calc.py"}
    assert defining_files([TestCase("t", "test_calc")], changed) == {"tests/test_calc.py"}
    assert defining_files([TestCase("t", "check_calc")], changed) == {"check_calc.py"}
    # a module followed by another module is not that module's test
    assert defining_files([TestCase("t", "tests.test_other.TestX")], changed) == set()
    # a path as the classname (vitest, jest-junit)
    assert defining_files([TestCase("keeps digits", "web/slug.test.ts")], changed) == {"web/slug.test.ts"}
    assert defining_files([TestCase("t", "")], changed) == set()


def test_which_changed_paths_are_test_files() -> None:
    changed = ["calc.py", "check_calc.py", "spec/helpers.js", "test_calc.py"]
    reported = [TestCase("t", "x", file="spec/helpers.js")]
    assert paths_of_tests(changed, reported, {"check_calc.py"}) == [
        "check_calc.py",
        "spec/helpers.js",
        "test_calc.py",
    ]


def test_the_guard_marker_round_trips_through_the_spec_markdown() -> None:
    spec = _spec(NEW, GUARD)
    text = render_markdown(spec)
    assert "- **AC-1.2** (test, guard) lower — `t.test_lower`" in text
    assert "- **AC-1.1** (test) typed — `t.test_typd`" in text
    again = parse_spec_markdown(text)
    assert [(c.verify_ref, c.guard) for c in again.criteria] == [
        ("t.test_typd", False),
        ("t.test_lower", True),
    ]


def test_a_test_the_runner_does_not_place() -> None:
    assert unplaced([TestCase("keeps digits", "test")])  # node --test's constant classname
    assert unplaced([TestCase("keeps digits", "")])
    assert not unplaced([TestCase("keeps digits", "test", file="a.test.js")])
    assert not unplaced([TestCase("t", "test_slug.TestSlugify")])
    assert not unplaced([])


def test_where_the_runner_says_not_where_only_a_file_defining_the_test_is_its_own() -> None:
    """A node test the report does not place is defined by a changed JavaScript
    file that defines it, never by a Python test file that merely changed beside it."""
    node = (
        "const { describe, it } = require('node:test');\n"
        "describe('slugify', () => {\n  it('keeps digits', () => {});\n});\n"
    )
    texts = {
        "test_titles.py": "def test_titles():\n    assert False\n",
        "slug.test.js": node,
        "other.test.js": node.replace("keeps digits", "lowercases"),
        "gone.test.js": None,  # deleted by the submission
    }
    assert defining_sources("slugify > keeps digits", texts) == {"slug.test.js"}
    assert defining_sources("slugify > trims", texts) == set()
