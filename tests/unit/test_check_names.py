"""A drafted check is named for what it runs: the name every finding and the board use for it
("check node-test exited 1"), never its first setup word ("check mkdir exited 1")."""

from __future__ import annotations

import pytest

from taskgate.domain.check_names import drafted_name, simple_commands
from taskgate.domain.verifier_config import UNSET_NOTE, draft_from_commands

README_NODE = (
    "mkdir -p reports && node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml"
)
JEST = (
    'JEST_JUNIT_OUTPUT_FILE=reports/junit.xml JEST_JUNIT_CLASSNAME="{filepath}" '
    "npx jest --ci --reporters=default --reporters=jest-junit"
)


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (README_NODE, "node-test"),
        ("python3 -m pytest --junitxml=reports/junit.xml", "pytest"),
        (".venv/bin/python -m pytest --junitxml=reports/junit.xml", "pytest"),
        ("cd sub && pytest -q", "pytest"),
        ("uv run pytest", "pytest"),
        ("npx vitest run --reporter=junit --outputFile=reports/junit.xml", "vitest"),
        (JEST, "jest"),
        ("npm test", "npm-test"),
        ("npm run test", "npm-test"),
        ("npm ci", "install"),
        ("python3 -m venv .venv && .venv/bin/pip install -q -e . pytest", "install"),
        ("[ -x .venv/bin/python ] || { python3 -m venv .venv && .venv/bin/pip install -q -e .; }", "install"),
        ("npm ci && npm test", "npm-test"),
        ("mvn -q test", "mvn-test"),
        ("./gradlew test", "gradle-test"),
        ("go test ./...", "go-test"),
        ("ruff check .", "ruff-check"),
        ("bash scripts/test.sh", "test"),
        ("./run-tests.sh --fast", "run-tests"),
        ("python3 -m py_compile slug.py", "py_compile"),
        ("true", "check"),
        ("echo 'unbalanced", "check"),
    ],
)
def test_a_check_is_named_for_what_it_runs(command: str, name: str) -> None:
    assert drafted_name(command) == name


def test_simple_commands_drop_assignments_redirections_and_wrappers() -> None:
    assert simple_commands("FOO=1 env nice npm test 2>err.log | tee out; echo done") == [
        ["npm", "test"],
        ["tee", "out"],
        ["echo", "done"],
    ]


def test_the_readmes_node_recipe_drafts_node_test_and_says_what_null_means() -> None:
    cfg, notes = draft_from_commands([README_NODE, "node --test"])
    assert list(cfg.checks) == ["node-test", "node-test-2"]
    assert cfg.base_branch is None and cfg.merge is None and UNSET_NOTE in notes
    assert '"base_branch": null' in UNSET_NOTE and '"merge": null' in UNSET_NOTE
    # A JUnit-only node --test prints nothing a person can read: the draft says so.
    assert any("only a JUnit reporter" in n and "'node-test'" in n for n in notes)
    assert not any("'node-test-2'" in n and "JUnit" in n for n in notes)


def test_the_draft_reads_the_junit_destination_of_node_not_the_first_one() -> None:
    readable = (
        "mkdir -p reports && node --test --test-reporter=spec --test-reporter-destination=stdout "
        "--test-reporter=junit --test-reporter-destination=reports/junit.xml"
    )
    cfg, notes = draft_from_commands(
        [readable, "node --test --test-reporter=spec --test-reporter-destination=stdout"]
    )
    report = cfg.checks["node-test"].report
    assert report is not None and report.path == "reports/junit.xml"
    assert cfg.checks["node-test-2"].report is None  # spec to stdout only: no report to read
    assert any("'node-test-2' writes no report" in n for n in notes)
    assert not any("'node-test' gives node --test only a JUnit reporter" in n for n in notes)
