"""The grading run's rules, pure: which paths the grading tree takes as the baseline has them,
which it leaves out and which new test files it keeps; the named tests' definitions; a check
that names its test files; changed expectations; and the outcome rule for tripwires, changed
expectations, the submission's own tree and hidden tests that do not all pass."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from taskgate.domain.grading import (
    Plan,
    changed_expectations,
    named_definitions,
    names_test_files,
    plan,
    stops_at_first_failure,
    without_tripwire_output,
)
from taskgate.domain.models import Criterion, CriterionKind, WhyHuman
from taskgate.domain.outcome import Outcome, Verdict, decide
from taskgate.domain.reports import Report, TestCase, TestOutcome
from taskgate.domain.run_report import (
    ChangedTest,
    CheckResult,
    CriterionResult,
    Evidence,
    EvidenceSource,
    GradingTree,
    HiddenRun,
    RunReport,
    TripwireResult,
    Tripwires,
    check_failed,
)
from taskgate.domain.tripwires import canary, twin
from taskgate.domain.verifier_config import VerifierConfig

NAMED = "def test_keeps_digits():\n    assert slugify('a 1') == 'a-1'\n"
OTHER = "def test_other():\n    assert 1 == 1\n"


def _plan(
    changed: list[str], before: dict[str, str], now: dict[str, str], refs: list[str], **kw: Any
) -> Plan:
    return plan(
        changed,
        baseline_text=before.get,
        submitted_text=now.get,
        at_baseline=set(before),
        harness_unchanged=kw.get("harness_unchanged", ()),
        refs=refs,
    )


def test_the_test_side_is_the_baselines_and_only_new_named_test_files_stay() -> None:
    before = {"tests/test_a.py": OTHER, "tests/__init__.py": "", "tests/data/x.json": "{}", "conftest.py": ""}
    now = {
        "tests/test_a.py": OTHER + "\n# edited\n",
        "tests/__init__.py": '"""doc"""\n',
        "tests/data/x.json": "[]",
        "conftest.py": "# mine",
        "tests/test_new.py": NAMED,
        "tests/test_unnamed.py": OTHER,
        "tests/pytest.ini": "[pytest]\n",
        "src/slug.py": "x = 1\n",
    }
    got = _plan(sorted(now), before, now, ["tests.test_new.test_keeps_digits"])
    assert got.restore == ("conftest.py", "tests/__init__.py", "tests/data/x.json", "tests/test_a.py")
    assert got.remove == ("tests/pytest.ini", "tests/test_unnamed.py")
    assert got.named == ("tests/test_new.py",)
    # The harness (conftest.py, pytest.ini) is put back, not run in the submission's tree for it.
    assert got.unnamed == (
        "tests/__init__.py",
        "tests/data/x.json",
        "tests/test_a.py",
        "tests/test_unnamed.py",
    )
    assert got.changes_tree


def test_a_changed_test_file_stays_only_when_it_defines_a_named_test_its_baseline_does_not() -> None:
    before = {"test_slug.py": NAMED}
    now = {"test_slug.py": NAMED + "\n\n" + OTHER}
    assert _plan(["test_slug.py"], before, now, ["test_slug.test_keeps_digits"]).restore == ("test_slug.py",)
    assert _plan(["test_slug.py"], before, now, ["test_slug.test_other"]).named == ("test_slug.py",)


def test_a_deleted_test_file_comes_back_and_a_scoped_file_with_its_harness_unchanged_is_source() -> None:
    before = {"test_slug.py": NAMED, "pyproject.toml": "[project]\nname='a'\n", "package.json": "{}"}
    now = {"pyproject.toml": "[project]\nname='b'\n", "package.json": '{"a": 1}'}
    got = _plan(
        ["package.json", "pyproject.toml", "test_slug.py"],
        before,
        now,
        [],
        harness_unchanged=["pyproject.toml"],
    )
    assert got.restore == ("package.json", "test_slug.py")
    assert got.unnamed == ("test_slug.py",)


def test_source_alone_changes_nothing() -> None:
    got = _plan(["slug.py"], {"slug.py": "a"}, {"slug.py": "b"}, ["test_slug.test_keeps_digits"])
    assert got == Plan() and not got.changes_tree


def test_named_definitions_find_a_test_or_each_test_of_a_group() -> None:
    js = (
        "const { describe, it } = require('node:test');\n"
        "describe('slugify', () => {\n  it('a', () => {});\n  it('b', () => {});\n});\n"
        "describe('other', () => {\n  it('a', () => {});\n});\n"
    )
    files = {
        "test/slug.test.js": js,
        "tests/test_x.py": "class TestX:\n    def test_y(self):\n        assert 1 == 1\n",
    }
    assert [(d.groups, d.name) for d in named_definitions(files, "slugify > a")] == [(("slugify",), "a")]
    assert [d.name for d in named_definitions(files, "slugify")] == ["a", "b"]
    assert [d.name for d in named_definitions(files, "tests.test_x.TestX.test_y")] == ["test_y"]
    assert named_definitions(files, "nowhere") == []


def test_a_check_naming_its_test_files_is_told_apart_from_one_naming_directories() -> None:
    assert names_test_files("pytest -q tests/test_a.py::test_b --junitxml=r.xml") == ["tests/test_a.py"]
    assert names_test_files("node --test ./test/slug.test.js") == ["test/slug.test.js"]
    assert names_test_files("pytest -q tests --junitxml=r.xml") == []
    assert names_test_files("pytest -c tests/conftest.py") == []


def test_a_check_that_stops_at_its_first_failure_is_told_apart() -> None:
    assert stops_at_first_failure("pytest -q -x tests") == "-x"
    assert stops_at_first_failure("pytest --maxfail=2 tests") == "--maxfail=2"
    assert stops_at_first_failure("node --test --test-bail") == "--test-bail"
    assert stops_at_first_failure("pytest -q tests --junitxml=r.xml") is None


def _case(name: str, outcome: TestOutcome, classname: str = "test_slug", file: str = "") -> TestCase:
    return TestCase(name=name, classname=classname, outcome=outcome, file=file, message="boom")


def test_a_changed_expectation_fails_in_grading_passes_as_submitted_and_is_in_a_restored_file() -> None:
    grading = Report(
        tests=(
            _case("test_empty", TestOutcome.FAILED),
            _case("test_both", TestOutcome.FAILED),
            _case("test_elsewhere", TestOutcome.FAILED, classname="test_other"),
        )
    )
    submitted = Report(
        tests=(
            _case("test_empty", TestOutcome.PASSED),
            _case("test_both", TestOutcome.FAILED),
            _case("test_elsewhere", TestOutcome.PASSED, classname="test_other"),
        )
    )
    [changed] = changed_expectations([grading], [submitted], ["test_slug.py", "data.json"])
    assert (changed.test, changed.files, changed.message) == (
        "test_slug.test_empty",
        ("test_slug.py",),
        "boom",
    )
    # node --test names no file: any restored test file may hold it.
    node = Report(tests=(_case("keeps digits", TestOutcome.FAILED, classname="test"),))
    node_ok = Report(tests=(_case("keeps digits", TestOutcome.PASSED, classname="test"),))
    assert [c.files for c in changed_expectations([node], [node_ok], ["test/slug.js"])] == [("test/slug.js",)]
    assert changed_expectations([node], [node_ok], ["lib/data.json"]) == []


# -- the outcome rule -------------------------------------------------------------------------

TEST = Criterion(id="AC-1.1", text="unit", kind=CriterionKind.TEST, verify_ref="a.b")
CFG = VerifierConfig.model_validate(
    {
        "checks": {
            "unit": {"command": "pytest --junitxml=r.xml", "report": {"path": "r.xml", "format": "junit"}}
        }
    }
)
PASSED = CriterionResult(
    result=Evidence.PASS, detail="1 passed", source=EvidenceSource(check="unit", report="r.xml", ref="a.b")
)
COMMIT = "a" * 40


def _decide(**report: Any) -> Outcome:
    fields: dict[str, Any] = {"checks": {"unit": CheckResult(exit_code=0)}, "results": {"AC-1.1": PASSED}}
    return decide(RunReport(**(fields | report)), criteria=[TEST], spec=None, submission=None, config=CFG)


def _wire(kind: str, reported: str) -> TripwireResult:
    return TripwireResult.model_validate(
        {
            "kind": kind,
            "name": f"{kind}_tw1",
            "path": f"test_{kind}.py",
            "of": "T > t" if kind == "twin" else None,
            "criterion": "AC-1.1" if kind == "twin" else None,
            "check": "unit",
            "perturbed": 2 if kind == "twin" else 0,
            "reported": reported,
        }
    )


def test_an_exit_1_over_the_tripwires_alone_is_a_passing_check_and_nothing_else_is() -> None:
    assert not check_failed(CheckResult(exit_code=1, tripwires_failed=2, report_failed=0))
    assert check_failed(CheckResult(exit_code=1, tripwires_failed=2, report_failed=1))
    assert check_failed(CheckResult(exit_code=2, tripwires_failed=2, report_failed=0))
    assert check_failed(CheckResult(exit_code=1, tripwires_failed=0, report_failed=0))
    out = _decide(checks={"unit": CheckResult(exit_code=1, tripwires_failed=2)})
    assert out.verdict is Verdict.PASSED


def test_every_tripwire_failed_passes_and_one_that_did_not_goes_to_a_human_named() -> None:
    ok = Tripwires(placed=[_wire("twin", "failed"), _wire("canary", "failed")])
    assert _decide(tripwires=ok).verdict is Verdict.PASSED
    for reported, said in [
        ("passed", "it was reported passed"),
        ("skipped", "it was reported skipped"),
        ("missing", "no report holds it"),
    ]:
        out = _decide(tripwires=Tripwires(placed=[_wire("twin", reported), _wire("canary", "failed")]))
        assert (out.verdict, out.why_human) == (Verdict.NEEDS_HUMAN, WhyHuman.TRIPWIRE)
        assert out.summary == (
            "the grader was bent: the twin `twin_tw1` of AC-1.1's test `T > t` (its 2 expected values "
            f"perturbed, so it must fail): {said}"
        )
    canary = _decide(
        tripwires=Tripwires(placed=[_wire("canary", "passed")]),
        results={"AC-1.1": PASSED.model_copy(update={"result": Evidence.FAIL})},
    )
    # A failing run goes back to the executor; the bent tripwire is named in its findings.
    assert (canary.verdict, canary.summary) == (
        Verdict.FAILED,
        "1 criterion without positive evidence: AC-1.1",
    )
    assert canary.findings[-1] == (
        "also held for a human: the grader was bent: the canary `canary_tw1` (it fails outright): "
        "it was reported passed"
    )


def test_a_changed_expectation_goes_to_a_human_with_the_diff() -> None:
    grading = GradingTree(
        restored=["test_slug.py"],
        changed=[ChangedTest(test="test_slug.test_empty", files=["test_slug.py"])],
        diff="D",
    )
    failing = CheckResult(exit_code=1, report_failed=1, report_failed_names=["test_slug.test_empty"])
    out = _decide(grading=grading, checks={"unit": failing})
    assert (out.verdict, out.why_human, out.diff) == (Verdict.NEEDS_HUMAN, WhyHuman.TESTS_EDITED, "D")
    assert out.summary.startswith("changed expectation: test_slug.test_empty fails with the baseline's")


def test_a_failure_in_the_submissions_own_tree_goes_back_to_the_executor() -> None:
    own = {"unit": CheckResult(exit_code=1, report_failed=1, report_failed_names=["test_more.test_x"])}
    out = _decide(grading=GradingTree(removed=["test_more.py"], submitted=own))
    assert out.verdict is Verdict.FAILED
    assert out.summary == "the checks fail on the submission's own tree (its own test files included)"
    assert out.findings == [
        "check unit fails on the submission's own tree, with its own test files (exit 1); failing: test_more.test_x"
    ]
    assert _decide(
        grading=GradingTree(removed=["t.py"], submitted={"unit": CheckResult(exit_code=0)})
    ).verdict is (Verdict.PASSED)


def test_a_hidden_test_skipped_or_not_reported_fails_the_run_named() -> None:
    hidden = HiddenRun(commit=COMMIT, ran=1, skipped=["hidden.t.test_a"], missing=["test_b"])
    out = decide(
        RunReport(checks={"unit": CheckResult(exit_code=0)}, results={"AC-1.1": PASSED}, hidden_tests=hidden),
        criteria=[TEST],
        spec=None,
        submission=None,
        config=VerifierConfig.model_validate(
            CFG.model_dump(mode="json")
            | {"hidden_tests": {"repo": "/h.git", "ref": "main", "into": "hidden"}}
        ),
    )
    assert (out.verdict, out.summary) == (Verdict.FAILED, "2 hidden tests failed")
    assert out.findings == [
        "hidden test hidden.t.test_a was skipped: every hidden test must pass",
        "hidden test test_b is in no report: every hidden test must pass",
    ]


def test_a_check_that_exits_0_over_failed_testcases_or_with_a_stale_report_failed() -> None:
    """The rules a submission's conftest reached before the grading run left it out: still the
    outcome rule's, for a harness that is the baseline's own."""
    over = _decide(
        checks={"unit": CheckResult(exit_code=0, report_failed=1, report_failed_names=["t.test_x"])}
    )
    assert (over.verdict, over.summary) == (Verdict.FAILED, "1 check failed: unit")
    assert "check unit exited 0 but its report holds 1 failed testcase: t.test_x" in over.findings
    stale = _decide(checks={"unit": CheckResult(exit_code=0, report_problem="stale")})
    assert stale.verdict is Verdict.FAILED
    assert (
        "check unit's report r.xml was last written before the check started: it is no evidence"
        in stale.findings
    )


# -- the runner's output without the tripwires -------------------------------------------------

PY_SLUG = 'import re\n\n\ndef slugify(t):\n    return re.sub(r"[^a-z]+", "-", t.lower()).strip("-")\n'
PY_TESTS = (
    "from slug import slugify\n\n\nclass TestSlugify:\n    def test_keeps_digits(self):\n"
    '        assert slugify("Route 66") == "route-66"\n\n    def test_lowercases(self):\n'
    '        assert slugify("Hello World") == "hello-world"\n'
)
JS_SLUG = "exports.slugify = (t) => t.toLowerCase().replace(/[^a-z]+/g, '-').replace(/^-|-$/g, '');\n"
JS_TESTS = (
    "const { describe, it } = require('node:test');\nconst assert = require('node:assert');\n"
    "const { slugify } = require('../lib/slug.js');\ndescribe('slugify', () => {\n"
    "  it('keeps digits', () => {\n    assert.strictEqual(slugify('Route 66'), 'route-66');\n  });\n"
    "  it('lowercases', () => {\n    assert.strictEqual(slugify('Hello World'), 'hello-world');\n  });\n});\n"
)
TOKENS = ["abcdefgh12", "bcdefghi23", "cdefghij34"]


def _wired(root: Path, files: dict[str, str], named: str, ref: str) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    tests = {named: files[named]}
    made = [
        twin(d.path, tests[d.path], d, t) for d, t in zip(named_definitions(tests, ref), TOKENS, strict=False)
    ]
    made.append(canary(named, TOKENS[2], tests[named]))
    for m in made:
        assert m is not None
        (root / m.path).write_text(m.text)


@pytest.mark.parametrize("reporter", ["spec", "tap"])
def test_nodes_output_loses_the_tripwires_and_keeps_the_real_failure_at_its_end(
    tmp_path: Path, reporter: str
) -> None:
    _wired(tmp_path, {"lib/slug.js": JS_SLUG, "test/slug.test.js": JS_TESTS}, "test/slug.test.js", "slugify")
    node = shutil.which("node")
    assert node is not None, "node is required"
    done = subprocess.run(
        [node, "--test", f"--test-reporter={reporter}"], cwd=tmp_path, capture_output=True, text=True
    )
    assert sum(t in done.stdout for t in TOKENS) == 3  # every tripwire ran and is in the output
    left = without_tripwire_output(done.stdout, TOKENS)
    assert not any(t in left for t in TOKENS)
    assert "keeps digits" in left[-2500:] and "'route-66'" in left[-2500:]


def test_pytests_output_loses_the_tripwires_and_keeps_the_real_failure_at_its_end(tmp_path: Path) -> None:
    _wired(tmp_path, {"slug.py": PY_SLUG, "test_slug.py": PY_TESTS}, "test_slug.py", "TestSlugify")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert sum(t in done.stdout for t in TOKENS) == 3
    left = without_tripwire_output(done.stdout, TOKENS)
    assert not any(t in left for t in TOKENS)
    assert "____ TestSlugify.test_keeps_digits ____" in left and "assert 'route' == 'route-66'" in left
    assert "FAILED test_slug.py::TestSlugify::test_keeps_digits" in left
