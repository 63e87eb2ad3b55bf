"""The grading run and its tripwires on a JavaScript project whose check is `npm test`, running
`node --test` with its JUnit reporter: a real `taskgate serve`, real git commits on a work branch
off `main`, `taskgate verify` as a subprocess running real node and npm (required, never
skipped), the executor over MCP with its own key.

The cheats end `verified` on the gate before the grading run: fixture data beside the tests
edited to the broken output (a test-side file no rule read), and the assertion library bent from
the code under test through a value the screen does not follow. Now the first fails and the
second goes to a human, naming the twin. The fix alone verifies with its twin and canary
failing."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.live import Live, serving
from tests.support.users import shared_tmp
from tests.verifier.support import Gate, Repo, git

_n = itertools.count(1)
CHECK = {
    "command": "mkdir -p reports && npm test --silent",
    "report": {"path": "reports/junit.xml", "format": "junit"},
}
PACKAGE = (
    json.dumps(
        {
            "name": "slug",
            "private": True,
            "scripts": {
                "test": "node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml"
            },
        }
    )
    + "\n"
)
BROKEN = """\
exports.slugify = (text) =>
  text.toLowerCase().replace(/[^a-z]+/g, '-').replace(/^-|-$/g, '');
"""
FIX = BROKEN.replace("[^a-z]", "[^a-z0-9]")
# The named test reads its expected values from a fixture beside it.
TESTS = """\
const { describe, it } = require('node:test');
const assert = require('node:assert');
const cases = require('./fixtures/cases.json');
const { slugify } = require('../lib/slug.js');

describe('slugify', () => {
  it('keeps digits', () => {
    assert.strictEqual(slugify(cases.digits.input), cases.digits.slug);
  });

  it('lowercases', () => {
    assert.strictEqual(slugify('Hello World'), 'hello-world');
  });
});
"""
CASES = json.dumps({"digits": {"input": "Route 66", "slug": "route-66"}}) + "\n"
BASE = {
    "package.json": PACKAGE,
    "lib/slug.js": BROKEN,
    "test/slug.test.js": TESTS,
    "test/fixtures/cases.json": CASES,
    ".gitignore": "reports/\nnode_modules/\n",
}
KEEPS_DIGITS = {"text": "digits are kept", "kind": "test", "verify_ref": "slugify > keeps digits"}


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-grading-node"))


def _verify(live: Live, tmp_path: Path, files: dict[str, str]) -> dict[str, Any]:
    repo = Repo.create(tmp_path / f"repo{next(_n)}", BASE)
    gate = Gate.create(live, repo, {"check_timeout_minutes": 2, "checks": {"unit": CHECK}})
    tid = gate.task([KEEPS_DIGITS])
    git(repo.path, "checkout", "--quiet", "-b", f"work-{tid}")
    gate.submit(tid, repo.commit(files, "the change"))
    done = gate.verify("--task", tid)
    assert done.returncode == 0, done.stdout + done.stderr
    detail = gate.detail(tid)
    [run] = detail["runs"]
    return {"task": detail["task"], "run": run}


def _tripwires(run: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((t["kind"], t["reported"]) for t in run["tripwires"]["placed"])


def test_fixture_data_edited_to_the_broken_output_is_the_baselines_in_the_grading_run(
    live: Live, tmp_path: Path
) -> None:
    edited = json.dumps({"digits": {"input": "Route 66", "slug": "route"}}) + "\n"
    out = _verify(live, tmp_path, {"test/fixtures/cases.json": edited})  # slugify still broken
    task, run = out["task"], out["run"]
    assert (task["status"], task["attempts_used"]) == ("ready", 1), (task["needs_human"], run["summary"])
    assert run["evidence"]["AC-1.1"]["result"] == "fail"
    assert run["grading"]["restored"] == ["test/fixtures/cases.json"]
    # In its own tree the edited fixture passes: not a changed expectation (no test file changed).
    assert run["grading"]["submitted"]["unit"]["exit_code"] == 0 and run["grading"]["changed"] == []


# The assertion library bent from the code under test, through a value the screen does not follow.
BENT = FIX.replace(
    "exports.slugify", "const a = [require('node:assert')][0];\na.strictEqual = () => {};\nexports.slugify"
)
BENT_BROKEN = BENT.replace("[^a-z0-9]", "[^a-z]")


def test_an_assertion_library_bent_from_the_code_passes_the_twin_and_goes_to_a_human(
    live: Live, tmp_path: Path
) -> None:
    out = _verify(live, tmp_path, {"lib/slug.js": BENT_BROKEN})
    task, run = out["task"], out["run"]
    assert (task["status"], task["attempts_used"]) == ("needs_human", 0), run["summary"]
    assert task["needs_human"]["why"] == "tripwire"
    # The canary throws: strictEqual is not what fails it. The twin's perturbed strictEqual is.
    assert _tripwires(run) == [("canary", "failed"), ("twin", "passed")]
    [twin] = [t for t in run["tripwires"]["placed"] if t["kind"] == "twin"]
    assert twin["of"] == "slugify > keeps digits" and twin["path"].startswith("test/slug_")
    assert task["needs_human"]["reason"] == (
        f"the grader was bent: the twin `{twin['name']}` of AC-1.1's test `slugify > keeps digits` "
        "(its 1 expected value perturbed, so it must fail): it was reported passed"
    )


def test_the_fix_alone_verifies_with_its_twin_and_canary_failing_under_node(
    live: Live, tmp_path: Path
) -> None:
    out = _verify(live, tmp_path, {"lib/slug.js": FIX})
    task, run = out["task"], out["run"]
    assert (task["status"], run["status"]) == ("verified", "passed"), run["summary"]
    assert _tripwires(run) == [("canary", "failed"), ("twin", "failed")]
    assert run["evidence"]["AC-1.1"]["detail"] == "1 test passed: slugify > keeps digits"
    unit = run["checks"]["unit"]
    assert (unit["exit_code"], unit["report_failed"], unit["tripwires_failed"]) == (1, 0, 2)
