"""The protect rules of domain/baseline.py: globs, the files a check runs by path, test files,
the test runner's part of a scoped file, and the outcome they give a run."""

from __future__ import annotations

import pytest

from taskgate.domain.baseline import (
    DEFAULT_PROTECT,
    BaselineEvidence,
    check_commands,
    command_paths,
    harness_part,
    is_test_file,
    matches,
    package_scripts,
    protect_globs,
    protected,
)
from taskgate.domain.lifecycle import Action, human_move
from taskgate.domain.models import Criterion, CriterionKind, Status
from taskgate.domain.outcome import Verdict, decide
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence, EvidenceSource, RunReport
from taskgate.domain.verifier_config import VerifierConfig


@pytest.mark.parametrize(
    ("path", "pattern", "hit"),
    [
        ("conftest.py", "**/conftest.py", True),
        ("tests/unit/conftest.py", "**/conftest.py", True),
        ("tests/conftest.py.bak", "**/conftest.py", False),
        ("pytest.ini", "pytest.ini", True),
        ("sub/pytest.ini", "pytest.ini", False),  # anchored at the top
        ("pytest/__main__.py", "pytest/", True),
        ("pytest", "pytest/", True),
        ("pytest_plugin.py", "pytest/", False),
        ("web/node_modules/vitest/index.js", "**/node_modules/", True),
        ("vitest.config.ts", "vitest.config.*", True),
        ("src/vitest.config.ts", "vitest.config.*", False),
        ("lib/x.pth", "**/*.pth", True),
        ("a/b.py", "*.py", False),  # `*` stays in its segment
    ],
)
def test_globs(path: str, pattern: str, hit: bool) -> None:
    assert matches(path, pattern) is hit


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        (".venv/bin/python -m pytest -q", [".venv/bin/python"]),
        ("./scripts/test.sh && npm test", ["scripts/test.sh"]),
        ("bash scripts/ci.sh --fast", ["scripts/ci.sh"]),
        ("python3 -m pytest tests/ --junitxml=reports/junit.xml", []),
        ("PYTEST_ADDOPTS=-q python tools/run.py", ["tools/run.py"]),
        ("python run_tests.py", ["run_tests.py"]),
        ("/usr/bin/python3 -m pytest; node --test", []),
        ("echo 'unbalanced", []),
    ],
)
def test_the_files_a_check_runs_by_path(command: str, paths: list[str]) -> None:
    assert command_paths(command) == paths


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("node --require ./support/setup.js --test", ["support/setup.js"]),
        ("node --require=./support/setup.js --test", ["support/setup.js"]),
        ("node -r ./a.js --import=./b.mjs scripts/run.js", ["a.js", "b.mjs", "scripts/run.js"]),
        ("node --env-file=.env --test", [".env"]),
        ("node --test --test-reporter=./tools/reporter.mjs --test-reporter=junit", ["tools/reporter.mjs"]),
        ("node --import tsx --test", []),  # a package, not a file of the checkout
        ("node --test test/ src/slug.test.js", []),  # the tests it runs: rule 3 judges them
        ("node --test --require ./s.js test/ --import=./t.mjs", ["s.js", "t.mjs"]),
        ("node scripts/run.js --require ./x.js", ["scripts/run.js"]),  # the script's own arguments
        ("node -e 'require(\"./x.js\")' ./y.js", []),
        ("node --test --test-reporter-destination=reports/junit.xml", []),
        ("npm test --require ./x.js", []),  # npm's own options: not an interpreter's
    ],
)
def test_the_files_an_interpreters_options_load_first(command: str, paths: list[str]) -> None:
    assert command_paths(command) == paths


PACKAGE = """{"scripts": {
  "pretest": "node scripts/gen.js",
  "test": "node --require ./support/setup.js --test && npm run lint",
  "posttest": "true",
  "lint": "sh scripts/lint.sh",
  "prelint": "true",
  "build": "node scripts/build.js"
}}"""


@pytest.mark.parametrize(
    ("command", "scripts"),
    [
        (
            "npm test",
            [
                "node scripts/gen.js",
                "node --require ./support/setup.js --test && npm run lint",
                "true",  # posttest (and prelint: the same command, listed once)
                "sh scripts/lint.sh",
            ],
        ),
        (
            "mkdir -p reports && npm t --silent",
            [
                "node scripts/gen.js",
                "node --require ./support/setup.js --test && npm run lint",
                "true",  # posttest (and prelint: the same command, listed once)
                "sh scripts/lint.sh",
            ],
        ),
        ("npm run lint", ["true", "sh scripts/lint.sh"]),
        ("yarn lint", ["true", "sh scripts/lint.sh"]),
        ("pnpm run-script build", ["node scripts/build.js"]),
        ("npm build", []),  # npm's own command, not the script
        ("npx vitest run", []),
        ("python -m pytest", []),
    ],
)
def test_the_package_json_scripts_a_check_runs(command: str, scripts: list[str]) -> None:
    assert package_scripts([command], PACKAGE) == scripts


def test_the_files_a_checks_npm_scripts_run_are_protected() -> None:
    scripts = package_scripts(["npm test"], PACKAGE)
    evidence = BaselineEvidence(
        changed=["support/setup.js", "scripts/lint.sh", "scripts/build.js"], scripts=scripts
    )
    globs = protect_globs(None, check_commands(["npm test"], evidence))
    assert {"scripts/gen.js", "support/setup.js", "scripts/lint.sh"} <= set(globs)
    assert protected(evidence.changed, globs) == ["support/setup.js", "scripts/lint.sh"]
    assert package_scripts(["npm test"], None) == [] and package_scripts(["npm test"], "not json") == []
    assert package_scripts(["npm test"], '{"scripts": ["test"]}') == []
    # the submission's version of a script counts too: its files are shown with it
    rewritten = '{"scripts": {"test": "node -r ./lib/fast.js --test"}}'
    assert package_scripts(["npm test"], '{"scripts": {"test": "node --test"}}', rewritten) == [
        "node --test",
        "node -r ./lib/fast.js --test",
    ]
    # a script that runs itself is read once
    assert package_scripts(["npm test"], '{"scripts": {"test": "npm test"}}') == ["npm test"]


def test_protect_none_is_the_default_and_empty_is_off() -> None:
    assert protect_globs(None, ["sh ci.sh"]) == [*DEFAULT_PROTECT, "ci.sh"]
    assert protect_globs([], ["sh ci.sh"]) == []
    assert protect_globs(["src/core/"], []) == ["src/core/"]


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("test_slug.py", True),
        ("tests/slug_test.py", True),
        ("conftest.py", True),
        ("slug.py", False),
        ("testing.py", False),
        ("src/slug.test.ts", True),
        ("src/slug.spec.js", True),
        ("src/__tests__/slug.js", True),
        ("test/slug-test.mjs", True),
        ("src/contest.js", False),
        ("test/slug.js", True),  # node --test runs every script under test/
        ("pkg/test/unit/helpers.mjs", True),
        ("test/fixtures.py", False),
        ("test/data.json", False),
        ("src/__tests__/__snapshots__/slug.test.js.snap", True),
        ("src/__tests__/helper.py", False),
        ("support/setup.js", False),
    ],
)
def test_test_files(path: str, test: bool) -> None:
    assert is_test_file(path) is test


def test_only_the_test_runners_part_of_a_scoped_file_counts() -> None:
    before = '[project]\nversion = "1"\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    bumped = before.replace('"1"', '"2"')
    plugin = before.replace('"-q"', '"-q -p evil"')
    assert harness_part("pyproject.toml", before) == harness_part("pyproject.toml", bumped)
    assert harness_part("pyproject.toml", before) != harness_part("pyproject.toml", plugin)
    assert harness_part("setup.cfg", "[metadata]\nname = a\n") is None
    assert harness_part("setup.cfg", "[tool:pytest]\naddopts = -p x\n") == {"addopts": "-p x"}
    pkg = '{"name": "a", "version": "1", "scripts": {"build": "tsc", "test": "vitest run"}}'
    assert harness_part("package.json", pkg) == harness_part("package.json", pkg.replace('"tsc"', '"tsc -b"'))
    assert harness_part("package.json", pkg) != harness_part(
        "package.json", pkg.replace("vitest run", "true")
    )
    # what does not parse is all harness
    assert harness_part("pyproject.toml", "[[[") == "[[["
    assert protected(["pyproject.toml", "setup.cfg"], DEFAULT_PROTECT, ["pyproject.toml"]) == ["setup.cfg"]


CFG = VerifierConfig.model_validate(
    {"checks": {"unit": {"command": "pytest --junitxml=r.xml", "report": {"path": "r.xml"}}}}
)
CRIT = Criterion(id="AC-1", text="x", kind=CriterionKind.TEST, verify_ref="t.test_x")
PASS = CriterionResult(
    result=Evidence.PASS, source=EvidenceSource(check="unit", report="r.xml", ref="t.test_x")
)


def _decide(baseline: BaselineEvidence | None, allowed: tuple[str, ...] = (), **check: object) -> Verdict:
    return decide(
        RunReport(
            checks={"unit": CheckResult.model_validate({"exit_code": 0, **check})},
            results={"AC-1": PASS},
            baseline=baseline,
        ),
        criteria=[CRIT],
        spec=None,
        submission=None,
        config=CFG,
        allowed=allowed,
    ).verdict


def test_a_protected_change_holds_a_passing_run_unless_allowed() -> None:
    base = BaselineEvidence(branch="main", commit="a" * 40, changed=["conftest.py", "x.py"], changed_total=2)
    assert _decide(base) is Verdict.NEEDS_HUMAN
    assert _decide(base, ("conftest.py",)) is Verdict.PASSED
    assert _decide(BaselineEvidence(changed=["x.py"], changed_total=1)) is Verdict.PASSED
    assert _decide(None) is Verdict.PASSED  # a verifier that did not say: nothing to read
    # a list cut short holds the run: a protected path may be past the cut
    assert _decide(BaselineEvidence(changed=["x.py"], changed_total=5)) is Verdict.NEEDS_HUMAN


def test_a_report_that_is_not_the_checks_own_fails_the_run() -> None:
    quiet = BaselineEvidence(changed=[], changed_total=0)
    assert _decide(quiet, report_problem="committed") is Verdict.FAILED
    assert _decide(quiet, report_problem="stale") is Verdict.FAILED
    assert _decide(quiet, report_failed=1, report_failed_names=["t.test_y"]) is Verdict.FAILED
    assert _decide(quiet) is Verdict.PASSED


def test_from_needs_human_ready_is_still_a_requeue() -> None:
    assert human_move(Status.NEEDS_HUMAN, Status.READY) is Action.REQUEUE


def test_an_exact_decoy_does_not_hide_the_test_its_dotted_path_names() -> None:
    from taskgate.domain.reports import Report, TestCase, TestOutcome
    from taskgate.domain.testrefs import match

    real = TestCase(
        "test_keeps_digits", "tests.test_slug.TestSlugify", TestOutcome.FAILED, "route != route-66"
    )
    decoy = TestCase("test_keeps_digits", "test_slug.TestSlugify")
    found = match(Report(tests=(decoy, real)), "test_slug.TestSlugify.test_keeps_digits")
    assert found.evidence is Evidence.AMBIGUOUS, found
    assert "tests.test_slug.TestSlugify.test_keeps_digits" in found.detail
    # alone, the exact test is the ref's
    assert match(Report(tests=(decoy,)), "test_slug.TestSlugify.test_keeps_digits").evidence is Evidence.PASS
