"""Tripwires: twins with perturbed expected values and canaries, each of which must fail.

The Python twins are run here in-process, form by form: an honest value must fail each, a value
whose equality lies must pass it. tests/unit/test_tripwire_runs.py runs them under pytest and
node --test for real."""

from __future__ import annotations

import ast
import json
import textwrap
import unittest
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskgate.domain.reports import Group, Report, TestCase, TestOutcome
from taskgate.domain.testdefs import TestDef, defined_tests, js_tree
from taskgate.domain.tripwires import (
    Tripwire,
    canary,
    sibling_path,
    tripwire_cases,
    twin,
    without_tripwires,
)

TOKEN = "k3v9q2xw"


class Liar:
    """A value that says it equals (and differs from) anything."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


def only(path: str, text: str, name: str) -> TestDef:
    (found,) = [d for d in defined_tests(path, text) if d.name == name and d.kind == "test"]
    return found


def make(text: str, name: str = "test_it", path: str = "tests/test_x.py") -> Tripwire:
    text = textwrap.dedent(text)
    made = twin(path, text, only(path, text, name), TOKEN)
    assert made is not None
    return made


def run(made: Tripwire, value: Any, call: Callable[[dict[str, Any]], Any] | None = None) -> None:
    """Execute the twin's module with `value()` as the code under test, and call its test."""
    namespace: dict[str, Any] = {"__name__": "__main__", "value": lambda *_: value}
    exec(compile(made.text, made.path, "exec"), namespace)
    if call is not None:
        call(namespace)
    else:
        namespace[made.name.rsplit(".", 1)[-1]]()


def fails_honest_passes_liar(
    made: Tripwire, honest: Any, call: Callable[[dict[str, Any]], Any] | None = None
) -> None:
    with pytest.raises(AssertionError):
        run(made, honest, call)
    run(made, Liar(), call)


@pytest.mark.parametrize(
    ("assertion", "honest"),
    [
        ("assert value() == 3", 3),
        ("assert 3 == value()", 3),
        ("assert value() == -3", -3),
        ("assert value() == 2.5", 2.5),
        ("assert value() == 1e999", float("inf")),
        ("assert value() == 'slug'", "slug"),
        ("assert value() == b'raw'", b"raw"),
        ("assert value() == True", True),
        ("assert value() == False", False),
        ("assert value() == None", None),
        ("assert value() == [1, 2]", [1, 2]),
        ("assert value() == []", []),
        ("assert value() == (1,)", (1,)),
        ("assert value() == {1, 2}", {1, 2}),
        ("assert value() == {'a': 1}", {"a": 1}),
        ("assert value() == {}", {}),
        ("assert value() == 1 + 2j", 1 + 2j),
        ("assert (value()) == (\n    3  # three\n)", 3),
        ("assert value() == 3, 'message'", 3),
        ("assert value() == 3 and value() == 3", 3),
        ("assert value() != 4", 3),
        ("assert (value()) != (4)", 3),
        ("assert value() != 4  # != in a comment\n", 3),
    ],
)
def test_each_literal_form_fails_honest_code_and_passes_a_liar(assertion: str, honest: Any) -> None:
    made = make(f"def test_it():\n    {assertion}\n")
    assert made.perturbed >= 1
    fails_honest_passes_liar(made, honest)


@pytest.mark.parametrize(
    ("setup", "assertion", "honest"),
    [
        ("expected = 3", "assert value() == expected", 3),
        ("expected = 3", "assert expected == value()", 3),
        ("other = 'x'", "assert value() == other", "x"),
        ("other = [1]", "assert value() == other", [1]),
        ("other = {'k': 2.0}", "assert value() == other", {"k": 2.0}),
        ("other = frozenset({1})", "assert value() == other", frozenset({1})),
        ("other = None", "assert value() == other", None),
        ("import datetime; other = datetime.date(2020, 1, 1)", "assert value() == other", None),
        ("import decimal; other = decimal.Decimal('1.5')", "assert value() == other", None),
        ("import fractions; other = fractions.Fraction(1, 3)", "assert value() == other", None),
        ("import datetime; other = datetime.timedelta(1)", "assert value() == other", None),
        ("import datetime; other = datetime.time(5)", "assert value() == other", None),
        (
            "import enum\nclass E(enum.Enum):\n    A = 1\n    B = 2\nother = E.A",
            "assert value() == other",
            None,
        ),
        (
            "import dataclasses\n@dataclasses.dataclass\nclass P:\n    x: int\nother = P(1)",
            "assert value() == other",
            None,
        ),
        ("other = object()", "assert value() == other", None),
        ("other = 3", "assert value() == pytest.approx(other)", 3.0),
        ("other = 3", "assert value() == pytest.approx(0.1 + 0.2, rel=0.5)", 0.3),
        ("other = [0.1, 0.2]", "assert value() == pytest.approx(other)", [0.1, 0.2]),
    ],
)
def test_each_computed_expected_value_is_perturbed_at_run_time(
    setup: str, assertion: str, honest: Any
) -> None:
    source = f"import pytest\n{setup}\n\n\ndef test_it():\n    {assertion}\n"
    made = make(source)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(setup, namespace)
    expected = honest if honest is not None else namespace["other"]
    fails_honest_passes_liar(made, expected)


def test_approx_moves_far_beyond_its_tolerance() -> None:
    made = make("import pytest\n\n\ndef test_it():\n    assert value() == pytest.approx(0.3, rel=0.5)\n")
    with pytest.raises(AssertionError):
        run(made, 0.3)
    assert "pytest.approx((" in made.text  # the literal itself moved


@pytest.mark.parametrize(
    ("call", "honest"),
    [
        ("self.assertEqual(value(), 3)", 3),
        ("self.assertEqual(3, value())", 3),
        ("self.assertEqual(first=value(), second='s')", "s"),
        ("self.assertListEqual(value(), [1])", [1]),
        ("self.assertDictEqual(value(), {'a': 1})", {"a": 1}),
        ("self.assertTupleEqual(value(), (1, 2))", (1, 2)),
        ("self.assertSetEqual(value(), {1})", {1}),
        ("self.assertSequenceEqual(value(), [1, 2])", [1, 2]),
        ("self.assertMultiLineEqual(value(), 'a\\nb')", "a\nb"),
        ("self.assertCountEqual(value(), [2, 1])", [1, 2]),
        ("self.assertAlmostEqual(value(), 0.3)", 0.3),
        ("self.assertAlmostEqual(value(), 0.3, delta=0.5)", 0.3),
        ("self.assertNotEqual(value(), 4)", 3),
        ("self.assertNotAlmostEqual(value(), 4.0)", 3.0),
    ],
)
def test_each_unittest_form_fails_honest_code(call: str, honest: Any) -> None:
    source = f"import unittest\n\n\nclass TestX(unittest.TestCase):\n    def test_it(self):\n        {call}\n"
    made = make(source)

    def call_method(namespace: dict[str, Any]) -> None:
        cls = namespace[f"TestX_{TOKEN}"]
        method = f"test_it_{TOKEN}"
        getattr(cls(method), method)()

    with pytest.raises(AssertionError):
        run(made, honest, call_method)
    if "assertEqual(" in call or "assertNotEqual(" in call:
        # the typed ones (assertListEqual...) check the type first: no liar passes them
        run(made, Liar(), call_method)


def test_inequality_becomes_the_equality_honest_code_fails() -> None:
    made = make("def test_it():\n    assert value() != 4\n")
    assert "value() == 4" in made.text
    made = make(
        "import unittest\n\n\nclass TestX(unittest.TestCase):\n    def test_it(self):\n        self.assertNotEqual(value(), 4)\n"
    )
    assert "self.assertEqual(value(), 4)" in made.text


def test_the_guard_fails_a_twin_whose_perturbed_assertion_never_holds() -> None:
    """Honest code fails its twin even where the perturbed assertion is swallowed or never
    runs; a liar still passes it."""
    source = """
    import pytest


    def test_it():
        if value() == "never":
            assert value() == 1
        with pytest.raises(AssertionError):
            assert value() == 3
        try:
            assert value() == 3
        except AssertionError:
            pass
    """
    made = make(source)
    with pytest.raises(AssertionError, match="no perturbed assertion held"):
        run(made, 3)


def test_the_guard_turns_a_skip_inside_the_test_into_a_failure() -> None:
    made = make("import pytest\n\n\ndef test_it():\n    assert value() == 3\n    pytest.skip('later')\n")
    with pytest.raises(AssertionError, match="skipped"):
        run(made, Liar())
    made = make(
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_it(self):\n        self.skipTest('no')\n        self.assertEqual(value(), 1)\n"
    )

    def call_method(namespace: dict[str, Any]) -> None:
        getattr(namespace[f"T_{TOKEN}"](f"test_it_{TOKEN}"), f"test_it_{TOKEN}")()

    with pytest.raises(AssertionError, match="skipped"):
        run(made, Liar(), call_method)


def test_async_tests_get_an_async_guard() -> None:
    import asyncio

    made = make("async def test_it():\n    assert value() == 3\n")
    namespace: dict[str, Any] = {"__name__": "m", "value": lambda: 3}
    exec(made.text, namespace)
    with pytest.raises(AssertionError):
        asyncio.run(namespace[f"test_it_{TOKEN}"]())
    namespace["value"] = Liar
    asyncio.run(namespace[f"test_it_{TOKEN}"]())


def test_a_test_with_no_perturbable_assertion_has_no_twin() -> None:
    source = "def test_it():\n    assert value()\n    assert value() is None\n    assert 3 in value()\n    assert value() < 2\n"
    assert twin("tests/test_x.py", source, only("tests/test_x.py", source, "test_it"), TOKEN) is None
    js = "test('t', () => { assert.ok(value()); expect(value()).toBeTruthy(); });\n"
    assert twin("a.test.js", js, only("a.test.js", js, "t"), TOKEN) is None
    todo = "test.todo('later');\ntest('named', namedFunction);\n"
    assert twin("a.test.js", todo, only("a.test.js", todo, "later"), TOKEN) is None
    assert twin("a.test.js", todo, only("a.test.js", todo, "named"), TOKEN) is None


def test_bad_input_is_refused() -> None:
    source = "class TestG:\n    def test_it(self):\n        assert 1 == 1\n"
    group = next(d for d in defined_tests("tests/test_x.py", source) if d.kind == "group")
    with pytest.raises(ValueError, match="group"):
        twin("tests/test_x.py", source, group, TOKEN)
    ghost = TestDef("tests/test_x.py", "test_ghost", (), "test", 1, 1)
    with pytest.raises(ValueError, match="does not define"):
        twin("tests/test_x.py", source, ghost, TOKEN)
    with pytest.raises(ValueError, match="does not parse"):
        twin("tests/test_x.py", "def test_it(:\n", ghost, TOKEN)
    for token in ("short", "has space1", "dash-token", "x" * 41, ""):
        with pytest.raises(ValueError, match="token"):
            sibling_path("tests/test_x.py", token)
    with pytest.raises(ValueError, match="neither Python"):
        canary("tests/test_x.rb", TOKEN)


PY_FILE = '''\
# -*- coding: latin-1 -*-
"""Doc."""
from __future__ import annotations

import pytest

from calc import add


@pytest.fixture
def two():
    return 2


def helper():
    return test_referenced


def test_referenced():
    assert add(1, 1) == 2


def test_other():
    assert add(1, 2) == 3


class TestBase:
    def test_in_base(self):
        assert add(0, 0) == 0


class TestCalc(TestBase):
    @pytest.mark.xfail(reason="flaky")
    def test_named(self, two):
        assert add(two, 1) == 3
        assert TestCalc.__name__

    def test_sibling(self):
        assert add(5, 5) == 10

    class TestNested:
        def test_deep(self):
            assert 1 == 1


class TestUnrelated:
    def test_u(self):
        assert add(2, 2) == 4


@pytest.mark.parametrize("a,b", [(1, 2), pytest.param(2, 5, marks=pytest.mark.xfail)])
def test_rows(a, b):
    assert add(a, 1) == b
'''


def test_a_python_twin_keeps_only_the_named_test_under_new_names() -> None:
    made = twin("tests/test_calc.py", PY_FILE, only("tests/test_calc.py", PY_FILE, "test_named"), TOKEN)
    assert made is not None
    assert made.path == f"tests/test_calc_{TOKEN}.py"
    assert made.name == f"tests.test_calc_{TOKEN}.TestCalc_{TOKEN}.test_named_{TOKEN}"
    assert made.of == "TestCalc > test_named"
    assert made.kind == "twin" and made.token == TOKEN and made.perturbed == 1
    tree = ast.parse(made.text)
    top = {getattr(n, "name", None) for n in tree.body}
    # helpers, fixtures, imports stay; unrelated tests go; a base the class names stays
    assert {"two", "helper", "TestBase", f"TestCalc_{TOKEN}", "test_referenced"} <= top
    assert {"test_other", "TestUnrelated", "test_rows", "TestCalc"}.isdisjoint(top)
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == f"TestCalc_{TOKEN}"]
    methods = [n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    assert methods == [f"test_named_{TOKEN}"]
    assert f"TestCalc_{TOKEN}.__name__" in made.text  # references follow the rename
    assert "xfail" not in made.text.split(f"class TestCalc_{TOKEN}")[1]
    assert "test_referenced.__test__ = False" in made.text
    assert "test_in_base.__test__ = False" in made.text
    assert made.text.splitlines()[0] == "# -*- coding: utf-8 -*-"
    assert made.text.index("from __future__") < made.text.index(f"_t{TOKEN}_hits")


def test_parameter_rows_lose_their_marks() -> None:
    made = twin("tests/test_calc.py", PY_FILE, only("tests/test_calc.py", PY_FILE, "test_rows"), TOKEN)
    assert made is not None
    assert "marks=()" in made.text and "mark.xfail" not in made.text
    assert made.name == f"tests.test_calc_{TOKEN}.test_rows_{TOKEN}"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_calc.py", "tests/test_calc_T0K3N9.py"),
        ("tests/calc_test.py", "tests/calc_T0K3N9_test.py"),
        ("check_calc.py", "check_calc_T0K3N9.py"),
        ("pkg/test.py", "pkg/test_T0K3N9.py"),
        ("test/slug.test.js", "test/slug_T0K3N9.test.js"),
        ("src/slug.spec.ts", "src/slug_T0K3N9.spec.ts"),
        ("src/a.b.test.mjs", "src/a_T0K3N9.b.test.mjs"),
        ("test/slug.js", "test/slug_T0K3N9.js"),
        ("test/slug.cjs", "test/slug_T0K3N9.cjs"),
        ("src/slug_test.js", "src/slug_T0K3N9_test.js"),
        ("src/slug-test.mjs", "src/slug-T0K3N9-test.mjs"),
        ("src/test-slug.js", "src/test-slug_T0K3N9.js"),
        ("src/test.js", "src/T0K3N9.test.js"),
        ("__tests__/slug.tsx", "__tests__/slug_T0K3N9.tsx"),
        ("slug.check.js", "slug_T0K3N9.check.js"),
    ],
)
def test_sibling_paths_keep_the_runners_naming_pattern(path: str, expected: str) -> None:
    from taskgate.domain.testdefs import is_test_path

    assert sibling_path(path, "T0K3N9") == expected
    if is_test_path(path):
        assert is_test_path(expected)


def test_a_python_canary_is_a_failing_testcase_both_runners_collect() -> None:
    made = canary("tests/test_calc.py", TOKEN)
    assert made.path == f"tests/test_calc_{TOKEN}.py"
    assert made.name == f"tests.test_calc_{TOKEN}.Test{TOKEN.capitalize()}.test_{TOKEN}"
    assert made.kind == "canary" and made.of is None and made.perturbed == 0
    namespace: dict[str, Any] = {"__name__": "canary"}
    exec(made.text, namespace)
    cls = namespace[f"Test{TOKEN.capitalize()}"]
    result = unittest.TestResult()
    cls(f"test_{TOKEN}").run(result)
    assert len(result.failures) == 1


@pytest.mark.parametrize(
    ("source", "imports", "call"),
    [
        (
            "const test = require('node:test');\ntest('a', () => {});\n",
            ["const test = require('node:test');"],
            "test",
        ),
        (
            "import { it as spec } from 'vitest';\nspec('a', () => {});\n",
            ["import { it as spec } from 'vitest';"],
            "spec",
        ),
        (
            "import * as nt from 'node:test';\nnt.test('a', () => {});\n",
            ["import * as nt from 'node:test';"],
            "nt.test",
        ),
        (
            "const { describe, it } = require('node:test');\n",
            ["const { describe, it } = require('node:test');"],
            "it",
        ),
        ("describe('g', () => { it('a', () => {}); });\n", [], "it"),
        ("test('a', () => {});\n", [], "test"),
    ],
)
def test_a_javascript_canary_defines_its_test_as_the_named_file_does(
    source: str, imports: list[str], call: str
) -> None:
    made = canary("test/a.test.js", TOKEN, source)
    assert made.text.splitlines()[: len(imports)] == imports
    assert f"{call}({json.dumps(TOKEN)}, () => {{" in made.text
    assert "throw new Error" in made.text
    assert not js_tree(made.path, made.text.encode()).root_node.has_error
    assert made.name == TOKEN


def test_a_javascript_canary_without_the_file_uses_node_test() -> None:
    assert canary("test/a.mjs", TOKEN).text.startswith('import { test } from "node:test";')
    assert canary("test/a.js", TOKEN).text.startswith('const { test } = require("node:test");')


JS_FILE = """\
const test = require('node:test');
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { strict: other } = require('node:assert');
const { slugify } = require('../slug.js');

test('top', () => { assert.equal(slugify('A'), 'a'); });

describe('slugify', () => {
  describe(`inner`, () => {
    it('keeps digits', async () => {
      assert.strictEqual(slugify('A1'), 'a1');
      assert.deepStrictEqual(slugify('x').split(''), ['x']);
      other.equal(slugify('B'), 0x10);
      assert.notStrictEqual(slugify('A'), 'A');
      assert.ok(slugify('C') === -3);
      assert(slugify('D') != 'D');
      expect(slugify('E')).not.toBe('E');
      await expect(Promise.resolve(slugify('F'))).resolves.toEqual(`f`);
      expect(slugify('G')).to.deep.equal(null);
      assert.equal(slugify('H'), 12n);
      assert.equal(slugify('I'), undefined);
      assert.equal(slugify('J'), true);
    });
    it('sibling', () => { assert.equal(1, 1); });
  });
  it.failing('expected to fail', () => { assert.equal(slugify('A'), 'A'); });
  describe('other group', () => { it('x', () => {}); });
});

for (const c of [1, 2]) test(`case ${c}`, () => {});
const handle = test('assigned', () => {});
"""


def test_a_javascript_twin_keeps_only_the_named_test_under_new_names() -> None:
    made = twin("test/slug.test.js", JS_FILE, only("test/slug.test.js", JS_FILE, "keeps digits"), TOKEN)
    assert made is not None
    assert made.path == f"test/slug_{TOKEN}.test.js"
    assert made.name == f"slugify {TOKEN} > inner {TOKEN} > keeps digits {TOKEN}"
    assert made.perturbed == 12
    text = made.text
    assert not js_tree(made.path, text.encode()).root_node.has_error
    left = [d for d in defined_tests(made.path, text) if d.kind == "test"]
    assert [(d.groups, d.name) for d in left] == [
        ((f"slugify {TOKEN}", f"inner {TOKEN}"), f"keeps digits {TOKEN}")
    ]
    for gone in ("'top'", "'sibling'", "expected to fail", "other group", "case ${c}", "'assigned'"):
        assert gone not in text
    assert "const handle = void 0;" in text
    assert f'it("keeps digits {TOKEN}", __t{TOKEN}G(async () => {{' in text
    # each form: the expected side perturbed, inequalities flipped, each assertion counted
    assert "assert.notStrictEqual" not in text and "assert.strictEqual(slugify('A'), 'A')" in text
    assert "assert(slugify('D') == 'D')" in text
    assert "expect(slugify('E')).toBe('E')" in text
    for literal in ("0x10", "'a1'", "`f`", "12n", "undefined", "true", "-3"):
        assert literal not in text.split("// Written by the verifier")[0]
    assert "to.deep.equal(null)" not in text
    assert text.count(f"__t{TOKEN}OK(") == 12 + 1  # and the helper's definition
    assert f"__t{TOKEN}P(['x'])" in text


def test_jest_failing_and_vitest_fails_are_removed() -> None:
    made = twin("test/slug.test.js", JS_FILE, only("test/slug.test.js", JS_FILE, "expected to fail"), TOKEN)
    assert made is not None
    assert f'it("expected to fail {TOKEN}"' in made.text
    source = "import { it, expect } from 'vitest';\nit.fails('f', () => { expect(1).toBe(2); });\n"
    made = twin("a.test.ts", source, only("a.test.ts", source, "f"), TOKEN)
    assert made is not None and f'it("f {TOKEN}"' in made.text
    assert ": any" in made.text  # typed helpers in TypeScript


def test_a_subtest_twin_renames_its_parent_test() -> None:
    source = (
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "test('parent', async (t) => {\n  await t.test('one', () => { assert.equal(1, 1); });\n"
        "  await t.test('two', () => { assert.equal(2, 2); });\n});\n"
    )
    made = twin("test/a.test.js", source, only("test/a.test.js", source, "two"), TOKEN)
    assert made is not None
    assert made.name == f"parent {TOKEN} > two {TOKEN}"
    assert "'one'" not in made.text


# -- reading reports --------------------------------------------------------------------------

P, F, S = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.SKIPPED


def test_tripwire_cases_and_the_evidence_without_them() -> None:
    report = Report(
        groups=(
            Group(
                "pytest",
                tests=(
                    TestCase("test_a", "tests.test_x"),
                    TestCase(f"test_a_{TOKEN}", f"tests.test_x_{TOKEN}", F),
                    TestCase("test_inherited", f"tests.test_x_{TOKEN}.TestC_{TOKEN}", P),
                ),
            ),
            Group(f"parent {TOKEN}", tests=(TestCase("sub", "test", F),)),
            Group(
                "slugify", groups=(Group(f"inner {TOKEN}", tests=(TestCase(f"leaf {TOKEN}", "test", S),)),)
            ),
        ),
        tests=(
            TestCase(f"outer {TOKEN} > leaf {TOKEN}", f"test/a_{TOKEN}.test.js", F),
            TestCase("kept", "test"),
        ),
    )
    found = tripwire_cases(report, TOKEN)
    assert [t.name for t in found] == [
        f"outer {TOKEN} > leaf {TOKEN}",
        f"test_a_{TOKEN}",
        "sub",
        f"leaf {TOKEN}",
    ]
    assert tripwire_cases(report, "zzzzzzzz") == []
    clean = without_tripwires(report, [TOKEN])
    assert sorted(t.name for t in clean.all_tests()) == ["kept", "test_a"]
    assert [g.name for g in clean.groups] == ["pytest", "slugify"]
    assert without_tripwires(report, []) is report


# -- properties -------------------------------------------------------------------------------

_literals = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _py_assertion(draw: st.DrawFn) -> str:
    value = repr(draw(_literals))
    if "inf" in value or "nan" in value:
        value = "1e999"
    side = draw(st.sampled_from(["value()", "helper(1)", "EXPECTED", "obj.attr[0]"]))
    form = draw(st.integers(0, 9))
    return [
        f"assert {side} == {value}",
        f"assert {value} == {side}",
        f"assert ({side}) != (\n        {value}  # != here\n    )",
        f"assert {side} == {value} and {side} == {side}",
        f"self.assertEqual({side}, {value})",
        f"self.assertNotEqual({side}, {value}, 'msg')",
        f"assert {side} == pytest.approx({draw(st.integers(-5, 5))})",
        f"x = [{side} == {value} for _ in ()]\n    assert {side} == x",
        f"def inner():\n        assert {side} == {value}\n    inner()",
        f"with pytest.raises(AssertionError):\n        assert {side} == \\\n            {value}",
    ][form]


@st.composite
def python_modules(draw: st.DrawFn) -> tuple[str, str]:
    """A test module of several tests (functions, methods of Test and unittest classes, nested
    classes), each with a few assertions of random forms and values; and the name of one."""
    lines = [
        draw(
            st.sampled_from(
                [
                    "",
                    "# -*- coding: utf-8 -*-\n",
                    '"""Doc."""\n',
                    '"""Doc."""\nfrom __future__ import annotations\n',
                ]
            )
        ),
        "import pytest\nimport unittest\n\nEXPECTED = 1\n",
    ]
    names: list[str] = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["function", "class", "unittest", "nested"]))
        body = "\n    ".join(_py_assertion(draw) for _ in range(draw(st.integers(1, 3))))
        decorator = draw(
            st.sampled_from(
                [
                    "",
                    "@pytest.mark.xfail\n",
                    "@pytest.mark.parametrize('a', [1, pytest.param(2, marks=pytest.mark.skip)])\n",
                ]
            )
        )
        name = f"test_{i}"
        names.append(name)
        if kind == "function":
            lines.append(
                f"\n{decorator}def {name}({'a' if 'parametrize' in decorator else ''}):\n    self = unittest.TestCase()\n    {body}\n"
            )
        else:
            base = "(unittest.TestCase)" if kind == "unittest" else ""
            inner = textwrap.indent(f"def {name}(self):\n    {body}\n", "    ")
            if kind == "nested":
                inner = textwrap.indent(f"class TestIn{i}:\n{inner}", "    ")
            lines.append(f"\nclass TestC{i}{base}:\n    x = 1\n{inner}")
    return "".join(lines), draw(st.sampled_from(names))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(python_modules())
def test_python_twins_always_parse(module: tuple[str, str]) -> None:
    source, name = module
    ast.parse(source)
    made = twin("tests/test_gen.py", source, only("tests/test_gen.py", source, name), TOKEN)
    assert made is not None and made.perturbed >= 1
    ast.parse(made.text)
    kept = [d.name for d in defined_tests(made.path, made.text) if d.kind == "test"]
    assert f"{name}_{TOKEN}" in kept
    assert name not in kept


def _js_value(draw: st.DrawFn) -> str:
    return draw(
        st.sampled_from(
            ["0", "-1.5", "0x1F", "1_000", "12n", "true", "null", "undefined", "[1, 'a']", "{ a: 1 }"]
        )
        | st.text(max_size=6).map(json.dumps)
        | st.text(alphabet="abc\\$`{}", max_size=6).map(
            lambda s: "`" + s.replace("\\", "").replace("`", "").replace("${", "") + "`"
        )
    )


def _js_assertion(draw: st.DrawFn) -> str:
    value = _js_value(draw)
    side = draw(st.sampled_from(["value()", "obj.expected", "want", "x[0]"]))
    form = draw(st.integers(0, 8))
    return [
        f"assert.equal({side}, {value});",
        f"assert.deepStrictEqual({value}, {side}, 'message');",
        f"assert.notStrictEqual({side}, {value});",
        f"expect({side}).toBe({value});",
        f"expect({side}).not.toEqual({value});",
        f"await expect(Promise.resolve({side})).resolves.toStrictEqual({value});",
        f"assert.ok({side} === {value});",
        f"assert({side} !== {value});",
        f"[1].forEach(() => {{ assert.strictEqual({side}, {value}); }});",
    ][form]


@st.composite
def javascript_modules(draw: st.DrawFn) -> tuple[str, str, str]:
    ext = draw(st.sampled_from(["js", "mjs", "ts", "tsx"]))
    header = "import { describe, it, test, expect } from 'vitest';\nimport assert from 'node:assert';\n"
    names: list[str] = []
    blocks: list[str] = []
    for i in range(draw(st.integers(1, 4))):
        name = draw(st.text(min_size=1, max_size=10)) + f" {i}"
        names.append(name)
        call = draw(st.sampled_from(["it", "test", "test.only", "it.concurrent", "test.failing", "it.skip"]))
        body = "\n    ".join(_js_assertion(draw) for _ in range(draw(st.integers(1, 3))))
        fn = draw(st.sampled_from(["async () =>", "async function ()", "async ({ task }) =>"]))
        test = f"  {call}({json.dumps(name)}, {fn} {{\n    {body}\n  }});\n"
        if draw(st.booleans()):
            test = f"describe({json.dumps('group ' + str(i))}, () => {{\n{test}}});\n"
        blocks.append(test)
    return f"test/gen.test.{ext}", header + "".join(blocks), draw(st.sampled_from(names))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(javascript_modules())
def test_javascript_twins_always_parse(module: tuple[str, str, str]) -> None:
    path, source, name = module
    assert not js_tree(path, source.encode()).root_node.has_error
    made = twin(path, source, only(path, source, name), TOKEN)
    assert made is not None and made.perturbed >= 1
    assert not js_tree(made.path, made.text.encode()).root_node.has_error
    kept = [d for d in defined_tests(made.path, made.text) if d.kind == "test"]
    assert [d.name for d in kept] == [f"{name} {TOKEN}"]


def test_the_python_helpers_run_on_older_interpreters_too() -> None:
    """The twin runs under the check's Python, which may be older than the verifier's: no
    syntax past 3.8, no `isinstance(x, A | B)` (3.10)."""
    made = make("def test_it():\n    assert value() == expected\n")
    helpers = made.text.split(f"@_t{TOKEN}_G\n")[0]
    tree = ast.parse(helpers, feature_version=(3, 8))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
            assert not isinstance(node.args[1], ast.BinOp), ast.unparse(node)


def _perturbed_literal(text: str) -> Any:
    (node,) = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Assert)]
    assert isinstance(node.test, ast.Call) and isinstance(node.test.args[0], ast.Compare)
    return ast.literal_eval(node.test.args[0].comparators[0])


@pytest.mark.parametrize("token", ["k3v9q2xw", "aaaaaa", "Z9Z9Z9Z9", "m0m0m0m0m0"])
def test_exact_comparisons_get_plausible_values_and_tolerances_far_ones(token: str) -> None:
    """A value that lies only for plausible operands cannot tell a perturbed expected value
    from a real one; a tolerance never swallows a far one."""

    def perturbed(assertion: str) -> str:
        source = f"import pytest\n\n\ndef test_it():\n    {assertion}\n"
        made = twin("tests/test_x.py", source, only("tests/test_x.py", source, "test_it"), token)
        assert made is not None
        return made.text.split(f"def test_it_{token}():")[1].strip()

    moved = _perturbed_literal(perturbed("assert value() == 40"))
    assert moved != 40 and abs(moved - 40) <= 9
    word = _perturbed_literal(perturbed("assert value() == 'slug'"))
    assert word.startswith("slug") and 1 <= len(word) - 4 <= 3 and word.isalpha()
    scaled = _perturbed_literal(perturbed("assert value() == 2.5"))
    assert scaled != 2.5 and 0.5 <= scaled <= 10
    assert _perturbed_literal(perturbed("assert value() == 5e-324")) != 5e-324
    far = perturbed("assert value() == pytest.approx(2.5, rel=0.9, abs=1000)")
    (call,) = [
        n
        for n in ast.walk(ast.parse(far))
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "approx"
    ]
    assert ast.literal_eval(call.args[0]) > 2.5 * 1_000_000


def test_javascript_numbers_differ_as_doubles() -> None:
    for literal in ("9007199254740993", "1152921504606846976", "5e-324", "1.5", "0", "-0"):
        source = f"test('t', () => {{ expect(value()).toBe({literal}); }});\n"
        made = twin("a.test.js", source, only("a.test.js", source, "t"), TOKEN)
        assert made is not None
        moved = made.text.split(".toBe(")[1].split(")")[0].strip("(")
        assert float(moved) != float(literal), (literal, moved)


def test_a_twin_through_an_each_group_keeps_its_table() -> None:
    source = (
        "describe.each([['a'], ['b']])('group %s', (x) => {\n"
        "  it('leaf', () => { expect(x.length).toBe(1); });\n"
        "  it('other', () => {});\n"
        "});\n"
        "test.each`\n  a\n  ${1}\n`('row $a', ({ a }) => { expect(a).toBe(1); });\n"
    )
    made = twin("a.test.js", source, only("a.test.js", source, "leaf"), TOKEN)
    assert made is not None
    assert f"describe.each([['a'], ['b']])(\"group %s {TOKEN}\"" in made.text
    assert "void 0(" not in made.text and "'other'" not in made.text
    assert [d.name for d in defined_tests(made.path, made.text) if d.kind == "test"] == [f"leaf {TOKEN}"]
    made = twin("a.test.js", source, only("a.test.js", source, "row $a"), TOKEN)
    assert made is not None and "test.each`" in made.text and f'"row $a {TOKEN}"' in made.text
