"""Static test detection (Python by pytest's default collection, JavaScript/TypeScript by the
runners' test calls), which definitions a ref may name, and the naming rules."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskgate.domain import baseline, screen
from taskgate.domain.testdefs import (
    TestDef,
    defined_tests,
    defines_ref,
    is_harness,
    is_test_path,
    is_test_side,
)


def names(defs: list[TestDef]) -> list[tuple[tuple[str, ...], str, str]]:
    return [(d.groups, d.name, d.kind) for d in defs]


PY = textwrap.dedent(
    '''
    """Module."""
    import unittest

    import pytest


    class Base(unittest.TestCase):
        def test_common(self):
            pass


    class Child(Base):
        @pytest.mark.slow
        def test_child(self):
            pass

        def helper(self):
            pass


    class TestFoo:
        def test_a(self):
            pass

        @staticmethod
        def test_static():
            pass

        class TestInner:
            def test_b(self):
                pass

        class NotCollected:
            def test_c(self):
                pass


    class TestWithInit:
        def __init__(self):
            pass

        def test_never(self):
            pass


    class TestOptedOut:
        __test__ = False

        def test_never(self):
            pass


    class Checks:
        __test__ = True

        def test_opted_in(self):
            pass


    if True:
        def test_conditional():
            pass

    try:
        import json
    except ImportError:
        def test_fallback():
            pass


    async def test_async():
        pass


    def testfoo():
        pass


    def helper_test():
        pass


    def _test_private():
        pass
    '''
)


def test_python_definitions_follow_pytest_default_collection() -> None:
    defs = defined_tests("tests/test_x.py", PY)
    assert names(defs) == [
        ((), "Base", "group"),
        (("Base",), "test_common", "test"),
        ((), "Child", "group"),
        (("Child",), "test_child", "test"),
        ((), "TestFoo", "group"),
        (("TestFoo",), "test_a", "test"),
        (("TestFoo",), "test_static", "test"),
        (("TestFoo",), "TestInner", "group"),
        (("TestFoo", "TestInner"), "test_b", "test"),
        ((), "Checks", "group"),
        (("Checks",), "test_opted_in", "test"),
        ((), "test_conditional", "test"),
        ((), "test_fallback", "test"),
        ((), "test_async", "test"),
        ((), "testfoo", "test"),
    ]


def test_python_spans_include_decorators() -> None:
    defs = {d.name: d for d in defined_tests("tests/test_x.py", PY)}
    lines = PY.splitlines()
    child = defs["test_child"]
    assert lines[child.start_line - 1].strip() == "@pytest.mark.slow"
    assert lines[child.end_line - 1].strip() == "pass"
    assert lines[defs["TestFoo"].start_line - 1].startswith("class TestFoo")


def test_python_that_does_not_parse_defines_nothing() -> None:
    assert defined_tests("tests/test_x.py", "def test_a(:\n") == []
    assert defined_tests("README.md", "def test_a(): pass\n") == []


JS = textwrap.dedent(
    """
    const test = require('node:test');
    const { describe, it } = require('node:test');

    test('top level', () => {});
    test.only(`template`, () => {});
    describe('outer', () => {
      describe.skip('inner', () => {
        it('nested \\'quoted\\' \\u00e9', () => {});
        it.todo('later');
      });
      it.concurrent.each([[1, 2]])('adds %i to %i', (a, b) => {});
      it.skipIf(process.env.CI)('conditional', () => {});
      test(`dynamic ${1}`, () => {});
      it(name, () => {});
    });
    test('with subtests', async (t) => {
      await t.test('sub one', () => {});
      t.test('sub two', () => {});
    });
    const re = /x/;
    re.test('not a test');
    other.test('not a test either', () => {});
    suite('tdd', function () {
      test('tdd test', function () {});
    });
    """
)


def test_javascript_definitions_are_the_runners_test_calls() -> None:
    defs = defined_tests("test/x.test.js", JS)
    assert names(defs) == [
        ((), "top level", "test"),
        ((), "template", "test"),
        ((), "outer", "group"),
        (("outer",), "inner", "group"),
        (("outer", "inner"), "nested 'quoted' é", "test"),
        (("outer", "inner"), "later", "test"),
        (("outer",), "adds %i to %i", "test"),
        (("outer",), "conditional", "test"),
        ((), "with subtests", "test"),
        (("with subtests",), "sub one", "test"),
        (("with subtests",), "sub two", "test"),
        ((), "tdd", "group"),
        (("tdd",), "tdd test", "test"),
    ]
    each = next(d for d in defs if d.name.startswith("adds"))
    assert each.each
    assert not any(d.each for d in defs if d is not each)


def test_a_group_without_a_literal_name_cuts_the_path() -> None:
    source = "describe(`v${1}`, () => { describe('inner', () => { it('leaf', () => {}); }); });\n"
    assert names(defined_tests("a.test.js", source)) == [
        ((), "inner", "group"),
        (("inner",), "leaf", "test"),
    ]


def test_typescript_and_tsx_parse() -> None:
    ts = "import { it } from 'vitest';\nit<string>('typed', (): void => { const x: number = 1; });\n"
    tsx = "import { test } from 'vitest';\ntest('renders', () => { const e = <div className=\"a\">x</div>; });\n"
    assert names(defined_tests("a.test.ts", ts)) == [((), "typed", "test")]
    assert names(defined_tests("a.test.tsx", tsx)) == [((), "renders", "test")]


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_javascript_names_decode_as_the_runner_reads_them(name: str) -> None:
    """A name written as a JSON string literal (any escapes) is read back exactly."""
    source = f"test({json.dumps(name)}, () => {{}});\n"
    assert [d.name for d in defined_tests("t.test.js", source)] == [name]


# -- refs --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("test_a", [(("TestFoo",), "test_a")]),
        ("tests.test_x.TestFoo.test_a", [(("TestFoo",), "test_a")]),
        ("test_x.TestFoo.TestInner.test_b", [(("TestFoo", "TestInner"), "test_b")]),
        ("TestInner.test_b", [(("TestFoo", "TestInner"), "test_b")]),
        ("test_conditional[1-a.b]", [((), "test_conditional")]),
        ("Child.test_child", [(("Child",), "test_child")]),
        ("test_x.test_async", [((), "test_async")]),
        ("test_nothing", []),
        ("TestFoo.test_b", []),
        ("other_module.TestFoo.test_a", []),
        ("", []),
    ],
)
def test_python_refs(ref: str, expected: list[tuple[tuple[str, ...], str]]) -> None:
    defs = defined_tests("tests/test_x.py", PY)
    assert [(d.groups, d.name) for d in defines_ref(defs, ref)] == expected


def test_a_python_group_ref_names_its_class_module_or_package_and_what_is_in_them() -> None:
    defs = defined_tests("tests/test_x.py", PY)
    in_foo = [d.name for d in defines_ref(defs, "TestFoo")]
    assert in_foo == ["TestFoo", "test_a", "test_static", "TestInner", "test_b"]
    assert len(defines_ref(defs, "test_x")) == len(defs)
    assert len(defines_ref(defs, "tests")) == len(defs)
    assert defines_ref(defs, "test_y") == []


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("top level", ["top level"]),
        ("outer > inner > nested 'quoted' é", ["nested 'quoted' é"]),
        ("inner > nested 'quoted' é", ["nested 'quoted' é"]),
        ("  outer >  adds 1 to 2 ", ["adds %i to %i"]),
        ("adds 10 to 20", ["adds %i to %i"]),
        ("outer > inner", ["inner", "nested 'quoted' é", "later"]),
        ("with subtests > sub two", ["sub two"]),
        ("outer inner later", ["later"]),
        ("inner > top level", []),
        ("outer > nested 'quoted' é", []),
        ("adds x", []),
    ],
)
def test_javascript_refs(ref: str, expected: list[str]) -> None:
    defs = defined_tests("test/x.test.js", JS)
    assert [d.name for d in defines_ref(defs, ref)] == expected


# -- naming rules ----------------------------------------------------------------------------

PATHS = [
    "tests/test_calc.py",
    "test_calc.py",
    "calc_test.py",
    "tests/conftest.py",
    "conftest.py",
    "tests/helpers.py",
    "tests/__init__.py",
    "src/calc.py",
    "src/testing.py",
    "test/slug.test.js",
    "slug.spec.ts",
    "src/slug_test.mjs",
    "src/slug-test.cjs",
    "test.js",
    "test-slug.js",
    "test/helpers/setup.js",
    "test/data/cases.json",
    "__tests__/a.js",
    "__tests__/snap.snap",
    "__tests__/helper.py",
    "src/a.test.tsx",
    "src/a.js",
    "fixtures/test.txt",
    "docs/test_plan.md",
]


@pytest.mark.parametrize("path", PATHS)
def test_test_paths_keep_the_rules_baseline_and_screen_apply_today(path: str) -> None:
    assert is_test_path(path) == baseline.is_test_file(path) == screen.is_test_file(path)
    assert is_test_path(path, ["hidden"]) == screen.is_test_file(path, ["hidden"])


def test_extra_dirs_count_whole() -> None:
    assert is_test_path("hidden/check.py", ["hidden/"])
    assert not is_test_path("hiddenx/check.py", ["hidden"])


@pytest.mark.parametrize(
    "path",
    [
        "conftest.py",
        "pkg/tests/conftest.py",
        "pytest.ini",
        "tests/pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        "tox.ini",
        "sub/setup.cfg",
        "pyproject.toml",
        "src/sitecustomize.py",
        "usercustomize.py",
        "lib/evil.pth",
        "pytest.py",
        "vendor/_pytest/reports.py",
        "pluggy/__init__.py",
        ".venv/lib/python3.11/site-packages/x.py",
        "package.json",
        "web/package.json",
        ".npmrc",
        "web/.npmrc",
        ".yarnrc.yml",
        ".pnpmfile.cjs",
        ".pnp.cjs",
        "node_modules/vitest/index.js",
        "vitest.config.ts",
        "web/vite.config.mjs",
        "vitest.workspace.js",
        "jest.config.js",
        "jest.setup.ts",
        "src/setupTests.js",
        ".mocharc.yml",
        ".mocharc",
        "ava.config.js",
        "babel.config.cjs",
        ".babelrc",
        ".babelrc.json",
        ".swcrc",
        "tsconfig.json",
        "tsconfig.build.json",
        "jsconfig.json",
        "bunfig.toml",
        "karma.conf.js",
        "playwright.config.ts",
    ],
)
def test_harness_files_at_any_depth(path: str) -> None:
    assert is_harness(path)
    assert is_test_side(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/calc.py",
        "README.md",
        "src/package.py",
        "src/vitest.ts",
        "docs/jest.md",
        "setup.py",
        "src/config.js",
    ],
)
def test_source_is_not_harness(path: str) -> None:
    assert not is_harness(path)
    assert not is_test_side(path)


@pytest.mark.parametrize(
    "path",
    [
        "tests/helpers.py",
        "tests/__init__.py",
        "tests/data/cases.json",
        "pkg/tests/fixtures/a.txt",
        "test/support/util.js",
        "src/__snapshots__/a.test.js.snap",
        "src/__mocks__/fs.js",
        "__fixtures__/a.json",
        "tests/test_calc.py",
    ],
)
def test_everything_under_a_test_directory_is_on_the_test_side(path: str) -> None:
    assert is_test_side(path)


def test_tree_sitter_is_not_imported_until_a_javascript_file_is_read() -> None:
    code = (
        "import sys\n"
        "import taskgate.domain.testdefs, taskgate.domain.tripwires, taskgate.domain.stubs\n"
        "from taskgate.domain.testdefs import defined_tests\n"
        "defined_tests('tests/test_a.py', 'def test_a(): pass')\n"
        "assert not any(m.startswith('tree_sitter') for m in sys.modules), 'loaded early'\n"
        "defined_tests('a.test.js', \"test('a', () => {})\")\n"
        "assert 'tree_sitter' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
