"""Honest verdicts where the gate's rules meet: a real `taskgate serve`, real git,
`taskgate verify` as a subprocess running real pytest and real `node --test`.

- A guard whose ref has a typo names a test the baseline does not hold: the executor's commit
  adding a test under that name is not evidence, the ref is the spec's error (no attempt used).
- In a repository with a Python and a `node --test` check, a commit that only adds a failing
  Python test goes back to the executor with its failure: the unchanged node test the criterion
  names is not marked new because some test file changed.
- A submission the base branch already held when the task was claimed changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run, serving
from tests.support.users import shared_tmp
from tests.verifier.support import (
    BROKEN,
    KEEPS_DIGITS,
    PYTEST_CHECK,
    SLUGIFY,
    SLUGIFY_TESTS,
    Gate,
    Repo,
    git,
    pytest_config,
)

NODE_CHECK = {
    "command": "mkdir -p reports && node --test --test-reporter=junit --test-reporter-destination=reports/node.xml",
    "report": {"path": "reports/node.xml", "format": "junit"},
}
NODE_SLUG = "exports.slugify = (t) => t.toLowerCase().replace(/[^a-z0-9]+/g, '-');\n"
NODE_TESTS = """\
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { slugify } = require('./slug.js');

describe('slugify', () => {
  it('keeps digits', () => assert.strictEqual(slugify('Route 66'), 'route-66'));
});
"""
TYPO_GUARD = {"text": "digits stay", "kind": "test", "verify_ref": "slugify > keeps digitz", "guard": True}


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()  # the checks may run as another user, who must reach the repositories


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-rules-meet"))


def _gate(live: Live, tmp_path: Path, files: dict[str, str], config: dict[str, Any]) -> Gate:
    repo = Repo.create(tmp_path / "repo", {**files, ".gitignore": "reports/\n"})
    repo.branch("work")
    return Gate.create(live, repo, config)


def test_a_guard_with_a_typo_is_a_spec_error_whatever_test_the_commit_adds(
    live: Live, tmp_path: Path
) -> None:
    node = {"check_timeout_minutes": 2, "checks": {"unit": NODE_CHECK}}
    gate = _gate(live, tmp_path, {"slug.js": NODE_SLUG, "slug.test.js": NODE_TESTS}, node)
    tid = gate.task([TYPO_GUARD])
    typd = NODE_TESTS.replace("});\n", "  it('keeps digitz', () => assert.ok(true));\n});\n")
    gate.submit(tid, gate.repo.commit({"slug.test.js": typd}, "the guard's test"))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("spec_error", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert (task["needs_human"]["why"], task["attempts_used"]) == ("spec_error", 0)
    assert task["needs_human"]["reason"] == (
        "spec error: AC-1.1 is a guard and no test file of the baseline defines its test "
        "`slugify > keeps digitz`: a guard keeps existing behaviour, so its test must exist before the change"
    )


def test_a_guard_the_baseline_holds_verifies(live: Live, tmp_path: Path) -> None:
    node = {"check_timeout_minutes": 2, "checks": {"unit": NODE_CHECK}}
    gate = _gate(live, tmp_path, {"slug.js": NODE_SLUG, "slug.test.js": NODE_TESTS}, node)
    tid = gate.task([{**TYPO_GUARD, "verify_ref": "slugify > keeps digits"}])
    gate.submit(tid, gate.repo.commit({"slug.js": NODE_SLUG + "exports.version = 2;\n"}, "a version"))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line


def test_a_failing_python_test_goes_back_to_the_executor_not_to_a_human(live: Live, tmp_path: Path) -> None:
    checks = {"py": PYTEST_CHECK, "js": NODE_CHECK}
    files = {
        "slug.py": SLUGIFY,
        "test_slug.py": SLUGIFY_TESTS,
        "slug.js": NODE_SLUG,
        "slug.test.js": NODE_TESTS,
    }
    gate = _gate(live, tmp_path, files, {"check_timeout_minutes": 2, "checks": checks})
    tid = gate.task([{"text": "digits", "kind": "test", "verify_ref": "slugify > keeps digits"}])
    failing = "def test_titles():\n    assert False, 'titles are not done yet'\n"
    gate.submit(tid, gate.repo.commit({"test_titles.py": failing}, "a test first"))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    task = gate.detail(tid)["task"]
    assert task["needs_human"] is None and task["attempts_used"] == 1
    finding = task["findings"][-1]
    # The grading run leaves the unnamed new test out; the run on the submission's own tree has it.
    assert finding["summary"] == "the checks fail on the submission's own tree (its own test files included)"
    assert finding["details"][0].startswith("check py fails on the submission's own tree"), finding
    [run_] = gate.detail(tid)["runs"]
    # the node test is the baseline's: nothing ran it on the baseline's code as if it were new
    assert run_["evidence"]["AC-1.1"]["without_change"] is None


def test_a_submission_main_held_when_the_task_was_claimed_changes_nothing(live: Live, tmp_path: Path) -> None:
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": BROKEN, "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"}
    )
    done = repo.commit({"slug.py": SLUGIFY}, "keep digits")  # on main, before any task
    repo.commit({"NOTES.md": "digits are kept\n"}, "notes")
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task([KEEPS_DIGITS])

    async def claim_and_submit() -> None:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            claimed = await a.ok("claim_task", project=gate.project, task_id=tid)
            await a.ok(
                "submit_task",
                task_id=tid,
                claim_token=claimed["claim_token"],
                commit_sha=done,
                evidence="on main",
            )

    run(claim_and_submit())
    [line] = gate.verify_json()
    [run_] = gate.detail(tid)["runs"]
    why = "the submission was already on main when the task was claimed: it changes nothing"
    assert (run_["baseline"]["commit"], run_["baseline"]["why"]) == (done, why), run_["baseline"]
    assert run_["baseline"]["changed"] == []
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    assert git(repo.path, "rev-parse", "main") != done  # main moved on past it
