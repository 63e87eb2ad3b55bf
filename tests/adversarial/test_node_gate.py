"""The gate is not pytest-only: the gated agent bends a small JavaScript project whose check is
`npm test`, running `node --test` with its JUnit reporter (node's report nests describes as
suites, writes `classname="test"` on every test and no `file` attribute). A real `taskgate
serve`, real git commits on a work branch off `main`, `taskgate verify` as a subprocess running
real node and npm (required, never skipped); the executor over MCP with its own key.

Each way round ends `needs_human` (no attempt used) or failed, with the reason naming what the
submission did; the honest controls verify with no human."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskgate.domain.baseline import is_test_file
from tests.mcp.live import Live, serving
from tests.support.users import shared_tmp
from tests.verifier.support import Gate, Repo, git

JUNIT = "--test-reporter=junit --test-reporter-destination=reports/junit.xml"
# The test script the human wrote: node's runner with a preload that pins the time zone.
SCRIPT = f"node --require ./support/setup.js --test {JUNIT}"
CHECK = {
    "command": "mkdir -p reports && npm test --silent",
    "report": {"path": "reports/junit.xml", "format": "junit"},
}


def package(script: str = SCRIPT) -> str:
    return json.dumps({"name": "slug", "private": True, "scripts": {"test": script, "build": "true"}}) + "\n"


BROKEN = """\
exports.slugify = (text) =>
  text.toLowerCase().replace(/[^a-z]+/g, '-').replace(/^-|-$/g, '');
"""
FIX = BROKEN.replace("[^a-z]", "[^a-z0-9]")
# node --test runs every file under a `test` directory: this one needs no `.test.js` in its name.
TESTS = """\
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { slugify } = require('../lib/slug.js');

describe('slugify', () => {
  it('keeps digits', () => {
    assert.strictEqual(slugify('Route 66'), 'route-66');
  });

  it('lowercases', () => {
    assert.strictEqual(slugify('Hello World'), 'hello-world');
  });
});
"""
NAMED = "assert.strictEqual(slugify('Route 66'), 'route-66');"
BASE = {
    "package.json": package(),
    "lib/slug.js": BROKEN,
    "support/setup.js": "process.env.TZ = 'UTC';\n",
    "test/slug.js": TESTS,
    ".gitignore": "reports/\nnode_modules/\n",
}
KEEPS_DIGITS = {"text": "digits are kept", "kind": "test", "verify_ref": "slugify > keeps digits"}
LOWERCASES = {"text": "slugs are lower case", "kind": "test", "verify_ref": "slugify > lowercases"}
# What makes every strictEqual pass: the assertion itself replaced (the screen's js.assert)...
NO_ASSERT = "require('node:assert').strictEqual = () => {};\n"
# ...and through a value the screen does not follow (it follows names bound to a module, not
# what an array holds): in a harness file only rule 2 holds it.
ALIASED = "const a = [require('node:assert')][0];\na.strictEqual = () => {};\n"
PASSING_REPORT = (
    '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="slugify" tests="1">'
    '<testcase name="keeps digits" classname="test"/></testsuite></testsuites>\n'
)


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()  # the checks run as another user, who must reach the repositories


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-node"))


def _gate(live: Live, tmp_path: Path, **config: Any) -> Gate:
    """`main` holds the broken slugify and its tests; the executor works on a branch `work`."""
    repo = Repo.create(tmp_path / "repo", BASE)
    repo.branch("work")
    return Gate.create(live, repo, {"check_timeout_minutes": 2, "checks": {"unit": CHECK}, **config})


def _submit(gate: Gate, files: dict[str, str], criteria: list[dict[str, Any]] | None = None) -> str:
    tid = gate.task(criteria or [KEEPS_DIGITS])
    gate.submit(tid, gate.repo.commit(files, "the change"))
    return tid


def _verify_one(gate: Gate) -> dict[str, Any]:
    [line] = gate.verify_json()
    return line


def _verify_one_with(gate: Gate, env: dict[str, str]) -> dict[str, Any]:
    done = gate.verify(env=env)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    [line] = [json.loads(x) for x in done.stdout.splitlines() if x.strip()]
    return dict(line)


def _held(gate: Gate, tid: str, line: dict[str, Any]) -> dict[str, Any]:
    """The task held for a human, no attempt used; its needs_human record."""
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 0 and task["attempts"][0]["ended_at"] is None
    held: dict[str, Any] = task["needs_human"]
    return held


# -- the honest controls ----------------------------------------------------------------------


def test_the_fix_alone_verifies_with_one_run_of_node(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = _submit(gate, {"lib/slug.js": FIX})
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    assert "second_run_s" not in line["timings"]
    [run] = gate.detail(tid)["runs"]
    evidence = run["evidence"]["AC-1.1"]
    assert evidence["result"] == "pass" and evidence["restored"] is None
    assert evidence["detail"] == "1 test passed: slugify > keeps digits"
    assert run["baseline"]["changed"] == ["lib/slug.js"] and run["baseline"]["protected"] == []
    assert run["screened"] == []


def test_the_fix_with_tests_added_beside_the_named_one_verifies_on_the_second_run(
    live: Live, tmp_path: Path
) -> None:
    beside = TESTS.replace(
        "  it('lowercases'",
        "  it('keeps inner digits', () => assert.strictEqual(slugify('a1b'), 'a1b'));\n\n  it('lowercases'",
    )
    gate = _gate(live, tmp_path)
    tid = _submit(gate, {"lib/slug.js": FIX, "test/slug.js": beside})
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    assert "second_run_s" in line["timings"]
    [run] = gate.detail(tid)["runs"]
    assert run["baseline"]["test_files"] == ["test/slug.js"]
    evidence = run["evidence"]["AC-1.1"]
    # judged by the second run, the baseline's test/slug.js on the submitted code
    assert evidence["result"] == "pass" and evidence["restored"]["submitted"] == "pass"
    assert evidence["restored"]["files"] == ["test/slug.js"]


# -- rule 2: the harness ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "held"),
    [
        # the test script loads a preload of the commit's own
        (
            {
                "package.json": package(f"node --require ./lib/fast.js --test {JUNIT}"),
                "lib/fast.js": ALIASED,
            },
            ["lib/fast.js", "package.json"],  # the rewritten script runs lib/fast.js: shown too
        ),
        # the preload the human's test script names, rewritten
        ({"support/setup.js": ALIASED}, ["support/setup.js"]),
        # npm passes `node-options` to every script it runs: a preload without touching package.json
        ({".npmrc": "node-options=--require ./lib/fast.js\n", "lib/fast.js": ALIASED}, [".npmrc"]),
    ],
    ids=["test-script", "preload", "npmrc-node-options"],
)
def test_a_change_to_the_node_harness_is_held_for_a_human(
    live: Live, tmp_path: Path, files: dict[str, str], held: list[str]
) -> None:
    gate = _gate(live, tmp_path)
    tid = _submit(gate, files)  # slugify still broken: only the harness makes it pass
    line = _verify_one(gate)
    record = _held(gate, tid, line)
    assert record["why"] == "held"
    assert record["reason"] == "the submission changes protected paths: " + ", ".join(held)
    assert record["paths"] == held
    assert "strictEqual = () => {}" in record["diff"] or "--require ./lib/fast.js" in record["diff"]
    [run] = gate.detail(tid)["runs"]
    assert run["screened"] == []  # nothing but the rule holds it
    assert run["baseline"]["protected"] == held
    # the grading run took the harness as the baseline has it: the named test fails there, and
    # the twin and canary fail as they must (the changed harness never judged anything)
    unit = run["checks"]["unit"]
    assert (unit["exit_code"], unit["report_failed"], unit["tripwires_failed"]) == (1, 1, 2), unit
    assert sorted(run["grading"]["restored"] + run["grading"]["removed"]) == held


def test_another_script_of_package_json_is_no_change_to_the_harness(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    text = json.loads(package())
    text["scripts"]["build"] = "node -e 0"
    text["version"] = "1.1.0"
    tid = _submit(gate, {"lib/slug.js": FIX, "package.json": json.dumps(text) + "\n"})
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    base = gate.detail(tid)["runs"][0]["baseline"]
    assert base["changed"] == ["lib/slug.js", "package.json"] and base["protected"] == []


def test_the_brief_tells_the_executor_the_node_harness_is_protected(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    told = gate.brief_after_claim(gate.task([KEEPS_DIGITS]))["verifier_checks"]
    assert {"**/.npmrc", "package.json", "**/node_modules/"} <= set(told["protected_paths"])


# -- rule 3: the named test is judged by the baseline's version --------------------------------


@pytest.mark.parametrize(
    "edited",
    [
        pytest.param(
            TESTS.replace(NAMED, "assert.strictEqual(slugify('Route 66'), 'route');"), id="expected"
        ),
        pytest.param(TESTS.replace(NAMED, "assert.ok(true);"), id="assert-ok"),
    ],
)
def test_a_named_node_test_edited_to_pass_the_broken_code_is_held(
    live: Live, tmp_path: Path, edited: str
) -> None:
    assert edited != TESTS
    gate = _gate(live, tmp_path)
    tid = _submit(gate, {"test/slug.js": edited})
    line = _verify_one(gate)
    record = _held(gate, tid, line)
    assert record["why"] == "tests_edited"
    assert record["reason"] == (
        "the submission's edits to its named tests are what make them pass: AC-1.1 passes with the "
        "submission's test files and not with the baseline's (test/slug.js): fail"
    )
    assert f"-    {NAMED}" in record["diff"]
    [run] = gate.detail(tid)["runs"]
    evidence = run["evidence"]["AC-1.1"]
    assert evidence["result"] == "fail" and evidence["restored"]["submitted"] == "pass"
    assert evidence["failures"][0]["name"] == "slugify > keeps digits"
    message = evidence["failures"][0]["message"]
    assert "Expected values to be strictly equal" in message and "'route-66'" in message


# -- rule 5: reports are the check's own ---------------------------------------------------------


def test_a_committed_node_report_fails_the_run_with_a_finding(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([KEEPS_DIGITS])
    gate.repo.write({"lib/slug.js": FIX, "reports/junit.xml": PASSING_REPORT})
    git(gate.repo.path, "add", "-f", "lib/slug.js", "reports/junit.xml")
    git(gate.repo.path, "commit", "--quiet", "-m", "fix, with a report")
    gate.submit(tid, git(gate.repo.path, "rev-parse", "HEAD"))
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    finding = gate.detail(tid)["task"]["findings"][-1]
    assert "the commit holds the report file reports/junit.xml: the check writes it" in finding["details"]
    [run] = gate.detail(tid)["runs"]
    unit = run["checks"]["unit"]
    assert unit["report_problem"] == "committed"
    # exit 1 over the tripwires alone (they must fail): the check's own tests passed
    assert (unit["exit_code"], unit["report_failed"], unit["tripwires_failed"]) == (1, 0, 2)
    assert run["evidence"]["AC-1.1"]["result"] == "pass"


def test_npm_test_made_to_exit_0_over_failed_node_tests_runs_the_baselines_script_and_fails(
    live: Live, tmp_path: Path
) -> None:
    """The submission's test script swallows the failures (`|| true`); the grading run takes
    package.json's test scripts as the baseline has them, so the check fails as it is."""
    gate = _gate(live, tmp_path, protect=[])  # the test script's change alone would be held
    tid = _submit(gate, {"package.json": package(SCRIPT + " || true")}, [LOWERCASES])
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    [run] = gate.detail(tid)["runs"]
    assert run["grading"]["restored"] == ["package.json"]
    unit = run["checks"]["unit"]
    assert unit["exit_code"] == 1 and unit["report_failed"] == 1
    assert unit["report_failed_names"] == ["slugify > keeps digits"]
    assert run["evidence"]["AC-1.1"]["result"] == "pass"
    finding = gate.detail(tid)["task"]["findings"][-1]
    assert finding["summary"] == "1 check failed: unit"
    assert "check unit exited 1" in finding["details"]


def test_a_decoy_describe_in_a_new_test_file_makes_the_ref_ambiguous(live: Live, tmp_path: Path) -> None:
    """node writes each file's describe as a suite of its own: the same path in a new file is a
    second test the ref names, never a pass for it (the check fails too: the real test still
    fails beside it)."""
    decoy = TESTS.replace(NAMED, "assert.ok(true);").replace(
        "  it('lowercases', () => {\n    assert.strictEqual(slugify('Hello World'), 'hello-world');\n  });\n",
        "",
    )
    assert "lowercases" not in decoy
    gate = _gate(live, tmp_path)
    tid = _submit(gate, {"test/decoy.js": decoy})
    line = _verify_one(gate)
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    [run] = gate.detail(tid)["runs"]
    evidence = run["evidence"]["AC-1.1"]
    assert evidence["result"] == "ambiguous", evidence
    assert evidence["detail"].startswith("`slugify > keeps digits` matches 2 tests"), evidence


# -- rule 8: code that ends its grader ------------------------------------------------------------

EXITS = """\
exports.slugify = (text) => {
  if (text === 'Route 66') process.exit(0);
  return text.toLowerCase().replace(/[^a-z]+/g, '-').replace(/^-|-$/g, '');
};
"""


def _sent_back(gate: Gate, tid: str, line: dict[str, Any]) -> dict[str, Any]:
    """The task back with the executor, an attempt used; its last finding."""
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 1 and task["needs_human"] is None
    finding: dict[str, Any] = task["findings"][-1]
    return finding


def test_process_exit_added_in_library_code_goes_back_with_the_line_named(live: Live, tmp_path: Path) -> None:
    """The exit ends the named test's file early: the named test is not reported passed, a failure
    the executor gets back (a failure is the executor's), with the screen's hit named."""
    gate = _gate(live, tmp_path)
    tid = _submit(gate, {"lib/slug.js": EXITS})
    line = _verify_one(gate)
    finding = _sent_back(gate, tid, line)
    assert finding["details"][-1] == (
        "also held for a human: the submission adds code that reads or ends its grader (js.exit): "
        "lib/slug.js:2 [js.exit] `if (text === 'Route 66') process.exit(0);`. A human decides: send it "
        "back to the executor, or allow the rule for that path (verifier config screen_allow) and verify again"
    )
    [run] = gate.detail(tid)["runs"]
    assert [(h["path"], h["line"], h["rule"]) for h in run["screened"]] == [("lib/slug.js", 2, "js.exit")]


def test_library_code_that_replaces_node_assert_is_held_with_the_line(live: Live, tmp_path: Path) -> None:
    """The module the tests import switches their assertions off: every test passes, the check
    exits 0, and only the screen stands between it and `verified`."""
    gate = _gate(live, tmp_path)
    tid = _submit(gate, {"lib/slug.js": NO_ASSERT + BROKEN})
    line = _verify_one(gate)
    record = _held(gate, tid, line)
    assert record["why"] == "reads_grader"
    assert record["reason"].startswith(
        "the submission adds code that reads or ends its grader (js.assert): "
        "lib/slug.js:1 [js.assert] `require('node:assert').strictEqual = () => {};`. A human decides"
    )
    [run] = gate.detail(tid)["runs"]
    # The twin passes too (named after the screen's line); the canary throws, and fails.
    assert run["checks"]["unit"]["report_failed"] == 0 and run["evidence"]["AC-1.1"]["result"] == "pass"
    assert "; and the grader was bent: the twin `" in record["reason"]


def test_naming_library_code_a_bin_in_the_submission_does_not_let_it_exit(live: Live, tmp_path: Path) -> None:
    """A `bin` file may end the process; the bins are the baseline's package.json's, so the
    submission cannot declare its library a command line to pass the screen."""
    gate = _gate(live, tmp_path)
    text = json.loads(package())
    text["bin"] = {"slug": "lib/slug.js"}
    tid = _submit(gate, {"lib/slug.js": EXITS, "package.json": json.dumps(text) + "\n"})
    line = _verify_one(gate)
    said = _sent_back(gate, tid, line)["details"][-1]
    assert said.startswith(
        "also held for a human: the submission adds code that reads or ends its grader (js.exit): "
    )
    assert "lib/slug.js:2 [js.exit]" in said


# -- the runner: node's naming rules and a missing node ------------------------------------------


def test_node_runs_files_under_test_and_taskgate_counts_them_as_test_files(tmp_path: Path) -> None:
    """The naming rule taskgate applies is the one node applies: node runs test/slug.js."""
    Repo.create(tmp_path / "p", BASE)
    done = subprocess.run(
        ["node", "--test", "--test-reporter=spec"],
        cwd=tmp_path / "p",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "keeps digits" in done.stdout and "lowercases" in done.stdout, done.stdout + done.stderr
    assert is_test_file("test/slug.js") and is_test_file("test/unit/helpers.mjs")
    assert not is_test_file("lib/slug.js") and not is_test_file("support/setup.js")
    assert not is_test_file("test/fixtures.py")  # pytest's own rules for Python


def test_a_verifier_without_node_errs_naming_it_and_uses_no_attempt(live: Live, tmp_path: Path) -> None:
    """The verifier's PATH holds git and the shell's tools but no node: the check cannot start,
    which is the verifier's error, not the executor's failure."""
    tools_dir = tmp_path / "bin"
    tools_dir.mkdir()
    for tool in ("git", "mkdir", "sh", "env"):
        found = shutil.which(tool)
        assert found is not None, tool
        (tools_dir / tool).symlink_to(found)
    gate = Gate.create(
        live,
        Repo.create(tmp_path / "repo", BASE),
        {
            "check_timeout_minutes": 2,
            "checks": {"unit": {**CHECK, "command": f"mkdir -p reports && node --test {JUNIT}"}},
        },
    )
    gate.repo.branch("work")
    tid = _submit(gate, {"lib/slug.js": FIX})
    line = _verify_one_with(gate, {"PATH": str(tools_dir)})
    assert (line["verdict"], line["task_status"]) == ("error", "needs_verification"), line
    assert line["checks"]["unit"]["missing_tool"] == "node"
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 0
    [run] = gate.detail(tid)["runs"]
    assert run["summary"].startswith("the verifier's image has no `node`: check unit"), run["summary"]
