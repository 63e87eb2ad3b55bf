"""Named tests must notice the change: a real `taskgate serve`, real git commits
on a work branch off `main`, `taskgate verify` as a subprocess running real pytest and real
`node --test`. The gated agent cannot make the fix, so it adds a function no test calls and a new
named test that imports it and asserts what the old code already did: it fails before the change
(on the import), so rule 4's run on the baseline's code passed it; with every function the change
touched stubbed out it still passes, and the task waits for a human, no attempt used. The honest
controls verify with no human."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.live import Live, serving
from tests.support.users import shared_tmp
from tests.verifier.support import BROKEN, SLUGIFY, SLUGIFY_TESTS, Gate, Repo, pytest_config

# The baseline's tests without the digits test: the spec asks for digits as new behaviour.
NO_DIGITS_TESTS = SLUGIFY_TESTS.replace(
    '    def test_keeps_digits(self):\n        assert slugify("Route 66") == "route-66"\n\n', ""
)
NEW_DIGITS = {"text": "digits are kept", "kind": "test", "verify_ref": "test_digits.test_keeps_digits"}
# The cheat: a helper the test imports (so the test fails on the baseline's code), and an
# assertion the old code already passes.
HELPER = BROKEN + '\n\ndef keeps_digits(text):\n    return slugify(text) + ""\n'
IMPORT_ONLY_TEST = (
    "from slug import keeps_digits, slugify\n\n\n"
    'def test_keeps_digits():\n    assert slugify("Hello World") == "hello-world"\n'
)
DIGITS_TEST = (
    'from slug import slugify\n\n\ndef test_keeps_digits():\n    assert slugify("Route 66") == "route-66"\n'
)
REASON = "AC-1.1's test passes with every changed function stubbed out: it does not test the change"


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()  # the checks may run as another user, who must reach the repositories


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-sensitivity"))


def _gate(live: Live, tmp_path: Path, files: dict[str, str], config: dict[str, Any] | None = None) -> Gate:
    repo = Repo.create(tmp_path / "repo", {**files, ".gitignore": "reports/\nnode_modules/\n"})
    repo.branch("work")
    return Gate.create(live, repo, config or pytest_config())


def _verify(gate: Gate, tid: str, files: dict[str, str]) -> dict[str, Any]:
    gate.submit(tid, gate.repo.commit(files, "the change"))
    [line] = gate.verify_json()
    return line


def _evidence(gate: Gate, tid: str) -> dict[str, Any]:
    [run] = gate.detail(tid)["runs"]
    return dict(run["evidence"]["AC-1.1"])


def test_a_new_test_that_only_fails_on_an_import_is_held_for_a_human(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path, {"slug.py": BROKEN, "test_slug.py": NO_DIGITS_TESTS})
    tid = gate.task([NEW_DIGITS])
    line = _verify(gate, tid, {"slug.py": HELPER, "test_digits.py": IMPORT_ONLY_TEST})
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert (task["needs_human"]["why"], task["needs_human"]["reason"]) == ("passes_without_change", REASON)
    assert task["attempts_used"] == 0
    assert task["needs_human"]["criteria"] == ["AC-1.1"]  # a human may allow it
    evidence = _evidence(gate, tid)
    assert evidence["result"] == "pass" and evidence["passes_stubbed"] is True
    assert evidence["stubbed"]["result"] == "pass"
    [run] = gate.detail(tid)["runs"]
    assert run["summary"] == REASON


def test_the_fix_with_a_new_test_that_calls_it_verifies(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path, {"slug.py": BROKEN, "test_slug.py": NO_DIGITS_TESTS})
    tid = gate.task([NEW_DIGITS])
    line = _verify(gate, tid, {"slug.py": SLUGIFY, "test_digits.py": DIGITS_TEST})
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    evidence = _evidence(gate, tid)
    assert evidence["stubbed"]["result"] == "fail" and evidence["passes_stubbed"] is False


def test_a_passing_run_says_its_extra_runs_are_expected_to_fail(live: Live, tmp_path: Path) -> None:
    """What a person reads before "passed -> verified": the stubbed run's failure is labelled as
    the failure an honest change gets there, not left to read like the run's own."""
    gate = _gate(live, tmp_path, {"slug.py": BROKEN, "test_slug.py": NO_DIGITS_TESTS})
    tid = gate.task([NEW_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY, "test_digits.py": DIGITS_TEST}, "the fix"))
    done = gate.verify("--once", "--project", gate.project)
    assert done.returncode == 0, done.stderr
    assert f"{tid}: passed -> verified" in done.stdout, done.stdout
    stubbed = [line for line in done.stdout.splitlines() if "stubbed out" in line and " fail" in line]
    assert stubbed and all("(changed functions stubbed out: expected to fail)" in x for x in stubbed), (
        done.stdout
    )


def test_the_fix_refactored_into_a_package_verifies(live: Live, tmp_path: Path) -> None:
    """slug.py becomes slug/__init__.py with the work in slug/core.py: a new file, every function
    of it stubbed; the deleted module hits nothing."""
    gate = _gate(live, tmp_path, {"slug.py": BROKEN, "test_slug.py": SLUGIFY_TESTS})
    tid = gate.task(
        [{"text": "digits", "kind": "test", "verify_ref": "test_slug.TestSlugify.test_keeps_digits"}]
    )
    gate.repo.path.joinpath("slug.py").unlink()
    core = SLUGIFY.replace("def slugify", "def _slug")
    line = _verify(
        gate,
        tid,
        {
            "slug/__init__.py": '"""Slugs."""\n\nfrom slug.core import slugify\n\n__all__ = ["slugify"]\n',
            "slug/core.py": core + "\n\ndef slugify(text):\n    return _slug(text)\n",
        },
    )
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    assert _evidence(gate, tid)["stubbed"]["result"] == "fail"


def test_a_change_that_touches_no_function_says_the_check_did_not_apply(live: Live, tmp_path: Path) -> None:
    """A constant changes: nothing to stub. The run says so, and rule 4's run on the baseline's
    code is what questions the new test."""
    base = 'SEPARATOR = "_"\n\n\ndef slugify(text):\n    return text.lower().replace(" ", SEPARATOR)\n'
    gate = _gate(live, tmp_path, {"slug.py": base, "test_slug.py": "from slug import slugify\n"})
    tid = gate.task([{"text": "dashes", "kind": "test", "verify_ref": "test_dash.test_dashes"}])
    dash = 'from slug import slugify\n\n\ndef test_dashes():\n    assert slugify("a b") == "a-b"\n'
    line = _verify(gate, tid, {"slug.py": base.replace('"_"', '"-"'), "test_dash.py": dash})
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    assert "without_change_s" in line["timings"] and "stubbed_run_s" not in line["timings"]
    [run] = gate.detail(tid)["runs"]
    assert _evidence(gate, tid)["without_change"]["result"] == "fail"
    assert _evidence(gate, tid)["stubbed"] is None
    assert run["sensitivity"] == {
        "functions": [],
        "note": "the change touches no function (a constant, a data file): the check did not apply",
    }


NODE_CHECK = {
    "command": "mkdir -p reports && node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml",
    "report": {"path": "reports/junit.xml", "format": "junit"},
}
NODE_BROKEN = "exports.slugify = (t) => t.toLowerCase().replace(/[^a-z]+/g, '-');\n"
NODE_FIX = NODE_BROKEN.replace("[^a-z]", "[^a-z0-9]")
NODE_TESTS = """\
const { describe, test } = require('node:test');
const assert = require('node:assert');
const { slugify } = require('./slug.js');

describe('slugify', () => {
  test('lowercases', () => assert.strictEqual(slugify('AB'), 'ab'));
});
"""
NODE_DIGITS = {"text": "digits", "kind": "test", "verify_ref": "digits > keeps digits"}


def _node_gate(live: Live, tmp_path: Path) -> Gate:
    files = {"slug.js": NODE_BROKEN, "slug.test.js": NODE_TESTS}
    return _gate(live, tmp_path, files, {"check_timeout_minutes": 2, "checks": {"unit": NODE_CHECK}})


def _node_test(body: str, names: str = "slugify") -> str:
    return (
        "const { describe, test } = require('node:test');\nconst assert = require('node:assert');\n"
        f"const {{ {names} }} = require('./slug.js');\n\n"
        f"describe('digits', () => {{\n  test('keeps digits', () => {body});\n}});\n"
    )


def test_javascript_a_new_test_that_only_fails_on_an_import_is_held(live: Live, tmp_path: Path) -> None:
    gate = _node_gate(live, tmp_path)
    tid = gate.task([NODE_DIGITS])
    helper = NODE_BROKEN + "exports.keepsDigits = (t) => exports.slugify(t);\n"
    # `keepsDigits` is undefined on the baseline's code: the assertion on it throws there.
    body = "{ assert.ok(keepsDigits); assert.strictEqual(slugify('AB'), 'ab'); }"
    line = _verify(gate, tid, {"slug.js": helper, "digits.test.js": _node_test(body, "slugify, keepsDigits")})
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert (task["needs_human"]["why"], task["needs_human"]["reason"]) == ("passes_without_change", REASON)
    assert _evidence(gate, tid)["stubbed"]["result"] == "pass"


def test_javascript_the_fix_with_its_test_verifies(live: Live, tmp_path: Path) -> None:
    gate = _node_gate(live, tmp_path)
    tid = gate.task([NODE_DIGITS])
    body = "assert.strictEqual(slugify('Route 66'), 'route-66')"
    line = _verify(gate, tid, {"slug.js": NODE_FIX, "digits.test.js": _node_test(body)})
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    assert _evidence(gate, tid)["stubbed"]["result"] == "fail"
