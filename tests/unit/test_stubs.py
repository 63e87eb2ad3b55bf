"""Stubbing the functions a change touched: which functions, what their bodies become, and
that nothing else of the file moves by a byte."""

from __future__ import annotations

import ast
import textwrap
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskgate.domain.stubs import JS_STUB, MARKER, PY_LAMBDA_STUB, PY_STUB, stub_changed
from taskgate.domain.testdefs import js_tree

PY = textwrap.dedent(
    '''\
    """Module."""
    import functools

    LIMIT = 3


    def plain(a):
        total = a + 1
        return total


    @functools.cache
    def decorated(a):
        """Doc stays."""
        return a * 2


    def documented_only():
        """Only a docstring."""


    def one_line(a): return a; b = 2  # comment stays


    async def coroutine():
        return 1


    def generator():
        yield 1


    def outer():
        x = 1

        def inner():
            return x

        return inner()


    square = lambda n: n * n


    class Shape:
        sides = 4
        area = lambda self: self.sides

        def perimeter(self):
            return self.sides * 2

        @property
        def name(self):
            return "shape"


    if LIMIT:
        def conditional():
            return LIMIT
    '''
)


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("needle", "functions"),
    [
        ("total = a + 1", ("plain",)),
        ("def plain", ("plain",)),
        ("@functools.cache", ("decorated",)),
        ("return a * 2", ("decorated",)),
        ('"""Only a docstring."""', ("documented_only",)),
        ("def one_line", ("one_line",)),
        ("return 1", ("coroutine",)),
        ("yield 1", ("generator",)),
        ("x = 1", ("outer",)),
        ("return x", ("outer.inner",)),
        ("square =", ("square",)),
        ("area =", ("Shape.area",)),
        ("return self.sides * 2", ("Shape.perimeter",)),
        ("@property", ("Shape.name",)),
        ("return LIMIT", ("conditional",)),
    ],
)
def test_python_the_function_holding_the_change_is_stubbed(needle: str, functions: tuple[str, ...]) -> None:
    stubbed = stub_changed("calc.py", PY, frozenset({line_of(PY, needle)}))
    assert stubbed is not None
    assert stubbed.functions == functions
    ast.parse(stubbed.text)


@pytest.mark.parametrize("needle", ["import functools", "LIMIT = 3", "sides = 4", "class Shape", "if LIMIT"])
def test_python_a_change_outside_every_function_touches_none(needle: str) -> None:
    assert stub_changed("calc.py", PY, frozenset({line_of(PY, needle)})) is None


def test_python_a_new_file_has_every_function_stubbed() -> None:
    stubbed = stub_changed("calc.py", PY, None)
    assert stubbed is not None
    assert stubbed.functions == (
        "plain",
        "decorated",
        "documented_only",
        "one_line",
        "coroutine",
        "generator",
        "outer",
        "square",
        "Shape.area",
        "Shape.perimeter",
        "Shape.name",
        "conditional",
    )
    text = stubbed.text
    assert '"""Doc stays."""\n    ' + PY_STUB in text
    assert '"""Only a docstring."""; ' + PY_STUB in text
    assert "def one_line(a): " + PY_STUB + "  # comment stays" in text
    assert "square = lambda n: " + PY_LAMBDA_STUB in text
    assert "    sides = 4\n" in text
    assert "def inner" not in text
    assert stub_changed("calc.py", PY, frozenset()) is None


def test_python_stubs_raise_past_except_exception() -> None:
    stubbed = stub_changed("calc.py", PY, None)
    assert stubbed is not None
    namespace: dict[str, Any] = {"__name__": "calc"}
    exec(stubbed.text, namespace)
    for call in (
        lambda: namespace["plain"](1),
        lambda: namespace["square"](2),
        lambda: namespace["Shape"]().perimeter(),
        lambda: namespace["Shape"]().area(),
        lambda: namespace["Shape"]().name,
        lambda: next(namespace["generator"]()),
    ):
        with pytest.raises(BaseException, match=MARKER) as caught:
            try:
                call()
            except Exception:  # the code under test's own handler does not swallow it
                pytest.fail("the stub's exception was caught as an Exception")
        assert not isinstance(caught.value, Exception)
    assert namespace["Shape"].sides == 4 and namespace["LIMIT"] == 3


def test_files_that_do_not_parse_are_refused_and_others_ignored() -> None:
    with pytest.raises(ValueError, match="does not parse"):
        stub_changed("calc.py", "def f(:\n", None)
    with pytest.raises(ValueError, match="does not parse"):
        stub_changed("calc.js", "function f( {\n", None)
    assert stub_changed("README.md", "def f(): pass\n", None) is None
    assert stub_changed("data.json", '{"a": 1}', None) is None


JS = textwrap.dedent(
    """\
    const LIMIT = 3;

    export function declared(a) {
      return a + 1;
    }

    const arrow = (a) => a * 2;

    const block = async (a) => {
      return await a;
    };

    function* gen() {
      yield 1;
    }

    const obj = {
      method() { return 1; },
      prop: function () { return 2; },
      get size() { return 3; },
      set size(v) { this.v = v; },
    };

    class Shape extends Base {
      sides = 4;
      area = () => this.sides;
      constructor() {
        super();
        this.x = 1;
      }
      perimeter() {
        return this.sides * 2;
      }
      static *all() { yield 1; }
    }

    module.exports = (function () {
      function helper() {
        return LIMIT;
      }
      return { helper };
    })();
    """
)


@pytest.mark.parametrize(
    ("needle", "functions"),
    [
        ("return a + 1", ("declared",)),
        ("export function declared", ("declared",)),
        ("const arrow", ("arrow",)),
        ("return await a", ("block",)),
        ("yield 1;", ("gen",)),
        ("method()", ("obj.method",)),
        ("prop: function", ("prop",)),
        ("get size", ("obj.size",)),
        ("set size", ("obj.size",)),
        ("area = ", ("area",)),
        ("this.x = 1", ("Shape.constructor",)),
        ("return this.sides * 2", ("Shape.perimeter",)),
        ("static *all", ("Shape.all",)),
        ("return LIMIT", ("helper",)),
        ("return { helper }", (f"<anonymous>:{line_of(JS, 'module.exports')}",)),
    ],
)
def test_javascript_the_function_holding_the_change_is_stubbed(
    needle: str, functions: tuple[str, ...]
) -> None:
    stubbed = stub_changed("shape.js", JS, frozenset({line_of(JS, needle)}))
    assert stubbed is not None
    assert stubbed.functions == functions
    assert not js_tree("shape.js", stubbed.text.encode()).root_node.has_error


@pytest.mark.parametrize("needle", ["const LIMIT", "sides = 4;", "class Shape", "const obj = {"])
def test_javascript_a_change_outside_every_function_touches_none(needle: str) -> None:
    assert stub_changed("shape.js", JS, frozenset({line_of(JS, needle)})) is None


def test_javascript_bodies_become_a_throw() -> None:
    stubbed = stub_changed("shape.js", JS, None)
    assert stubbed is not None
    assert "const arrow = (a) => " + JS_STUB + ";" in stubbed.text
    assert "  sides = 4;\n" in stubbed.text
    assert "get size() " + JS_STUB in stubbed.text
    assert "function helper" not in stubbed.text  # it went with the wrapper


def test_typescript_keeps_its_types_and_skips_bodiless_declarations() -> None:
    ts = textwrap.dedent(
        """\
        function over(x: number): number;
        function over(x: number): number { return x; }
        abstract class A {
          abstract m(): void;
          n(): number { return 1; }
        }
        interface I { m(): void }
        const typed = (s: string): string => s.trim();
        """
    )
    stubbed = stub_changed("a.ts", ts, None)
    assert stubbed is not None
    assert stubbed.functions == ("over", "A.n", "typed")
    assert "function over(x: number): number;\n" in stubbed.text
    assert "(s: string): string => " + JS_STUB in stubbed.text
    assert not js_tree("a.ts", stubbed.text.encode()).root_node.has_error
    tsx = "export const View = (p: { a: string }) => <div>{p.a}</div>;\n"
    stubbed = stub_changed("v.tsx", tsx, frozenset({1}))
    assert stubbed is not None and stubbed.functions == ("View",)


# -- properties: the result parses, and only the stubbed bodies changed ------------------------

_PY_FRAGMENTS = [
    "def f{i}(a, b=1):\n    x = a + b  # note\n\n    return x\n",
    "def f{i}(a): return a\n",
    "@staticmethod\n@functools.cache\ndef f{i}():\n    '''Doc {i}.'''\n    return 1\n",
    "def f{i}():\n    '''Only doc.'''\n",
    "async def f{i}():\n    await g()\n    return 1\n",
    "def f{i}():\n    yield 1\n    yield 2\n",
    "f{i} = lambda x: x + 1\n",
    "g{i}: object = lambda: (1,\n    2)\n",
    "class C{i}:\n    attr = 1\n    lam = lambda self: 2\n\n    def m(self):\n        return self.attr\n\n    @property\n    def p(self): return 1\n\n    class Inner:\n        def n(self):\n            def deep():\n                return 3\n            return deep()\n",
    "if True:\n    def h{i}():\n        return 1\nelse:\n    pass\n",
    "try:\n    def t{i}():\n        return 1\nexcept Exception:\n    def t{i}():\n        return 2\n",
    "def one{i}(): return 1; x = 2  # comment\n",
    "def multi{i}(\n    a,\n    b,\n):\n    return (\n        a\n        + b\n    )  # trailing\n",
    "X{i} = [\n    1,\n]\n",
    "def uni{i}():\n    return 'é✓' + \"\\u00e9\"  # 😀\n",
]


@st.composite
def python_sources(draw: st.DrawFn) -> tuple[str, frozenset[int] | None]:
    parts = draw(st.lists(st.sampled_from(_PY_FRAGMENTS), min_size=1, max_size=6))
    text = "import functools\n\n" + "\n".join(p.format(i=i) for i, p in enumerate(parts))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    lines = len(text.splitlines())
    changed = draw(st.none() | st.frozensets(st.integers(1, lines), max_size=4))
    return text, changed


def _py_candidates(text: str) -> list[tuple[int, int, str]]:
    """Every edit the stubbing may make to a function of `text`: (start, end, new)."""
    data = text.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def at(line: int, col: int) -> int:
        return starts[line - 1] + col

    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            documented = isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant
            )
            if documented and len(body) == 1:
                end = at(body[0].end_lineno or 0, body[0].end_col_offset or 0)
                out.append((end, end, "; " + PY_STUB))
            else:
                rest = body[1:] if documented else body
                out.append(
                    (
                        at(rest[0].lineno, rest[0].col_offset),
                        at(rest[-1].end_lineno or 0, rest[-1].end_col_offset or 0),
                        PY_STUB,
                    )
                )
        elif isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Lambda):
            lam = node.value.body
            out.append(
                (
                    at(lam.lineno, lam.col_offset),
                    at(lam.end_lineno or 0, lam.end_col_offset or 0),
                    PY_LAMBDA_STUB,
                )
            )
    return out


def _aligned(original: bytes, result: bytes, candidates: list[tuple[int, int, str]]) -> int:
    """How many of the candidate edits turn `original` into `result`, nothing else changed
    (fails otherwise)."""
    by_start: dict[int, list[tuple[int, str]]] = {}
    for start, end, new in candidates:
        by_start.setdefault(start, []).append((end, new))
    i = j = used = 0
    while i < len(original) or j < len(result):
        for end, new in by_start.get(i, []):
            stub = new.encode()
            if result.startswith(stub, j) and not original.startswith(stub, i):
                i, j, used = end, j + len(stub), used + 1
                break
        else:
            assert i < len(original) and j < len(result), "the texts differ in length outside stubbed bodies"
            assert original[i] == result[j], (
                f"byte {i} changed: {original[i - 20 : i + 20]!r} -> {result[j - 20 : j + 20]!r}"
            )
            i, j = i + 1, j + 1
    return used


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(python_sources())
def test_python_stubs_parse_and_change_nothing_else(source: tuple[str, frozenset[int] | None]) -> None:
    text, changed = source
    stubbed = stub_changed("mod.py", text, changed)
    candidates = _py_candidates(text)
    if stubbed is None:
        assert changed is not None or not candidates
        return
    ast.parse(stubbed.text)
    used = _aligned(text.encode(), stubbed.text.encode(), candidates)
    assert used == len(stubbed.functions) >= 1


_JS_FRAGMENTS = [
    "function f{i}(a, b = 1) {{\n  const x = a + b; // note\n  return x;\n}}\n",
    "export const a{i} = (x) => x * 2;\n",
    "const b{i} = async (x) => {{\n  return await x;\n}};\n",
    "function* g{i}() {{ yield 1; }}\n",
    "const o{i} = {{ m() {{ return 1; }}, n: function () {{ return 2; }}, get g() {{ return 3; }} }};\n",
    "class K{i} extends Object {{\n  f = () => 1;\n  static s = 2;\n  constructor() {{ super(); }}\n  async *am() {{ yield await 1; }}\n}}\n",
    "module.exports.h{i} = function named{i}() {{ return [1].map((x) => x + 1); }};\n",
    "(function () {{\n  const inner = () => ({{ a: 1 }});\n  return inner;\n}})();\n",
    "const s{i} = `tmpl ${{'x'}}` + 'é✓';\n",
    "const r{i} = /a\\/b/g.test('a/b') ? () => 1 : () => 2;\n",
]


@st.composite
def javascript_sources(draw: st.DrawFn) -> tuple[str, str, frozenset[int] | None]:
    parts = draw(st.lists(st.sampled_from(_JS_FRAGMENTS), min_size=1, max_size=6))
    text = "\n".join(p.format(i=i) for i, p in enumerate(parts))
    lines = len(text.splitlines())
    changed = draw(st.none() | st.frozensets(st.integers(1, lines), max_size=4))
    return draw(st.sampled_from(["m.js", "m.ts", "m.mjs"])), text, changed


_JS_KINDS = {
    "function_declaration",
    "generator_function_declaration",
    "function_expression",
    "function",
    "generator_function",
    "arrow_function",
    "method_definition",
}


def _js_candidates(path: str, text: str) -> list[tuple[int, int, str]]:
    out = []
    stack = [js_tree(path, text.encode()).root_node]
    while stack:
        node = stack.pop()
        body = node.child_by_field_name("body") if node.type in _JS_KINDS else None
        if body is not None:
            out.append((body.start_byte, body.end_byte, JS_STUB))
        stack.extend(node.children)
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(javascript_sources())
def test_javascript_stubs_parse_and_change_nothing_else(
    source: tuple[str, str, frozenset[int] | None],
) -> None:
    path, text, changed = source
    assert not js_tree(path, text.encode()).root_node.has_error
    stubbed = stub_changed(path, text, changed)
    candidates = _js_candidates(path, text)
    if stubbed is None:
        assert changed is not None or not candidates
        return
    assert not js_tree(path, stubbed.text.encode()).root_node.has_error
    used = _aligned(text.encode(), stubbed.text.encode(), candidates)
    assert used == len(stubbed.functions) >= 1
