"""Tripwires: tests the verifier writes into the grading run, each of which must be reported
failed. One that is reported passed, skipped or missing means something bent the grader.

A *twin* is a copy of a named test's file in which only that test is kept, under a new name,
with every assertion of an expected value perturbed so that honest code fails it:

- the test is renamed with the token, and so are the groups on its path (Python: its classes;
  JavaScript: the describe/test calls around it), in a file of its own named for the same
  runner (`sibling_path`), so no report name of the twin matches a criterion's ref;
- the file's other tests are removed (a Python test or class that other code of the file names
  is kept and taken out of collection with `__test__ = False`); helpers, fixtures, imports,
  hooks and module code stay;
- in the test's body, the side of each equality assertion that holds the expected value (a
  `pytest.approx`, else a literal, else a name like `expected`/`want`, else the right-hand or
  second argument) is replaced by a value of the same type that differs: a literal inline, any
  other expression through a helper the twin defines under a token-derived name (strings gain
  one to three letters, integers move by 1 to 9, floats scale, booleans flip, lists, tuples,
  sets, dicts and objects gain an element, None becomes a fresh word, dates move, an enum
  takes another member, a dataclass or pydantic model gets its first field perturbed; values
  of other types become a fresh object). These are plausible values, so a value cannot tell a
  perturbed operand from a real one by its size or shape; under a tolerance (`approx`,
  `assertAlmostEqual`, `assert_allclose`) numbers move far instead, by a factor above a
  million. The values are drawn from the token. An inequality assertion becomes the
  equality, which honest code fails (`!=` -> `==`, `assertNotEqual` -> `assertEqual`,
  `assert.notStrictEqual` -> `assert.strictEqual`, `expect(x).not.toBe(y)` -> `toBe`);
- markers that turn a failure into a pass or a skip (pytest's xfail, unittest's
  expectedFailure, parameter `marks=`, jest's `.failing`, vitest's `.fails`) are removed;
- a guard wraps the test: it fails unless at least one perturbed assertion *held*, and turns a
  skip raised inside the test into a failure. So honest code fails its twin even where a
  perturbed assertion never runs or is caught (`pytest.raises(AssertionError)`), and the twin
  passes only where a perturbed value was accepted: a value that lies about its equality, an
  assertion library or a report that was bent.

A *canary* is a tiny test that fails outright, beside a named test, in the same runner's
language. It catches what bends every result (a forged report, a runner that stops early with
success) even where a named test has no twin.

Names are drawn fresh for each run from the caller's token (letters and digits; one token per
tripwire). Every name a tripwire's tests report carries its token: `tripwire_cases` finds them
in a report and `without_tripwires` takes them out of the evidence.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from taskgate.domain.reports import Group, Report, TestCase
from taskgate.domain.testdefs import (
    JS_SUFFIXES,
    PY_SUFFIXES,
    JsTestCall,
    TestDef,
    js_kind,
    js_nodes,
    js_tree,
    python_tests,
    span,
    string_value,
    test_calls,
)

if TYPE_CHECKING:
    from tree_sitter import Node

TOKEN = re.compile(r"[A-Za-z0-9]{6,40}\Z")


@dataclass(frozen=True)
class Tripwire:
    """A test file the verifier writes at `path`. `name`: how its test appears in a report
    (pytest: `dir.module.Class.test`, taking the checkout as pytest's rootdir; JavaScript: its
    `>` path); a parametrized twin reports one case per row. `of`: the named test it twins
    (`kind` "twin"), as `>` path of its groups and name. `perturbed`: how many assertions the
    twin perturbs (0 for a canary). `token`: in every name the tripwire reports."""

    path: str
    text: str
    name: str
    kind: Literal["twin", "canary"]
    of: str | None
    perturbed: int
    token: str


def _check_token(token: str) -> None:
    if not TOKEN.match(token):
        raise ValueError(f"a tripwire token is 6 to 40 letters and digits, not {token!r}")


# -- values -----------------------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class _Values:
    """The perturbation's constants for one token, drawn at random from it. Exact comparisons
    get small, plausible changes (a value cannot tell a perturbed number or string from a real
    one by its size or its shape): integers move by `delta`, floats scale by `scale`, strings
    gain `suffix` (lowercase letters, like a word), a missing value becomes `fresh`. Comparisons
    with a tolerance (`approx`, `assertAlmostEqual`...) move numbers `far`, by a factor above a
    million, past any tolerance a test would set."""

    delta: int
    scale: float
    far: int
    suffix: str
    fresh: str
    days: int
    hours: int


def _values(token: str) -> _Values:
    rng = random.Random(hashlib.sha256(token.encode()).digest())

    def word(n: int) -> str:
        return "".join(rng.choice(_LETTERS) for _ in range(n))

    return _Values(
        delta=rng.choice([-1, 1]) * rng.randrange(1, 10),
        scale=rng.choice([0.5, 1.25, 1.5, 2.0, 3.0, 0.25]),
        far=rng.randrange(1_000_003, 9_999_991),
        suffix=word(rng.randrange(1, 4)),
        fresh=word(rng.randrange(5, 10)),
        days=rng.randrange(1, 30),
        hours=rng.randrange(1, 24),
    )


def _perturb_float(x: float, v: _Values, far: bool) -> float:
    if not math.isfinite(x):
        return float(v.delta)
    if far:
        return x + (abs(x) + 1.0) * v.far if abs(x) < 1e290 else x / v.far
    moved = x * v.scale
    return moved if moved != x else x + v.delta  # a subnormal may not move by scaling


def _perturb(value: Any, v: _Values, far: bool = False) -> Any:
    """A Python literal's value, perturbed (the twin's runtime helper does the same by type)."""
    if value is None or value is Ellipsis:
        return v.fresh
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + (abs(value) + 1) * v.far if far else value + v.delta
    if isinstance(value, float):
        return _perturb_float(value, v, far)
    if isinstance(value, complex):
        return complex(_perturb_float(value.real, v, far), value.imag)
    if isinstance(value, str):
        return value + v.suffix
    if isinstance(value, bytes):
        return value + v.suffix.encode()
    if isinstance(value, list):
        return [*value, _perturb(value[-1], v, far) if value else v.fresh]
    if isinstance(value, tuple):
        return (*value, _perturb(value[-1], v, far) if value else v.fresh)
    if isinstance(value, set):
        extra = v.fresh
        while extra in value:
            extra += v.suffix
        return value | {extra}
    if isinstance(value, dict):
        key = v.fresh
        while key in value:
            key += v.suffix
        return {**value, key: _perturb(list(value.values())[-1], v, far) if value else None}
    return v.fresh


def _py_source(value: Any) -> str:
    """Python source for a value `_perturb` returns (a non-finite float has no literal)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value!r}")'
    if isinstance(value, complex):
        return f"complex({_py_source(value.real)}, {_py_source(value.imag)})"
    if isinstance(value, list):
        return "[" + ", ".join(map(_py_source, value)) + "]"
    if isinstance(value, tuple):
        return "(" + "".join(_py_source(x) + ", " for x in value) + ")"
    if isinstance(value, set):
        return "{" + ", ".join(map(_py_source, value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py_source(k)}: {_py_source(x)}" for k, x in value.items()) + "}"
    return repr(value)


# -- edits ------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Edit:
    start: int
    end: int
    text: bytes | None = None  # a replacement; None: a wrap
    prefix: bytes = b""
    suffix: bytes = b""
    children: list[_Edit] = field(default_factory=list)


class _Edits:
    """Edits of a source's bytes that nest: replacements (a span becomes new text; nothing
    inside it is edited) and wraps (text before and after a span whose inside may be edited).
    An insertion (an empty replacement) goes before anything that starts where it is; two
    insertions at one place go in the order they were made."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.items: list[_Edit] = []
        self.dead: list[tuple[int, int]] = []

    def replace(self, start: int, end: int, text: str) -> None:
        self.items.append(_Edit(start, end, text.encode()))
        if end > start:
            self.dead.append((start, end))

    def wrap(self, start: int, end: int, prefix: str, suffix: str) -> None:
        self.items.append(_Edit(start, end, None, prefix.encode(), suffix.encode()))

    def is_dead(self, start: int, end: int) -> bool:
        """Whether the span lies inside a span already replaced."""
        return any(s <= start and end <= e for s, e in self.dead)

    def render(self) -> bytes:
        root = _Edit(0, len(self.data))
        stack = [root]
        for e in sorted(self.items, key=lambda e: (e.start, e.end != e.start, -e.end)):
            while True:
                top = stack[-1]
                if top is root:
                    break
                inside = top.start <= e.start and e.end <= top.end
                at_end = e.start == e.end == top.end and top.start != top.end
                if top.text is None and inside and not at_end:
                    break
                if e.start < top.end and not inside:
                    raise ValueError("overlapping edits")
                if top.text is not None and inside and top.start < e.start < top.end:
                    raise ValueError("an edit inside a replaced span")
                stack.pop()
            stack[-1].children.append(e)
            if e.text is None:
                stack.append(e)
        return self._render(root)

    def _render(self, e: _Edit) -> bytes:
        if e.text is not None:
            return e.text
        out = [e.prefix]
        cursor = e.start
        for child in e.children:
            out.append(self.data[cursor : child.start])
            out.append(self._render(child))
            cursor = child.end
        out.append(self.data[cursor : e.end])
        out.append(e.suffix)
        return b"".join(out)


# -- paths and names --------------------------------------------------------------------------


def sibling_path(test_path: str, token: str) -> str:
    """A fresh file beside `test_path` that the same runner collects: the token goes at the end
    of the file name's first part, so the name keeps its directory, its extension and the
    pattern around it (`test_x.py` -> `test_x_<t>.py`, `x.test.js` -> `x_<t>.test.js`,
    `test/x.js` -> `test/x_<t>.js`, `test-x.js` -> `test-x_<t>.js`, and a name a config's
    glob collects keeps its prefix and extension: `check_x.py` -> `check_x_<t>.py`); a
    `_test`/`-test` suffix stays last (`x_test.py` -> `x_<t>_test.py`), and `test.js` becomes
    `<t>.test.js` (node, jest and vitest all collect it)."""
    _check_token(token)
    folder, _, base = test_path.rpartition("/")
    prefix = folder + "/" if folder else ""
    first, dot, rest = base.partition(".")
    ext = "." + base.rsplit(".", 1)[-1] if "." in base else ""
    if base.endswith(PY_SUFFIXES) and first.endswith("_test") and rest == "py":
        return f"{prefix}{first[: -len('_test')]}_{token}_test.py"
    if base.endswith(JS_SUFFIXES) and "." not in rest.removesuffix(ext.lstrip(".")).strip("."):
        for mark in ("_test", "-test"):
            if first.endswith(mark) and first != mark[1:]:
                return f"{prefix}{first[: -len(mark)]}{mark[0]}{token}{mark}{ext}"
        if first == "test":
            return f"{prefix}{token}.test{ext}"
    return f"{prefix}{first}_{token}{dot}{rest}"


def _module(path: str) -> str:
    return path[: -len(".py")].replace("/", ".")


def _of(test: TestDef) -> str:
    return " > ".join([*test.groups, test.name])


# -- reading reports --------------------------------------------------------------------------


def tripwire_cases(report: Report, token: str) -> list[TestCase]:
    """The cases of `report` that a tripwire reported: those whose own name carries its token,
    and every case inside a group whose name carries it (node:test's subtests)."""
    out: list[TestCase] = []

    def walk(tests: Iterable[TestCase], groups: Iterable[Group], inside: bool) -> None:
        out.extend(t for t in tests if inside or token in t.name)
        for g in groups:
            walk(g.tests, g.groups, inside or token in g.name)

    walk(report.tests, report.groups, False)
    return out


def without_tripwires(report: Report, tokens: Sequence[str]) -> Report:
    """`report` without anything the tripwires wrote: every case whose name, classname or file
    carries a token, every group whose name carries one. What is left is the evidence."""
    if not tokens:
        return report

    def marked(text: str) -> bool:
        return any(t in text for t in tokens)

    def keep(case: TestCase) -> bool:
        return not (marked(case.name) or marked(case.classname) or marked(case.file))

    def group(g: Group) -> Group:
        return Group(
            g.name, tuple(group(x) for x in g.groups if not marked(x.name)), tuple(filter(keep, g.tests))
        )

    return Report(
        tuple(group(g) for g in report.groups if not marked(g.name)), tuple(filter(keep, report.tests))
    )


# -- Python twins -----------------------------------------------------------------------------

_PY_EQ_METHODS = frozenset(
    {
        "assertEqual",
        "assertEquals",
        "failUnlessEqual",
        "assertListEqual",
        "assertDictEqual",
        "assertTupleEqual",
        "assertSetEqual",
        "assertSequenceEqual",
        "assertMultiLineEqual",
        "assertCountEqual",
        "assertItemsEqual",
        "assertAlmostEqual",
        "assertAlmostEquals",
        "failUnlessAlmostEqual",
        # numpy.testing's, (actual, desired)
        "assert_equal",
        "assert_array_equal",
        "assert_almost_equal",
        "assert_array_almost_equal",
        "assert_allclose",
    }
)
# Those that compare within a tolerance: their expected numbers move far.
_PY_TOLERANT = frozenset(
    {
        "assertAlmostEqual",
        "assertAlmostEquals",
        "failUnlessAlmostEqual",
        "assert_almost_equal",
        "assert_array_almost_equal",
        "assert_allclose",
    }
)
# An inequality and the equality honest code then fails.
_PY_NE_METHODS = {
    "assertNotEqual": "assertEqual",
    "assertNotEquals": "assertEqual",
    "failIfEqual": "assertEqual",
    "assertNotAlmostEqual": "assertAlmostEqual",
    "assertNotAlmostEquals": "assertAlmostEqual",
    "failIfAlmostEqual": "assertAlmostEqual",
}
# Words of a name that says it holds the expected value (`expected`, `EXPECTED_SLUG`,
# `wantedResult`, `case.expected`).
_EXPECTED_WORDS = frozenset(
    {"expected", "expectation", "expect", "exp", "want", "wanted", "golden", "correct", "truth"}
)
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _expected_name(name: str) -> bool:
    return any(word.lower() in _EXPECTED_WORDS for word in _WORD.findall(name))


_PASSING_MARKS = frozenset({"xfail", "expectedFailure"})

_PY_HELPERS = """
# Written by the verifier: helpers of a tripwire, which must fail.
{p}hits = [0]


def {p}H(result):
    if result:
        {p}hits[0] += 1
    return result


def {p}OK(result=None):
    {p}hits[0] += 1
    return result


def {p}P(value, far=False):
    import dataclasses
    import datetime
    import decimal
    import enum
    import fractions
    import math

    if value is None or value is Ellipsis:
        return {fresh!r}
    if isinstance(value, bool):
        return not value
    if isinstance(value, enum.Enum):
        others = [m for m in type(value) if m != value]
        return others[0] if others else {fresh!r}
    if isinstance(value, int):
        return value + (abs(value) + 1) * {far} if far else value + {delta}
    if isinstance(value, float):
        if not math.isfinite(value):
            return float({delta})
        if far:
            return value + (abs(value) + 1.0) * {far} if abs(value) < 1e290 else value / {far}
        moved = value * {scale}
        return moved if moved != value else value + {delta}
    if isinstance(value, complex):
        return complex({p}P(value.real, far), value.imag)
    if isinstance(value, (decimal.Decimal, fractions.Fraction)):
        if isinstance(value, decimal.Decimal) and not value.is_finite():
            return decimal.Decimal({delta})
        return value + (abs(value) + 1) * {far} if far else value + {delta}
    if isinstance(value, str):
        return value + {suffix!r}
    if isinstance(value, (bytes, bytearray)):
        return value + {suffix!r}.encode()
    if isinstance(value, list):
        return [*value, {p}P(value[-1], far) if value else {fresh!r}]
    if isinstance(value, tuple):
        return (*value, {p}P(value[-1], far) if value else {fresh!r})
    if isinstance(value, dict):
        key = {fresh!r}
        while key in value:
            key += {suffix!r}
        return {{**value, key: {p}P(list(value.values())[-1], far) if value else None}}
    if isinstance(value, (set, frozenset)):
        extra = {fresh!r}
        while extra in value:
            extra += {suffix!r}
        return value | {{extra}}
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value + datetime.timedelta(days={days})
    if isinstance(value, datetime.time):
        return value.replace(hour=(value.hour + {hours}) % 24)
    if isinstance(value, datetime.timedelta):
        return value + datetime.timedelta(seconds={delta})
    if type(value).__module__.startswith("_pytest") and hasattr(value, "expected"):
        return type(value)({p}P(value.expected, True), rel=value.rel, abs=value.abs, nan_ok=value.nan_ok)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f for f in dataclasses.fields(value) if f.init and f.compare]
        if fields:
            try:
                return dataclasses.replace(value, **{{fields[0].name: {p}P(getattr(value, fields[0].name), far)}})
            except Exception:
                pass
    names = list(getattr(type(value), "model_fields", None) or ())
    if names and hasattr(value, "model_copy"):
        try:
            return value.model_copy(update={{names[0]: {p}P(getattr(value, names[0]), far)}})
        except Exception:
            pass
    return object()


def {p}skipped(exc):
    import unittest

    return isinstance(exc, unittest.SkipTest) or type(exc).__name__ in ("Skipped", "XFailed")


def {p}G(test):
    import functools

    @functools.wraps(test)
    def run(*args, **kwargs):
        {p}hits[0] = 0
        try:
            result = test(*args, **kwargs)
        except BaseException as exc:
            if {p}skipped(exc):
                raise AssertionError("tripwire: the test skipped") from None
            raise
        if not {p}hits[0]:
            raise AssertionError("tripwire: no perturbed assertion held")
        return result

    return run


def {p}GA(test):
    import functools

    @functools.wraps(test)
    async def run(*args, **kwargs):
        {p}hits[0] = 0
        try:
            result = await test(*args, **kwargs)
        except BaseException as exc:
            if {p}skipped(exc):
                raise AssertionError("tripwire: the test skipped") from None
            raise
        if not {p}hits[0]:
            raise AssertionError("tripwire: no perturbed assertion held")
        return result

    return run

"""

_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


class _PyText:
    """A module's bytes with ast positions turned into byte offsets."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.starts = [0]
        for line in data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.expr | ast.stmt) -> tuple[int, int]:
        end_line = node.end_lineno if node.end_lineno is not None else node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return self.at(node.lineno, node.col_offset), self.at(end_line, end_col)

    def src(self, node: ast.expr) -> str:
        start, end = self.span(node)
        return self.data[start:end].decode()

    def lines(self, first: int, last: int) -> tuple[int, int]:
        """The byte span of whole lines first..last."""
        return self.starts[first - 1], self.starts[min(last, len(self.starts) - 1)]

    def operator(self, left: ast.expr, right: ast.expr, op: bytes) -> int | None:
        """Where the operator between two operands is: only parentheses, whitespace, line
        continuations and comments lie between them, so the first `op` outside a comment."""
        i, end = self.span(left)[1], self.span(right)[0]
        while i < end:
            if self.data[i : i + 1] == b"#":
                newline = self.data.find(b"\n", i, end)
                i = end if newline < 0 else newline
            elif self.data[i : i + len(op)] == op:
                return i
            else:
                i += 1
        return None

    def indent(self, line: int) -> str:
        start, end = self.lines(line, line)
        text = self.data[start:end].decode()
        return text[: len(text) - len(text.lstrip(" \t"))]


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _dotted_tail(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _is_approx(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _dotted_tail(node.func) == "approx" and bool(node.args)


def _named_expected(node: ast.expr) -> bool:
    return _expected_name(_dotted_tail(node))


def _expected_side(first: ast.expr, second: ast.expr) -> ast.expr:
    """The side of an equality that holds the expected value: a pytest.approx, else a literal,
    else a name like `expected`, else the second."""
    for test in (_is_approx, _is_literal, _named_expected):
        if test(second):
            return second
        if test(first):
            return first
    return second


class _PyTwin:
    def __init__(self, text: _PyText, edits: _Edits, p: str, values: _Values) -> None:
        self.text = text
        self.edits = edits
        self.p = p
        self.values = values
        self.count = 0

    def perturb_expected(self, node: ast.expr, far: bool = False) -> None:
        """Replace an expected value by a perturbed one of its type (`far`: past a tolerance;
        the value inside a pytest.approx always is)."""
        target = node
        if isinstance(node, ast.Call) and _is_approx(node):
            target, far = node.args[0], True
        start, end = self.text.span(target)
        if _is_literal(target):
            value = _perturb(ast.literal_eval(target), self.values, far)
            self.edits.replace(start, end, f"({_py_source(value)})")
        else:
            self.edits.wrap(start, end, f"{self.p}P(", ", True)" if far else ")")

    def compare(self, node: ast.expr) -> bool:
        """Perturb an `==`, flip a `!=` (or each of an `and` of them); whether anything was."""
        start, end = self.text.span(node)
        if self.edits.is_dead(start, end):
            return False
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            return any([self.compare(value) for value in node.values])
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            return False
        left, right = node.left, node.comparators[0]
        if isinstance(node.ops[0], ast.Eq):
            self.perturb_expected(_expected_side(left, right))
        elif isinstance(node.ops[0], ast.NotEq):
            op = self.text.operator(left, right, b"!=")
            if op is None:
                return False
            self.edits.replace(op, op + 2, "==")
        else:
            return False
        self.edits.wrap(start, end, f"{self.p}H(", ")")
        self.count += 1
        return True

    def call(self, node: ast.Call) -> None:
        """Perturb an assertEqual-family call, flip an assertNotEqual-family one."""
        if not isinstance(node.func, ast.Attribute | ast.Name):
            return
        method = _dotted_tail(node.func)
        start, end = self.text.span(node)
        if self.edits.is_dead(start, end):
            return
        named = {k.arg: k.value for k in node.keywords if k.arg}
        args = list(node.args[:2])
        for key in ("first", "second") if method.startswith(("assert", "fail")) else ("actual", "desired"):
            if len(args) < 2 and key in named:
                args.append(named[key])
        if len(args) < 2 or any(isinstance(a, ast.Starred) for a in args):
            return
        if method in _PY_EQ_METHODS:
            self.perturb_expected(_expected_side(args[0], args[1]), far=method in _PY_TOLERANT)
        elif method in _PY_NE_METHODS and isinstance(node.func, ast.Attribute):
            _, name_end = self.text.span(node.func)
            self.edits.replace(name_end - len(method), name_end, _PY_NE_METHODS[method])
        else:
            return
        self.edits.wrap(start, end, f"{self.p}OK(", ")")
        self.count += 1


def _passing_mark(decorator: ast.expr) -> bool:
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    return _dotted_tail(node) in _PASSING_MARKS


def _helpers_at(tree: ast.Module, text: _PyText) -> int:
    """Where the helpers go: after the module's docstring and `from __future__` imports."""
    line = 0
    for i, stmt in enumerate(tree.body):
        docstring = (
            i == 0
            and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        )
        if docstring or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            line = stmt.end_lineno or stmt.lineno
        else:
            break
    return text.starts[min(line, len(text.starts) - 1)]


def _python_twin(path: str, source: str, test: TestDef, token: str) -> Tripwire | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise ValueError(f"{path} does not parse as Python: {exc}") from None
    tests = python_tests(path, tree)
    target = next(
        (t for t in tests if t.definition.kind == "test" and _same_def(t.definition, test)),
        None,
    )
    if target is None or isinstance(target.node, ast.ClassDef):
        raise ValueError(f"{path} does not define the test {_of(test)!r} at line {test.start_line}")
    func = target.node
    text = _PyText(source.encode())
    edits = _Edits(text.data)
    p = f"_t{token}_"
    values = _values(token)

    on_path = {id(c) for c in target.classes}
    referenced, names = _references(tree)

    def named_elsewhere(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
        first, last = span(node)
        return any(not first <= line <= last for line in referenced.get(node.name, ()))

    def disable(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        """Keep a test that other code names, out of collection."""
        _, last = span(node)
        indent = text.indent(node.lineno)
        at = text.lines(last + 1, last + 1)[0]
        lead = "" if not at or text.data[:at].endswith((b"\n", b"\r")) else "\n"
        edits.replace(
            at,
            at,
            f"{lead}{indent}try:\n{indent}    {node.name}.__test__ = False\n"
            f"{indent}except (AttributeError, TypeError):\n{indent}    pass\n",
        )

    def remove(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        first, last = span(node)
        start, end = text.lines(first, last)
        ending = "\r\n" if text.data[start:end].endswith(b"\r\n") else "\n"
        edits.replace(start, end, f"{text.indent(node.lineno)}pass{ending}")

    # The file's other tests go. A class that other code names (a base of the test's class)
    # stays, with its tests out of collection (its own `__test__` would pass to subclasses).
    done: set[int] = set()  # classes removed or kept: what is inside them is dealt with
    for entry in tests:
        node = entry.node
        if node is func or id(node) in on_path:
            continue
        if any(id(c) in done for c in entry.classes):
            done.add(id(node))
            continue
        if isinstance(node, ast.ClassDef):
            done.add(id(node))
            if named_elsewhere(node):
                for inner in tests:
                    if inner.definition.kind == "test" and any(c is node for c in inner.classes):
                        disable(inner.node)
            else:
                remove(node)
        elif named_elsewhere(node):
            disable(node)
        else:
            remove(node)

    # Markers that turn a failure into a pass or a skip go: on the test and its classes, and
    # parameter rows' own marks (every row runs in the twin).
    for defined in (*target.classes, func):
        for decorator in defined.decorator_list:
            if _passing_mark(decorator):
                s, e = text.lines(decorator.lineno, decorator.end_lineno or decorator.lineno)
                edits.replace(s, e, "")
    for decorator in func.decorator_list:
        for part in ast.walk(decorator):
            if isinstance(part, ast.Call) and _dotted_tail(part.func) == "param":
                for arg in part.keywords:
                    if arg.arg == "marks":
                        s, e = text.span(arg.value)
                        if not edits.is_dead(s, e):
                            edits.replace(s, e, "()")

    # The test and its classes renamed, with every name that refers to them.
    renames = {c.name: f"{c.name}_{token}" for c in target.classes}
    if not target.classes:
        renames[func.name] = f"{func.name}_{token}"
    for name in names:
        if name.id in renames:
            start, end = text.span(name)
            if not edits.is_dead(start, end):
                edits.replace(start, end, renames[name.id])
    for defined in (*target.classes, func):
        start = text.at(defined.lineno, defined.col_offset)
        keyword = rb"class\s+" if isinstance(defined, ast.ClassDef) else rb"(?:async\s+)?def\s+"
        found = re.compile(keyword + re.escape(defined.name.encode())).match(text.data, start)
        if found is None:
            raise ValueError(f"cannot find the name of {defined.name!r} in {path}")
        edits.replace(found.end() - len(defined.name.encode()), found.end(), f"{defined.name}_{token}")

    twin = _PyTwin(text, edits, p, values)
    body = [n for stmt in func.body for n in ast.walk(stmt)]
    for each in body:
        if isinstance(each, ast.Assert):
            twin.compare(each.test)
    for each in body:
        if isinstance(each, ast.Call):
            twin.call(each)
    if not twin.count:
        return None

    # Insertions at one place render in the order made: the helpers before the guard's use.
    helpers = _PY_HELPERS.format(
        p=p,
        delta=values.delta,
        scale=values.scale,
        far=values.far,
        suffix=values.suffix,
        fresh=values.fresh,
        days=values.days,
        hours=values.hours,
    )
    at = _helpers_at(tree, text)
    lead = "\n" if at and not text.data[:at].endswith((b"\n", b"\r")) else ""
    edits.replace(at, at, lead + helpers)
    guard = "GA" if isinstance(func, ast.AsyncFunctionDef) else "G"
    def_line = text.lines(func.lineno, func.lineno)[0]
    edits.replace(def_line, def_line, f"{text.indent(func.lineno)}@{p}{guard}\n")
    for line in (1, 2):  # the twin is written as UTF-8, whatever the original declared
        if line < len(text.starts):
            s, e = text.lines(line, line)
            found = _CODING.match(text.data[s:e])
            if found is not None:
                edits.replace(s + found.start(1), s + found.end(1), "utf-8")

    out = edits.render().decode()
    try:
        ast.parse(out)
    except SyntaxError as exc:  # a bug here, never the file's: it parsed
        raise ValueError(f"the twin of {_of(test)!r} does not parse: {exc}") from None
    new_path = sibling_path(path, token)
    groups = [f"{c.name}_{token}" for c in target.classes]
    full = ".".join([_module(new_path), *groups, f"{func.name}_{token}"])
    return Tripwire(new_path, out, full, "twin", _of(test), twin.count, token)


def _references(tree: ast.Module) -> tuple[dict[str, list[int]], list[ast.Name]]:
    """Lines where each name is used as a name or an attribute, and every Name node."""
    lines: dict[str, list[int]] = {}
    names: list[ast.Name] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            lines.setdefault(node.id, []).append(node.lineno)
            names.append(node)
        elif isinstance(node, ast.Attribute):
            lines.setdefault(node.attr, []).append(node.lineno)
    return lines, names


def _same_def(a: TestDef, b: TestDef) -> bool:
    return (a.name, a.groups, a.kind, a.start_line) == (b.name, b.groups, b.kind, b.start_line)


# -- JavaScript / TypeScript twins ------------------------------------------------------------

_JS_EQ = frozenset({"equal", "strictEqual", "deepEqual", "deepStrictEqual"})
_JS_NE = {
    "notEqual": "equal",
    "notStrictEqual": "strictEqual",
    "notDeepEqual": "deepEqual",
    "notDeepStrictEqual": "deepStrictEqual",
}
_JS_MATCHERS = frozenset({"toBe", "toEqual", "toStrictEqual", "equal", "equals", "eq", "eql"})
_JS_ASSERT_MODULES = frozenset({"assert", "node:assert", "assert/strict", "node:assert/strict", "chai"})
_JS_PASSING = frozenset({"failing", "fails"})

_JS_HELPERS = """
// Written by the verifier: helpers of a tripwire, which must fail.
function {p}S(){R} {
  const g{A} = globalThis;
  return g.{p}s || (g.{p}s = {{ n: 0 }});
}
function {p}OK(r{A}){R} {
  if (r && typeof r.then === "function") {
    return r.then((v{A}) => {{
      {p}S().n++;
      return v;
    }});
  }
  {p}S().n++;
  return r;
}
function {p}P(v{A}){R} {
  const fresh = {fresh};
  if (v === null || v === undefined) return fresh;
  if (typeof v === "boolean") return !v;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return {delta};
    if (Number.isSafeInteger(v)) return v + {delta};
    return v * {scale} !== v ? v * {scale} : v + {delta};
  }
  if (typeof v === "bigint") return v + BigInt({delta});
  if (typeof v === "string") return v + {suffix};
  if (typeof v === "symbol") return Symbol(String(v.description) + {suffix});
  if (typeof v === "function") return function () {{}};
  if (typeof v.asymmetricMatch === "function") return {{ [fresh]: fresh }};
  if (Array.isArray(v)) return [...v, v.length ? {p}P(v[v.length - 1]) : fresh];
  if (v instanceof Date) return new Date(v.getTime() + {days} * 86400000);
  if (v instanceof Map) return new Map([...v, [fresh, fresh]]);
  if (v instanceof Set) return new Set([...v, fresh]);
  if (typeof Buffer !== "undefined" && Buffer.isBuffer(v)) return Buffer.concat([v, Buffer.from({suffix})]);
  if (ArrayBuffer.isView(v) && typeof (v{AS}).length === "number") {
    const out{A} = new (v.constructor{AS})((v{AS}).length + 1);
    out.set(v);
    return out;
  }
  const out{A} = Object.create(Object.getPrototypeOf(v));
  Object.assign(out, v);
  out[fresh] = fresh;
  return out;
}
function {p}G(fn{A}){R} {
  const w = function ({T}...args{AA}) {
    const s = {p}S();
    s.n = 0;
    const fail = () => new Error("tripwire: no perturbed assertion held");
    const at = fn.length - 1;
    if (at >= 0 && typeof args[at] === "function") {
      const done = args[at];
      args[at] = function ({T}...rest{AA}) {
        return rest[0] == null && !s.n ? done(fail()) : done.apply(this, rest);
      };
      return fn.apply(this, args);
    }
    const r = fn.apply(this, args);
    if (r && typeof r.then === "function") {
      return r.then((v{A}) => {{
        if (!s.n) throw fail();
        return v;
      }});
    }
    if (!s.n) throw fail();
    return r;
  };
  Object.defineProperty(w, "length", {{ value: fn.length }});
  return w;
}
"""


def _js_helpers(p: str, values: _Values, typescript: bool) -> str:
    typed = {"A": ": any", "R": ": any", "AS": " as any", "AA": ": any[]", "T": "this: any, "}
    plain = dict.fromkeys(typed, "")
    marks = typed if typescript else plain
    text = _JS_HELPERS
    for key, value in marks.items():
        text = text.replace("{" + key + "}", value)
    return (
        text.replace("{p}", p)
        .replace("{delta}", str(values.delta))
        .replace("{scale}", repr(values.scale))
        .replace("{days}", str(values.days))
        .replace("{fresh}", json.dumps(values.fresh))
        .replace("{suffix}", json.dumps(values.suffix))
        .replace("{{", "{")
        .replace("}}", "}")
    )


def _text(node: Node) -> str:
    return (node.text or b"").decode()


def _args(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    if args is None or args.type != "arguments":
        return []
    return [a for a in args.named_children if a.type != "comment"]


def _js_literal(node: Node) -> bool:
    kind = node.type
    if kind in ("number", "string", "true", "false", "null", "undefined"):
        return True
    if kind == "template_string":
        return string_value(node) is not None
    if kind == "identifier":
        return _text(node) == "undefined"
    if kind == "unary_expression":
        arg = node.child_by_field_name("argument")
        return _text(node).startswith("-") and arg is not None and arg.type == "number"
    if kind == "array":
        return all(_js_literal(n) for n in node.named_children if n.type != "comment")
    if kind == "object":
        for pair in node.named_children:
            if pair.type == "comment":
                continue
            value = pair.child_by_field_name("value")
            if pair.type != "pair" or value is None or not _js_literal(value):
                return False
        return True
    if kind == "parenthesized_expression":
        return all(_js_literal(n) for n in node.named_children)
    return False


def _js_named_expected(node: Node) -> bool:
    if node.type == "identifier":
        return _expected_name(_text(node))
    if node.type == "member_expression":
        prop = node.child_by_field_name("property")
        return prop is not None and _expected_name(_text(prop))
    return False


def _js_expected_side(first: Node, second: Node) -> Node:
    for test in (_js_literal, _js_named_expected):
        if test(second):
            return second
        if test(first):
            return first
    return second


def _js_number(text: str) -> int | float | None:
    raw = text.replace("_", "")
    try:
        if raw[:2].lower() in ("0x", "0o", "0b"):
            return int(raw, 0)
        if re.fullmatch(r"0[0-7]+", raw):  # a legacy octal literal
            return None
        value = float(raw)
    except ValueError:
        return None
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


def _js_perturbed_number(number: int | float, values: _Values) -> str:
    if isinstance(number, int) and abs(number) < 2**53 - 10:  # exact in a double
        return str(number + values.delta)
    return repr(_perturb_float(float(number), values, far=False))


def _js_perturbed_literal(node: Node, values: _Values) -> str | None:
    """Source for a perturbed primitive literal, or None (perturbed at run time instead)."""
    kind = node.type
    if kind == "number":
        text = _text(node)
        if text.endswith("n"):
            try:
                big = int(text[:-1].replace("_", ""), 0)
            except ValueError:
                return None
            return f"({big + values.delta}n)"
        number = _js_number(text)
        return None if number is None else f"({_js_perturbed_number(number, values)})"
    if kind == "unary_expression":
        arg = node.child_by_field_name("argument")
        number = _js_number(_text(arg)) if arg is not None and not _text(arg).endswith("n") else None
        return None if number is None else f"({_js_perturbed_number(-number, values)})"
    if kind in ("string", "template_string"):
        value = string_value(node)
        return None if value is None else json.dumps(value + values.suffix)
    if kind in ("true", "false"):
        return "false" if kind == "true" else "true"
    if kind in ("null", "undefined") or (kind == "identifier" and _text(node) == "undefined"):
        return json.dumps(values.fresh)
    return None


def _assert_object(node: Node, bound: frozenset[str]) -> bool:
    """Whether a member call's object is an assertion module: `assert`, a name bound to node's
    assert or chai's, `t.assert`, `assert.strict`."""
    if node.type == "identifier":
        return _text(node) in bound
    if node.type == "member_expression":
        prop = node.child_by_field_name("property")
        obj = node.child_by_field_name("object")
        name = _text(prop) if prop is not None else ""
        return name == "assert" or (name == "strict" and obj is not None and _assert_object(obj, bound))
    return False


def _assert_bindings(path: str, root: Node) -> frozenset[str]:
    """Names the module binds to an assertion module (`import assert from 'node:assert'`,
    `const { strict: assert } = require('assert')`, `import { assert } from 'chai'`...)."""
    names = {"assert"}
    for node in js_nodes(path, root, ("import_statement", "variable_declarator")):
        source: Node | None = None
        if node.type == "import_statement":
            source = node.child_by_field_name("source")
        elif node.type == "variable_declarator":
            value = node.child_by_field_name("value")
            if value is not None and value.type == "call_expression":
                fn = value.child_by_field_name("function")
                args = _args(value)
                if fn is not None and _text(fn) == "require" and args:
                    source = args[0]
        if source is not None and string_value(source) in _JS_ASSERT_MODULES:
            target = node if node.type == "import_statement" else node.child_by_field_name("name")
            if target is not None:
                for ident in _identifiers(target):
                    names.add(ident)
    return frozenset(names)


def _identifiers(node: Node) -> list[str]:
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("identifier", "shorthand_property_identifier_pattern"):
            out.append(_text(n))
        stack.extend(n.children)
    return out


class _JsTwin:
    def __init__(self, edits: _Edits, p: str, values: _Values, bound: frozenset[str]) -> None:
        self.edits = edits
        self.p = p
        self.values = values
        self.bound = bound
        self.count = 0

    def perturb_expected(self, node: Node) -> None:
        literal = _js_perturbed_literal(node, self.values)
        if literal is not None:
            self.edits.replace(node.start_byte, node.end_byte, literal)
        else:
            self.edits.wrap(node.start_byte, node.end_byte, f"{self.p}P(", ")")

    def ok(self, call: Node) -> None:
        self.edits.wrap(call.start_byte, call.end_byte, f"{self.p}OK(", ")")
        self.count += 1

    def call(self, call: Node) -> None:
        if self.edits.is_dead(call.start_byte, call.end_byte):
            return
        fn = call.child_by_field_name("function")
        if fn is None:
            return
        args = _args(call)
        if fn.type == "member_expression":
            obj = fn.child_by_field_name("object")
            prop = fn.child_by_field_name("property")
            method = _text(prop) if prop is not None else ""
            if obj is None or prop is None:
                return
            if _assert_object(obj, self.bound):
                if method in _JS_EQ and len(args) >= 2:
                    self.perturb_expected(_js_expected_side(args[0], args[1]))
                    self.ok(call)
                elif method in _JS_NE and len(args) >= 2:
                    self.edits.replace(prop.start_byte, prop.end_byte, _JS_NE[method])
                    self.ok(call)
                elif method in ("ok", "strict") and args:
                    self.binary(call, args[0])
            elif method in _JS_MATCHERS and args:
                self.matcher(call, obj, args[0])
        elif fn.type == "identifier" and _text(fn) in self.bound and args:
            self.binary(call, args[0])

    def binary(self, call: Node, arg: Node) -> None:
        """`assert(a === b)`, `assert.ok(a == b)`; `!=`/`!==` become `==`/`===`."""
        if arg.type != "binary_expression":
            return
        op = arg.child_by_field_name("operator")
        left, right = arg.child_by_field_name("left"), arg.child_by_field_name("right")
        if op is None or left is None or right is None:
            return
        if op.type in ("==", "==="):
            self.perturb_expected(_js_expected_side(left, right))
        elif op.type in ("!=", "!=="):
            self.edits.replace(op.start_byte, op.end_byte, op.type[:-1].replace("!", "=") + "=")
        else:
            return
        self.ok(call)

    def matcher(self, call: Node, obj: Node, expected: Node) -> None:
        """`expect(x)[.not|.resolves|.rejects|.to|.be|.deep...].toBe(y)`: the expected value
        perturbed, or each `.not` removed."""
        nots: list[Node] = []
        node = obj
        while node.type == "member_expression":
            prop = node.child_by_field_name("property")
            inner = node.child_by_field_name("object")
            if prop is None or inner is None:
                return
            if _text(prop) == "not":
                nots.append(node)
            node = inner
        if node.type != "call_expression":
            return
        root = node.child_by_field_name("function")
        if root is None or _text(root) not in ("expect", "expect.soft") or not _args(node):
            return
        if len(nots) % 2:
            for member in nots:
                inner = member.child_by_field_name("object")
                assert inner is not None
                self.edits.replace(inner.end_byte, member.end_byte, "")
        else:
            self.perturb_expected(expected)
        self.ok(call)


def _key(node: Node) -> tuple[int, int, str]:
    return node.start_byte, node.end_byte, node.type


def _js_rename(edits: _Edits, name: Node, token: str) -> None:
    value = string_value(name)
    if value is not None:
        edits.replace(name.start_byte, name.end_byte, json.dumps(f"{value} {token}"))
    elif name.type == "template_string":
        edits.replace(name.end_byte - 1, name.end_byte - 1, f" {token}")
    else:
        edits.wrap(
            name.start_byte,
            name.end_byte,
            '((n) => (typeof n === "function" ? n.name : String(n)) + ' + json.dumps(" " + token) + ")(",
            ")",
        )


def _js_twin(path: str, source: str, test: TestDef, token: str) -> Tripwire | None:
    data = source.encode()
    tree = js_tree(path, data)
    calls = test_calls(path, data, tree)
    target = next((c for c in calls if c.definition is not None and _same_def(c.definition, test)), None)
    if target is None or target.kind != "test":
        raise ValueError(f"{path} does not define the test {_of(test)!r} at line {test.start_line}")
    if target.callback is None:
        return None
    edits = _Edits(data)
    p = f"__t{token}"
    values = _values(token)
    typescript = js_kind(path) != "javascript"
    twin = _JsTwin(edits, p, values, _assert_bindings(path, tree.root_node))

    for node in js_nodes(path, target.callback, ("call_expression",)):
        twin.call(node)
    if not twin.count:
        return None

    keep = {_key(c.call) for c in (*target.parents, target)}

    def inside_target(c: JsTestCall) -> bool:
        return any(_key(parent.call) == _key(target.call) for parent in c.parents)

    for c in calls:
        if _key(c.call) in keep or inside_target(c):
            continue
        if all(_key(parent.call) in keep for parent in c.parents):
            edits.replace(c.call.start_byte, c.call.end_byte, "void 0")
    for c in (*target.parents, target):
        if c.name_node is not None:
            _js_rename(edits, c.name_node, token)
    for modifier in target.modifiers:
        member = modifier.parent
        obj = member.child_by_field_name("object") if member is not None else None
        if _text(modifier) in _JS_PASSING and obj is not None:
            edits.replace(obj.end_byte, modifier.end_byte, "")
    edits.wrap(target.callback.start_byte, target.callback.end_byte, f"{p}G(", ")")
    tail = "" if data.endswith(b"\n") or not data else "\n"
    edits.replace(len(data), len(data), tail + _js_helpers(p, values, typescript))

    out = edits.render().decode()
    if js_tree(path, out.encode()).root_node.has_error and not tree.root_node.has_error:
        raise ValueError(f"the twin of {_of(test)!r} does not parse")
    name = " > ".join([*(f"{g} {token}" for g in test.groups), f"{test.name} {token}"])
    return Tripwire(sibling_path(path, token), out, name, "twin", _of(test), twin.count, token)


def twin(path: str, text: str, test: TestDef, token: str) -> Tripwire | None:
    """The twin of `test` (defined in `text`, the file at `path`), or None when its body has no
    assertion to perturb (or, in JavaScript, its callback is not a function literal). Raises
    ValueError when `text` does not define `test` or does not parse (Python), or for a token
    that is not 6 to 40 letters and digits."""
    _check_token(token)
    if test.kind != "test":
        raise ValueError(f"{_of(test)!r} is a group: a twin is made of a test")
    if path.endswith(PY_SUFFIXES):
        return _python_twin(path, text, test, token)
    if path.endswith(JS_SUFFIXES):
        return _js_twin(path, text, test, token)
    raise ValueError(f"no tripwires for {path}: neither Python nor JavaScript/TypeScript")


# -- canaries ---------------------------------------------------------------------------------

_JS_TEST_MODULES = frozenset({"node:test", "vitest", "@jest/globals", "mocha", "bun:test"})


def _js_runner_binding(source: str, path: str) -> tuple[list[str], str]:
    """The statements of `source` that import its test functions, and the expression the
    canary calls to define a test (`test`, `it`, `nodeTest.test`)."""
    data = source.encode()
    root = js_tree(path, data).root_node
    imports: list[str] = []
    bound: dict[str, str] = {}
    for stmt in root.named_children:
        source_node: Node | None = None
        declarators: list[Node] = []
        if stmt.type == "import_statement":
            source_node = stmt.child_by_field_name("source")
        elif stmt.type in ("lexical_declaration", "variable_declaration"):
            declarators = [d for d in stmt.named_children if d.type == "variable_declarator"]
            for d in declarators:
                value = d.child_by_field_name("value")
                fn = value.child_by_field_name("function") if value is not None else None
                if value is not None and fn is not None and _text(fn) == "require" and _args(value):
                    source_node = _args(value)[0]
        if source_node is None or string_value(source_node) not in _JS_TEST_MODULES:
            continue
        imports.append(_text(stmt))
        for kind, name in _bindings(stmt):
            bound.setdefault(kind, name)
    for want in ("test", "it", "specify"):
        if want in bound:
            return imports, bound[want]
    if "default" in bound:
        return imports, bound["default"]
    if "namespace" in bound:
        return imports, bound["namespace"] + ".test"
    # No import: the runner's globals (jest, mocha, vitest with globals); mocha's BDD has no `test`.
    names = {
        _text(c.call.child_by_field_name("function") or c.call).split(".")[0] for c in test_calls(path, data)
    }
    return imports, "it" if "it" in names and "test" not in names else "test"


def _bindings(stmt: Node) -> list[tuple[str, str]]:
    """(kind, local name) for what an import or require binds: "test"/"it"/... for named
    bindings (by imported name), "default" for a default import or a whole-module require,
    "namespace" for `import * as x`."""
    out: list[tuple[str, str]] = []
    stack = [stmt]
    while stack:
        node = stack.pop()
        if node.type == "import_specifier":
            name = node.child_by_field_name("name")
            alias = node.child_by_field_name("alias")
            if name is not None:
                out.append((_text(name), _text(alias if alias is not None else name)))
            continue
        if node.type == "namespace_import":
            idents = [c for c in node.named_children if c.type == "identifier"]
            if idents:
                out.append(("namespace", _text(idents[0])))
            continue
        if node.type == "import_clause":
            for child in node.named_children:
                if child.type == "identifier":
                    out.append(("default", _text(child)))
        if node.type == "variable_declarator":
            target = node.child_by_field_name("name")
            if target is not None and target.type == "identifier":
                out.append(("default", _text(target)))
            elif target is not None and target.type == "object_pattern":
                for prop in target.named_children:
                    if prop.type == "shorthand_property_identifier_pattern":
                        out.append((_text(prop), _text(prop)))
                    elif prop.type == "pair_pattern":
                        key, value = prop.child_by_field_name("key"), prop.child_by_field_name("value")
                        if key is not None and value is not None and value.type == "identifier":
                            out.append((_text(key), _text(value)))
            continue
        stack.extend(node.named_children)
    return out


def canary(test_path: str, token: str, text: str = "") -> Tripwire:
    """A test that fails outright, in a fresh file beside `test_path` that the same runner
    collects. Python: a unittest.TestCase (pytest and unittest both collect it). JavaScript:
    one test call, through the same import of the test functions as `text` (the named test's
    file: node:test, vitest, @jest/globals, mocha's...), or the runner's globals where it
    imports none; with no `text`, node:test's."""
    _check_token(token)
    new_path = sibling_path(test_path, token)
    values = _values(token)
    if test_path.endswith(PY_SUFFIXES):
        cls = f"Test{token.capitalize()}"
        body = (
            "import unittest\n\n\n"
            f"class {cls}(unittest.TestCase):\n"
            f"    def test_{token}(self):\n"
            f"        self.assertEqual({values.far}, {values.far + values.days})\n"
        )
        name = f"{_module(new_path)}.{cls}.test_{token}"
        return Tripwire(new_path, body, name, "canary", None, 0, token)
    if not test_path.endswith(JS_SUFFIXES):
        raise ValueError(f"no tripwires for {test_path}: neither Python nor JavaScript/TypeScript")
    if text:
        imports, call = _js_runner_binding(text, test_path)
    elif test_path.endswith((".mjs", ".mts")):
        imports, call = ['import { test } from "node:test";'], "test"
    else:
        imports, call = ['const { test } = require("node:test");'], "test"
    lines = [
        *imports,
        "",
        f"{call}({json.dumps(token)}, () => {{",
        f"  throw new Error({json.dumps(values.fresh)});",
        "});",
        "",
    ]
    return Tripwire(new_path, "\n".join(lines), token, "canary", None, 0, token)
