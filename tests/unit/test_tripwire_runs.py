"""Tripwires and stubs in real runs: a small pytest project and a `node --test` project, run
as subprocesses, their JUnit reports read by the verifier's own reader.

(a) Honest code fails every twin and every canary, and the named tests' evidence (the report
without the tripwires) is what it was. (b) A value whose equality lies (Python) or an assertion
library bent from the code under test (node) passes the named tests and every twin, while the
canary still fails. (c) With the functions an honest change touched stubbed out, the named test
of that change fails and a test of untouched code still passes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from taskgate.domain.outcome import Evidence
from taskgate.domain.reports import Report, TestOutcome
from taskgate.domain.stubs import stub_changed
from taskgate.domain.testdefs import defined_tests, defines_ref
from taskgate.domain.testrefs import match
from taskgate.domain.tripwires import Tripwire, canary, tripwire_cases, twin, without_tripwires
from taskgate.domain.verifier_config import ReportSpec
from taskgate.verifier.reading import read_report

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")


def _env() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
    }


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def place(root: Path, tripwires: list[Tripwire]) -> None:
    for made in tripwires:
        target = root / made.path
        assert not target.exists(), f"{made.path} would overwrite a file of the project"
        target.write_text(made.text)


def read(root: Path) -> Report:
    return read_report(root, ReportSpec(path="report.xml")).report


def run_pytest(root: Path, *args: str) -> Report:
    (root / "report.xml").unlink(missing_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--junitxml=report.xml",
            *args,
            "tests",
        ],
        cwd=root,
        env=_env(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    return read(root)


def run_node(root: Path) -> Report:
    (root / "report.xml").unlink(missing_ok=True)
    assert NODE is not None
    subprocess.run(
        [NODE, "--test", "--test-reporter=junit", "--test-reporter-destination=report.xml"],
        cwd=root,
        env=_env(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    return read(root)


def outcomes(report: Report, made: Tripwire) -> list[TestOutcome]:
    return [case.outcome for case in tripwire_cases(report, made.token)]


def git(root: Path, *args: str) -> str:
    env = {
        **_env(),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def changed_lines(root: Path, path: str) -> frozenset[int]:
    """The new side's line numbers that `git diff` adds or changes in `path`."""
    lines: set[int] = set()
    for start, count in re.findall(
        r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", git(root, "diff", "-U0", "--", path), re.M
    ):
        first, n = int(start), int(count or "1")
        lines.update(range(first, first + n))
    return frozenset(lines)


# -- pytest -----------------------------------------------------------------------------------

PY_HONEST = """\
def add(a, b):
    return a + b


def slug(text):
    return "-".join(text.lower().split())


def mean(xs):
    return sum(xs) / len(xs)


def pair(a):
    return (a, a * 2)
"""

PY_LIAR = """\
class _Same:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return True

    __hash__ = object.__hash__


def add(a, b):
    return _Same()


def slug(text):
    return _Same()


def mean(xs):
    return _Same()


def pair(a):
    return _Same()
"""

PY_TESTS = """\
import unittest

import pytest

from calc import add, mean, pair, slug

EXPECTED_SLUG = "hello-world"


@pytest.fixture
def three():
    return 3


def test_add(three):
    assert add(2, three) == 5
    assert add(2, 2) != 5


def test_slug():
    assert slug("Hello World") == EXPECTED_SLUG


def test_mean():
    assert mean([1, 2]) == pytest.approx(1.5)


class TestPair:
    def test_pair(self):
        assert pair(2) == (2, 4)

    def test_pair_zero(self):
        assert pair(0) == (0, 0)


class TestCalcCase(unittest.TestCase):
    def test_add_case(self):
        self.assertEqual(add(1, 1), 2)
        self.assertNotEqual(add(1, 1), 3)


@pytest.mark.parametrize("a,b,c", [(1, 2, 3), pytest.param(2, 2, 4, marks=pytest.mark.xfail)])
def test_rows(a, b, c):
    assert add(a, b) == c
"""

PY_REFS = [
    "test_add",
    "test_slug",
    "test_mean",
    "TestPair.test_pair",
    "TestPair.test_pair_zero",
    "TestCalcCase.test_add_case",
    "test_rows[1-2-3]",
]


def python_project(root: Path) -> list[Tripwire]:
    write(
        root,
        {
            "pytest.ini": "[pytest]\n",
            "calc.py": PY_HONEST,
            "tests/__init__.py": "",
            "tests/test_calc.py": PY_TESTS,
        },
    )
    path = "tests/test_calc.py"
    defs = defined_tests(path, PY_TESTS)
    made: list[Tripwire] = []
    for i, ref in enumerate(PY_REFS):
        (named,) = [d for d in defines_ref(defs, ref) if d.kind == "test"]
        one = twin(path, PY_TESTS, named, f"tw{i}pyx7q")
        assert one is not None, ref
        made.append(one)
    made.append(canary(path, "cn0pyz4k"))
    place(root, made)
    return made


def test_honest_python_fails_every_twin_and_the_canary(tmp_path: Path) -> None:
    made = python_project(tmp_path)
    report = run_pytest(tmp_path)
    for one in made:
        seen = outcomes(report, one)
        assert seen, f"{one.name} is not in the report"
        assert set(seen) == {TestOutcome.FAILED}, (one.name, seen)
        # the name is how the report shows it (a parametrized twin: one case per row)
        ref = one.name + ("[1-2-3]" if "test_rows" in one.name else "")
        assert match(report, ref).evidence is Evidence.FAIL, ref
    # a twin's file reports its twin and nothing else
    for case in report.all_tests():
        for one in made:
            if one.token in case.classname:
                assert one.token in case.name, f"{case.classname}.{case.name} came with {one.path}"
    evidence = without_tripwires(report, [one.token for one in made])
    for ref in PY_REFS:
        assert match(evidence, ref).evidence is Evidence.PASS, ref


def test_a_lying_value_passes_the_python_twins_but_not_the_canary(tmp_path: Path) -> None:
    made = python_project(tmp_path)
    (tmp_path / "calc.py").write_text(PY_LIAR)
    report = run_pytest(tmp_path)
    evidence = without_tripwires(report, [one.token for one in made])
    for ref in PY_REFS:
        assert match(evidence, ref).evidence is Evidence.PASS, ref
    for one in made:
        expected = {TestOutcome.FAILED} if one.kind == "canary" else {TestOutcome.PASSED}
        assert set(outcomes(report, one)) == expected, (one.name, outcomes(report, one))


def test_a_python_change_stubbed_out_fails_the_test_of_that_change(tmp_path: Path) -> None:
    write(tmp_path, {"pytest.ini": "[pytest]\n", "calc.py": PY_HONEST, "tests/test_calc.py": PY_TESTS})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "baseline")
    changed = PY_HONEST.replace(
        'return "-".join(text.lower().split())',
        'words = "".join(c if c.isalnum() else " " for c in text.lower()).split()\n    return "-".join(words)',
    )
    (tmp_path / "calc.py").write_text(changed)
    (tmp_path / "tests/test_calc.py").write_text(
        PY_TESTS + '\n\ndef test_slug_punctuation():\n    assert slug("Hi, there!") == "hi-there"\n'
    )
    before = run_pytest(tmp_path, "-k", "test_slug_punctuation or test_add")
    assert match(before, "test_slug_punctuation").evidence is Evidence.PASS

    stubbed = stub_changed("calc.py", changed, changed_lines(tmp_path, "calc.py"))
    assert stubbed is not None and stubbed.functions == ("slug",)
    (tmp_path / "calc.py").write_text(stubbed.text)
    report = run_pytest(tmp_path, "-k", "test_slug_punctuation or test_add")
    assert match(report, "test_slug_punctuation").evidence is Evidence.FAIL
    assert "stubbed out" in match(report, "test_slug_punctuation").failures[0].message
    assert match(report, "test_add").evidence is Evidence.PASS  # it does not exercise the change


# -- node --test ------------------------------------------------------------------------------

JS_HONEST = """\
function slugify(s) {
  return s.toLowerCase().split(' ').join('-');
}

const count = (s) => s.length;

module.exports = { slugify, count, pair: (a) => [a, a * 2] };
"""

# The grader bent from the code under test: node's assertions made to pass whatever they see.
JS_BENT = """\
const bent = require('node:assert');
for (const name of ['equal', 'strictEqual', 'deepEqual', 'deepStrictEqual', 'ok']) {
  bent[name] = () => {};
  bent.strict[name] = () => {};
}
module.exports = { slugify: () => 'wrong', count: () => -1, pair: () => null };
"""

JS_TESTS = """\
const test = require('node:test');
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const loose = require('node:assert');
const { slugify, count, pair } = require('../slug.js');

const EXPECTED = 'a-b';

test('slugify joins words', () => {
  assert.equal(slugify('A B'), EXPECTED);
  assert.notEqual(slugify('A B'), 'A B');
});

describe('count', () => {
  describe('strings', () => {
    it('counts characters', () => {
      assert.strictEqual(count('abc'), 3);
      loose.ok(count('ab') === 2);
    });
    it('counts nothing', () => {
      assert.equal(count(''), 0);
    });
  });
});

test('pair', async (t) => {
  await t.test('doubles', () => {
    assert.deepStrictEqual(pair(2), [2, 4]);
  });
});
"""

JS_REFS = ["slugify joins words", "count > strings > counts characters", "counts nothing", "pair > doubles"]


def node_project(root: Path) -> list[Tripwire]:
    write(
        root,
        {
            "package.json": '{"name": "p", "version": "1.0.0"}\n',
            "slug.js": JS_HONEST,
            "test/slug.test.js": JS_TESTS,
        },
    )
    path = "test/slug.test.js"
    defs = defined_tests(path, JS_TESTS)
    made: list[Tripwire] = []
    for i, ref in enumerate(JS_REFS):
        (named,) = [d for d in defines_ref(defs, ref) if d.kind == "test"]
        one = twin(path, JS_TESTS, named, f"tw{i}jsq8r")
        assert one is not None, ref
        made.append(one)
    made.append(canary(path, "cn0jsv3m", JS_TESTS))
    place(root, made)
    return made


@needs_node
def test_honest_javascript_fails_every_twin_and_the_canary(tmp_path: Path) -> None:
    made = node_project(tmp_path)
    report = run_node(tmp_path)
    for one in made:
        seen = outcomes(report, one)
        assert seen, f"{one.name} is not in the report"
        assert set(seen) == {TestOutcome.FAILED}, (one.name, seen)
        assert match(report, one.name).evidence is Evidence.FAIL, one.name
    evidence = without_tripwires(report, [one.token for one in made])
    for ref in JS_REFS:
        assert match(evidence, ref).evidence is Evidence.PASS, ref
    # node names no file: nothing but the tripwires may carry their tokens
    assert len(list(evidence.all_tests())) == 4


@needs_node
def test_a_bent_assertion_library_passes_the_javascript_twins_but_not_the_canary(tmp_path: Path) -> None:
    made = node_project(tmp_path)
    (tmp_path / "slug.js").write_text(JS_BENT)
    report = run_node(tmp_path)
    evidence = without_tripwires(report, [one.token for one in made])
    for ref in JS_REFS:
        assert match(evidence, ref).evidence is Evidence.PASS, ref
    for one in made:
        expected = {TestOutcome.FAILED} if one.kind == "canary" else {TestOutcome.PASSED}
        assert set(outcomes(report, one)) == expected, (one.name, outcomes(report, one))


@needs_node
def test_a_javascript_change_stubbed_out_fails_the_test_of_that_change(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "package.json": '{"name": "p", "version": "1.0.0"}\n',
            "slug.js": JS_HONEST,
            "test/slug.test.js": JS_TESTS,
        },
    )
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "baseline")
    changed = JS_HONEST.replace("split(' ')", "split(/[^a-z0-9]+/).filter(Boolean)")
    (tmp_path / "slug.js").write_text(changed)
    new_test = "\ntest('slugify drops punctuation', () => {\n  assert.equal(slugify('Hi, there!'), 'hi-there');\n});\n"
    (tmp_path / "test/slug.test.js").write_text(JS_TESTS + new_test)
    before = run_node(tmp_path)
    assert match(before, "slugify drops punctuation").evidence is Evidence.PASS

    stubbed = stub_changed("slug.js", changed, changed_lines(tmp_path, "slug.js"))
    assert stubbed is not None and stubbed.functions == ("slugify",)
    (tmp_path / "slug.js").write_text(stubbed.text)
    report = run_node(tmp_path)
    result = match(report, "slugify drops punctuation")
    assert result.evidence is Evidence.FAIL
    assert "stubbed out" in result.failures[0].message
    assert match(report, "count > strings > counts characters").evidence is Evidence.PASS
