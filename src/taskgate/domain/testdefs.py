"""Which tests a file defines, read from its source without running it, and the naming rules
that say which paths are tests, which are on the test side and which are the harness.

Python is read with `ast`, the way pytest collects by default: module-level functions whose
name starts with `test`; classes whose name starts with `Test` and that have no `__init__`
(nor `__new__`, nor a `@dataclass` decorator), with their `test*` methods and their nested
`Test*` classes; and every `unittest.TestCase` subclass (a base whose name ends in `TestCase`,
or a class of the same file that is one), with its `test*` methods. A class body's
`__test__ = False` takes it out, `__test__ = True` puts it in. Definitions inside `if`, `try`,
`with` and loop blocks at module level count: pytest collects what the module binds.

JavaScript and TypeScript are read with tree-sitter: calls of `test`, `it`, `specify`,
`describe`, `suite`, `context` (and jasmine's `fit`, `xit`, `xtest`, `fdescribe`, `xdescribe`),
with their modifiers (`.only`, `.skip`, `.todo`, `.concurrent`, `.sequential`, `.failing`,
`.fails`, `.skipIf(...)`, `.runIf(...)`, `.each(...)`, `.for(...)`), and node:test's subtests
`t.test(...)` where `t` is the first parameter of the enclosing test's callback. The name is
the first argument when it is a string literal or a template literal without substitutions; a
call with any other name is still a test call (the tripwires remove it), but defines nothing
this module can name. Calls nest: a test's `groups` are the names of the calls around it, from
the outermost; a call around it whose name is not a literal cuts the path (its groups are the
named calls inside that one). An `.each` name is a template (`adds %i`), matched as one.

The naming rules (`is_test_path`, `is_test_side`, `is_harness`) live here, once: what the
runners collect by name, what sits on the test side of a repository, and what configures the
runner that judges.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Query, Tree

PY_SUFFIXES = (".py",)
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")


@dataclass(frozen=True)
class TestDef:
    """One test or group a file defines: its name as the runner reports it, the names of the
    groups around it (Python: its classes; JavaScript: the describe/test calls around it), and
    the lines it spans (1-based, decorators included)."""

    __test__ = False  # not a pytest test class

    path: str
    name: str
    groups: tuple[str, ...]
    kind: Literal["test", "group"]
    start_line: int
    end_line: int
    each: bool = False  # the name is a per-row template of `.each`/`.for` (`adds %i to %i`)


def defined_tests(path: str, text: str) -> list[TestDef]:
    """The tests and groups `text` (the file at `path`) defines, in source order; [] for a file
    that is neither Python nor JavaScript/TypeScript, or that Python cannot parse."""
    if path.endswith(PY_SUFFIXES):
        return _python_defs(path, text)
    if path.endswith(JS_SUFFIXES):
        return [call.definition for call in test_calls(path, text.encode()) if call.definition]
    return []


# -- Python -----------------------------------------------------------------------------------


def _module_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's statements, with those of its if/try/with/loop blocks (what the module binds
    when it runs), not those of its functions and classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.For | ast.AsyncFor | ast.While):
            yield from _module_statements(stmt.body)
            yield from _module_statements(stmt.orelse)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            yield from _module_statements(stmt.body)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            yield from _module_statements(stmt.body)
            for handler in stmt.handlers:
                yield from _module_statements(handler.body)
            yield from _module_statements(stmt.orelse)
            yield from _module_statements(stmt.finalbody)


def _dotted_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted_name(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    if isinstance(node, ast.Call):
        return _dotted_name(node.func)
    if isinstance(node, ast.Subscript):
        return _dotted_name(node.value)
    return ""


def span(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[int, int]:
    """A definition's first and last line, its decorators included."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return start, node.end_lineno or node.lineno


def _dunder_test(cls: ast.ClassDef) -> bool | None:
    """The class body's own `__test__ = True/False`, if it sets one."""
    for stmt in cls.body:
        if (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__test__" for t in stmt.targets)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, bool)
        ):
            return stmt.value.value
    return None


def _classes(body: Sequence[ast.stmt]) -> Iterator[ast.ClassDef]:
    """Every class defined in these statements, at any depth (statements only: a class is
    never inside an expression)."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.ClassDef):
            yield stmt
        inner: list[ast.stmt] = []
        for name in ("body", "orelse", "finalbody"):
            inner.extend(s for s in getattr(stmt, name, ()) if isinstance(s, ast.stmt))
        for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            inner.extend(part.body)
        stack.extend(reversed(inner))


def unittest_classes(tree: ast.Module) -> set[str]:
    """Names of the module's classes that are unittest.TestCase subclasses: a base named
    `...TestCase` (unittest's, IsolatedAsyncioTestCase, Django's), or one of these classes."""
    classes = list(_classes(tree.body))
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in found:
                continue
            for base in cls.bases:
                name = _dotted_name(base)
                if name.rsplit(".", 1)[-1].endswith("TestCase") or name in found:
                    found.add(cls.name)
                    changed = True
                    break
    return found


def collected_class(cls: ast.ClassDef, unittest_names: set[str]) -> bool:
    """Whether pytest collects tests from this class by default."""
    flag = _dunder_test(cls)
    if flag is not None:
        return flag
    if cls.name in unittest_names:
        return True
    if not cls.name.startswith("Test"):
        return False
    if any(_dotted_name(d).rsplit(".", 1)[-1] == "dataclass" for d in cls.decorator_list):
        return False
    return not any(
        isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name in ("__init__", "__new__")
        for s in cls.body
    )


@dataclass(frozen=True)
class PyTest:
    """A test or group of a Python module with its node (for the tripwires)."""

    definition: TestDef
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    classes: tuple[ast.ClassDef, ...]  # the classes around it, outermost first


def python_tests(path: str, tree: ast.Module) -> list[PyTest]:
    """The tests and groups a parsed module defines, with their nodes."""
    unittest_names = unittest_classes(tree)
    out: list[PyTest] = []

    def test(node: ast.FunctionDef | ast.AsyncFunctionDef, classes: tuple[ast.ClassDef, ...]) -> None:
        start, end = span(node)
        groups = tuple(c.name for c in classes)
        out.append(PyTest(TestDef(path, node.name, groups, "test", start, end), node, classes))

    def visit_class(cls: ast.ClassDef, outer: tuple[ast.ClassDef, ...]) -> None:
        if not collected_class(cls, unittest_names):
            return
        start, end = span(cls)
        groups = tuple(c.name for c in outer)
        out.append(PyTest(TestDef(path, cls.name, groups, "group", start, end), cls, outer))
        classes = (*outer, cls)
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name.startswith("test"):
                test(stmt, classes)
            elif isinstance(stmt, ast.ClassDef) and cls.name not in unittest_names:
                visit_class(stmt, classes)

    for stmt in _module_statements(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name.startswith("test"):
            test(stmt, ())
        elif isinstance(stmt, ast.ClassDef):
            visit_class(stmt, ())
    return out


def _python_defs(path: str, text: str) -> list[TestDef]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [t.definition for t in python_tests(path, tree)]


# -- JavaScript / TypeScript ------------------------------------------------------------------

TEST_FUNCTIONS = frozenset({"test", "it", "specify", "fit", "xit", "xtest", "xspecify"})
GROUP_FUNCTIONS = frozenset({"describe", "suite", "context", "fdescribe", "xdescribe", "xcontext"})
MODIFIERS = frozenset(
    {"only", "skip", "todo", "concurrent", "sequential", "failing", "fails", "shuffle"}
    | {"skipIf", "runIf", "each", "for", "extend"}
)
_FUNCTION_NODES = frozenset({"arrow_function", "function_expression", "generator_function"})


@cache
def _language(kind: str) -> Language:
    # Imported here: the grammars load native code, and only the verifier parses.
    from tree_sitter import Language

    if kind == "javascript":
        import tree_sitter_javascript

        return Language(tree_sitter_javascript.language())
    import tree_sitter_typescript

    if kind == "tsx":
        return Language(tree_sitter_typescript.language_tsx())
    return Language(tree_sitter_typescript.language_typescript())


@cache
def _query(kind: str, types: tuple[str, ...]) -> Query:
    from tree_sitter import Query

    return Query(_language(kind), "[" + " ".join(f"({t})" for t in types) + "] @node")


def js_nodes(path: str, under: Node, types: tuple[str, ...]) -> list[Node]:
    """The nodes of these types in `under`'s subtree (itself included), in source order, an
    enclosing node before those inside it. The search runs in tree-sitter, not in Python."""
    from tree_sitter import QueryCursor

    found = QueryCursor(_query(js_kind(path), types)).captures(under).get("node", [])
    return sorted(found, key=lambda n: (n.start_byte, -n.end_byte))


def js_kind(path: str) -> str:
    if path.endswith((".ts", ".mts", ".cts")):
        return "typescript"
    if path.endswith(".tsx"):
        return "tsx"
    return "javascript"


def js_tree(path: str, data: bytes) -> Tree:
    """`data` parsed as JavaScript, TypeScript or TSX by the path's extension (JSX parses as
    JavaScript). tree-sitter always returns a tree; `tree.root_node.has_error` says whether the
    source had syntax errors."""
    from tree_sitter import Parser

    return Parser(_language(js_kind(path))).parse(data)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _unescape(seq: str) -> str:
    r"""One JavaScript escape sequence (`\n`, `\x41`, `\u0041`, `\u{1F600}`, `\<newline>`)."""
    body = seq[1:]
    if body.startswith("u{") and body.endswith("}"):
        return chr(int(body[2:-1], 16))
    if body[:1] in ("u", "x") and len(body) > 1:
        return chr(int(body[1:], 16))
    if body in ("\n", "\r\n", "\r", "\u2028", "\u2029"):
        return ""
    return _ESCAPES.get(body, body)


def string_value(node: Node) -> str | None:
    """The value of a string literal or of a template literal without substitutions; None for
    any other node."""
    if node.type not in ("string", "template_string"):
        return None
    out: list[str] = []
    for child in node.named_children:
        text = (child.text or b"").decode()
        if child.type == "string_fragment":
            out.append(text)
        elif child.type == "escape_sequence":
            try:
                out.append(_unescape(text))
            except (ValueError, OverflowError):
                return None
        elif child.type != "comment":  # a template_substitution: not a literal
            return None
    # JavaScript strings are UTF-16: `\ud83d\ude00` is one character.
    return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


@dataclass(frozen=True)
class JsTestCall:
    """A test or group call of a JavaScript/TypeScript file, with its nodes (for the
    tripwires): the call, its name argument, its callback (None when its last argument is not
    a function literal), the member accesses naming its modifiers, and the calls around it."""

    call: Node
    kind: Literal["test", "group"]
    name_node: Node | None
    callback: Node | None
    modifiers: tuple[Node, ...]  # the `property_identifier`s of `.only`, `.failing`, `.each`...
    parents: tuple[JsTestCall, ...]
    definition: TestDef | None  # None: its name is not a literal


def _callee(
    call: Node, context_names: frozenset[str]
) -> tuple[Literal["test", "group"], bool, tuple[Node, ...]] | None:
    """What a call's callee makes it: ("test"|"group", each?, modifier nodes), or None. Reads
    `it`, `test.only`, `describe.each(t)`, `it.skipIf(c)`, `t.test` (with `t` a test context)."""
    fn = call.child_by_field_name("function")
    each = False
    modifiers: list[Node] = []
    while fn is not None:
        if fn.type == "call_expression":  # `test.each(table)(...)`, `it.skipIf(cond)(...)`
            fn = fn.child_by_field_name("function")
            continue
        if fn.type == "member_expression":
            prop = fn.child_by_field_name("property")
            obj = fn.child_by_field_name("object")
            name = (prop.text or b"").decode() if prop is not None else ""
            if obj is not None and obj.type == "identifier" and name in TEST_FUNCTIONS | GROUP_FUNCTIONS:
                base = (obj.text or b"").decode()
                if base in context_names and name == "test":
                    return "test", each, tuple(modifiers)
                if base in TEST_FUNCTIONS | GROUP_FUNCTIONS:
                    # node:test's `test.describe(...)`, `test.it(...)`
                    return ("group" if name in GROUP_FUNCTIONS else "test"), each, tuple(modifiers)
                return None
            if name not in MODIFIERS or prop is None:
                return None
            each = each or name in ("each", "for")
            modifiers.append(prop)
            fn = obj
            continue
        if fn.type == "identifier":
            name = (fn.text or b"").decode()
            if name in TEST_FUNCTIONS:
                return "test", each, tuple(modifiers)
            if name in GROUP_FUNCTIONS:
                return "group", each, tuple(modifiers)
        return None
    return None


def _first_param(function: Node) -> str | None:
    params = function.child_by_field_name("parameters")
    if params is None:
        single = function.child_by_field_name("parameter")  # `t => ...`
        return (single.text or b"").decode() if single is not None else None
    for child in params.named_children:
        if child.type == "identifier":
            return (child.text or b"").decode()
        if child.type in ("required_parameter", "optional_parameter"):
            pattern = child.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "identifier":
                return (pattern.text or b"").decode()
        return None
    return None


def _callee_of_parent(node: Node) -> bool:
    """Whether a call is the callee of the call around it (`test.each(table)` in
    `test.each(table)('name', fn)`): part of that test call, not one of its own."""
    parent = node.parent
    if parent is None or parent.type != "call_expression":
        return False
    fn = parent.child_by_field_name("function")
    return fn is not None and (fn.start_byte, fn.end_byte) == (node.start_byte, node.end_byte)


def test_calls(path: str, data: bytes, tree: Tree | None = None) -> list[JsTestCall]:
    """Every test and group call in a JavaScript/TypeScript file, in source order (a call
    before those inside it). `tree`: `data` already parsed."""
    if tree is None:
        tree = js_tree(path, data)
    out: list[JsTestCall] = []
    around: list[JsTestCall] = []  # the test calls enclosing the current one, outermost first
    for node in js_nodes(path, tree.root_node, ("call_expression",)):
        if _callee_of_parent(node):
            continue
        while around and around[-1].call.end_byte <= node.start_byte:
            around.pop()
        contexts = frozenset(
            param
            for parent in around
            if parent.kind == "test"
            and parent.callback is not None
            and parent.callback.start_byte <= node.start_byte < parent.callback.end_byte
            and (param := _first_param(parent.callback)) is not None
        )
        found = _callee(node, contexts)
        if found is None:
            continue
        kind, each, modifiers = found
        args = node.child_by_field_name("arguments")
        arg_nodes = [a for a in args.named_children if a.type != "comment"] if args is not None else []
        name_node = arg_nodes[0] if arg_nodes else None
        callback = arg_nodes[-1] if len(arg_nodes) > 1 and arg_nodes[-1].type in _FUNCTION_NODES else None
        name = string_value(name_node) if name_node is not None else None
        definition = None
        if name is not None:
            groups: list[str] = []
            for parent in reversed(around):
                if parent.definition is None:
                    break
                groups.insert(0, parent.definition.name)
            start, end = node.start_point[0] + 1, node.end_point[0] + 1
            definition = TestDef(path, name, tuple(groups), kind, start, end, each)
        record = JsTestCall(node, kind, name_node, callback, modifiers, tuple(around), definition)
        out.append(record)
        around.append(record)
    return out


# -- which definitions a ref may name ---------------------------------------------------------

_CLASS_SEP = re.compile(r"[.$]")
# jest's and vitest's printf placeholders in an `.each` name, and its `$variable` ones.
_PLACEHOLDER = re.compile(r"%[sdifjoOpc#$]|\$[A-Za-z_][\w.]*")


def _template(name: str) -> re.Pattern[str]:
    parts: list[str] = []
    last = 0
    for found in _PLACEHOLDER.finditer(name):
        parts.append(re.escape(name[last : found.start()]))
        parts.append(".*")
        last = found.end()
    parts.append(re.escape(name[last:].replace("%%", "%")))
    return re.compile("".join(parts), re.DOTALL)


def _same(expected: str, actual: str, each: bool) -> bool:
    return _template(expected).fullmatch(actual) is not None if each else expected == actual


def _python_parts(d: TestDef) -> list[str]:
    module = d.path[: -len(".py")].split("/")
    return [*module, *d.groups, d.name]


def _strip_params(ref: str) -> str:
    """`test_x[1-a.b]` -> `test_x`: pytest's parameter ids follow the name in brackets."""
    ref = ref.strip()
    at = ref.find("[")
    return ref[:at] if at > 0 and ref.endswith("]") else ref


def _names_python(d: TestDef, ref: str, parts: list[str]) -> bool:
    want = [p for p in _CLASS_SEP.split(_strip_params(ref)) if p]
    if not want:
        return False
    have = _python_parts(d)
    n = len(want)
    # `classname.name` exactly, or a dotted path through module and classes with its outer
    # parts optional: the test itself, or a class, module or package around it.
    for end in range(n, len(have) + 1):
        if have[end - n : end] == want:
            return True
    # A `>` path (or a bare name) through the groups the report could hold.
    path = [*d.groups, d.name]
    bare = [_strip_params(p) for p in parts]
    return len(bare) <= len(path) and path[-len(bare) :] == bare


def _names_js(d: TestDef, parts: list[str]) -> bool:
    path = [*d.groups, d.name]
    n = len(parts)
    # The test or group itself, or a group around it: the `>` path may end at any of them.
    for end in range(n, len(path) + 1):
        tail = path[end - n : end]
        each = d.each and end == len(path)
        if all(
            _same(have, want, each and i == n - 1)
            for i, (have, want) in enumerate(zip(tail, parts, strict=True))
        ):
            return True
    # jest-junit's default names join the describe path with spaces.
    if n == 1 and not d.each:
        return any(" ".join(path[i:]) == parts[0] for i in range(len(path)))
    return False


def defines_ref(defs: Sequence[TestDef], ref: str) -> list[TestDef]:
    """The definitions among `defs` that a criterion's ref may name, read as testrefs reads a
    ref against a report: `classname.name`, a dotted path through module and classes with outer
    parts optional (Python), a `>` path through the groups with outer groups optional, a bare
    name; a pytest parameter id (`test_x[1]`) names its function, a row of an `.each` names its
    template. "May": every reading is tried, since the report's shape is not known here."""
    # Imported here: testrefs imports the outcome rules, which import the naming rules here.
    from taskgate.domain.testrefs import segments

    parts = segments(ref)
    if not parts:
        return []
    out = []
    for d in defs:
        hit = _names_python(d, ref, parts) if d.path.endswith(PY_SUFFIXES) else _names_js(d, parts)
        if hit:
            out.append(d)
    return out


# -- naming rules -----------------------------------------------------------------------------

_JS = r"\.(js|mjs|cjs|jsx|ts|mts|cts|tsx)\Z"
_TEST_FILE = re.compile(
    r"(^|/)(test_[^/]*|[^/]*_test|conftest)\.py\Z"
    r"|(^|/)[^/]+\.(test|spec)\.[A-Za-z0-9]+\Z"
    rf"|(^|/)[^/]+[_-]test{_JS}"
    rf"|(^|/)test(-[^/]*)?{_JS}"
    # node --test runs every script under a `test` directory, whatever its name
    rf"|(^|/)test/(.+/)?[^/]+{_JS}"
    # jest's directory: its scripts, snapshots and fixtures alike (Python files there are not
    # pytest's tests)
    r"|(^|/)__tests__/.*(?<!\.py)(?<!\.pyw)\Z"
)

# Directories whose every file is on the test side: the runners' test directories, jest's
# mocks, snapshots and fixtures.
TEST_DIRS = frozenset({"test", "tests", "__tests__", "__mocks__", "__snapshots__", "__fixtures__"})

# What configures or replaces the runner that judges, by file name at any depth: pytest's
# config files and the interpreter's startup hooks; npm/yarn/pnpm settings and hooks, Yarn
# Plug'n'Play's loaders, bun's test preload config.
_HARNESS_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        ".pytest.toml",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "sitecustomize.py",
        "usercustomize.py",
        "pytest.py",
        "_pytest.py",
        "pluggy.py",
        "package.json",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".pnpmfile.cjs",
        ".pnp.cjs",
        ".pnp.js",
        ".pnp.loader.mjs",
        "bunfig.toml",
        ".babelrc",
        ".swcrc",
        ".mocharc",
        "jsconfig.json",
        "tsconfig.json",
    }
)
# By the name's first dot-separated part, any extension: the JavaScript runners' config and
# setup files, and the transpilers a runner calls (babel-jest, ts-jest read these).
_HARNESS_STEMS = frozenset(
    {
        "vitest.config",
        "vitest.workspace",
        "vitest.setup",
        "vite.config",
        "jest.config",
        "jest.setup",
        "jest-preset",
        "setupTests",
        "ava.config",
        "babel.config",
        "karma.conf",
        "playwright.config",
        ".mocharc",
        ".babelrc",
    }
)
# Directories that hold a runner or the packages it loads: a committed copy replaces them.
_HARNESS_DIRS = frozenset({"node_modules", "_pytest", "pytest", "pluggy", ".venv", "venv", "site-packages"})
_TSCONFIG = re.compile(r"tsconfig\.[^/]*\.json\Z")


def _under(path: str, dirs: Sequence[str]) -> bool:
    return any(path.startswith(d.rstrip("/") + "/") for d in dirs if d)


def is_test_path(path: str, extra_dirs: Sequence[str] = ()) -> bool:
    """Whether a runner collects `path` as a test by its naming rules: Python's `test_*.py`
    and `*_test.py` (and every `conftest.py`); JavaScript's `*.test.*`, `*.spec.*`, `*_test.*`,
    `*-test.*`, `test.*`, `test-*`, every script under a `test/` directory (node --test's
    patterns: its JUnit report names no file, so its rules are the only word on it) and
    anything but Python under a `__tests__/` directory (jest's). By name only: a helper module
    under tests/ is not a test. `extra_dirs`: directories whose every file counts (where hidden
    tests are placed)."""
    return _under(path, extra_dirs) or _TEST_FILE.search(path) is not None


def is_harness(path: str) -> bool:
    """Whether `path` configures, starts or replaces the runner that judges: pytest's config
    files and conftest.py, the interpreter's startup hooks (sitecustomize, usercustomize,
    `.pth`), copies of pytest and pluggy, virtualenvs and site-packages; package.json and the
    package managers' settings and hooks (.npmrc, .yarnrc, .pnpmfile.cjs, Plug'n'Play
    loaders), node_modules, the JavaScript runners' config and setup files (vitest, vite,
    jest, mocha, ava, karma, playwright, bun) and the transpilers they call (babel, swc,
    tsconfig/jsconfig). At any depth: pytest reads the config nearest its arguments, node the
    package.json nearest each file. pyproject.toml, setup.cfg and package.json hold the
    harness in one part only (baseline.harness_part compares it)."""
    parts = path.split("/")
    name = parts[-1]
    if name in _HARNESS_NAMES or name.endswith(".pth") or _TSCONFIG.match(name):
        return True
    if any(name.startswith(stem + ".") for stem in _HARNESS_STEMS):
        return True
    return any(p in _HARNESS_DIRS for p in parts[:-1])


def is_test_side(path: str, extra_dirs: Sequence[str] = ()) -> bool:
    """Whether `path` is on the test side: a test by the naming rules, any file under a test
    directory (helpers, `__init__.py`, fixtures, data, snapshots, mocks), or the harness."""
    if is_test_path(path, extra_dirs) or is_harness(path):
        return True
    return any(p in TEST_DIRS for p in path.split("/")[:-1])
