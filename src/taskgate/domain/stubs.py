"""Functions a change touched, with their bodies replaced by a raise: the change-sensitivity
run's source. A named test that still passes with every function the submission added or
changed stubbed out does not exercise the change.

A function is touched when a changed line (the new side's line numbers of the diff; a new file
touches every function) is in its own code: its decorators, signature and body, less the
functions nested in it. In JavaScript, where one line often holds several functions, a line is
in a function's own code when a character of it (not whitespace) is, and a function bound by a
declaration owns the declaration (`const b = () => ...;` is `b`'s, not the code around it). So
a change inside one method of a module-wide wrapper stubs that method, not the wrapper;
functions nested in a stubbed one go with it. Class bodies, module code and
everything outside the stubbed bodies stay byte for byte.

Python (read with `ast`): `def` and `async def` at any depth, methods, and lambdas assigned to a
name (`f = lambda x: ...`, class attributes too). The body (after the docstring, which stays)
becomes `raise <STUB>`; a lambda's body becomes an expression that raises. The stub raises a
BaseException subclass, so a caller's `except Exception:` (or a test's
`pytest.raises(Exception)`) does not swallow it and turn the stub into a quiet pass.

JavaScript/TypeScript (read with tree-sitter): function declarations and expressions,
generators, arrow functions (an expression body too), methods, getters, setters and
constructors, and class fields holding functions (their arrow or function is one of the
above). The body becomes `{ throw new Error(<MARKER>); }`.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from taskgate.domain.testdefs import JS_SUFFIXES, PY_SUFFIXES, js_nodes, js_tree

if TYPE_CHECKING:
    from tree_sitter import Node

MARKER = "taskgate: stubbed out to check that the named tests exercise this change"
_PY_ERROR = f'type("TaskgateStub", (BaseException,), {{}})({MARKER!r})'
PY_STUB = f"raise {_PY_ERROR}"
PY_LAMBDA_STUB = f"(_ for _ in ()).throw({_PY_ERROR})"
JS_STUB = f"{{ throw new Error({json.dumps(MARKER)}); }}"


@dataclass(frozen=True)
class Stubbed:
    """The source with the touched functions stubbed, and their names (`Class.method`,
    `outer`, `<lambda> f`)."""

    text: str
    functions: tuple[str, ...]


def stub_changed(path: str, text: str, changed_lines: frozenset[int] | None) -> Stubbed | None:
    """`text` (the file at `path`) with every touched function stubbed; None when the change
    touches no function (or the file is neither Python nor JavaScript/TypeScript).
    `changed_lines`: 1-based line numbers the diff adds or changes; None: a new file. Raises
    ValueError for a file that does not parse."""
    if path.endswith(PY_SUFFIXES):
        return _python(path, text, changed_lines)
    if path.endswith(JS_SUFFIXES):
        return _javascript(path, text, changed_lines)
    return None


Span = tuple[int, int]


def _select(spans: list[Span], owns_change: Callable[[Span, list[Span]], bool]) -> list[int]:
    """Of functions' spans in source order (an enclosing function before those inside it), the
    indexes of those to stub: those whose own code holds a change (`owns_change(span, spans of
    the functions directly inside it)`), outermost first; what is inside a stubbed function
    goes with it."""
    children: list[list[int]] = [[] for _ in spans]
    roots: list[int] = []
    around: list[int] = []
    for i, (first, last) in enumerate(spans):
        while around and not (spans[around[-1]][0] <= first and last <= spans[around[-1]][1]):
            around.pop()
        (children[around[-1]] if around else roots).append(i)
        around.append(i)
    chosen: list[int] = []
    todo = roots[::-1]
    while todo:
        i = todo.pop()
        if owns_change(spans[i], [spans[j] for j in children[i]]):
            chosen.append(i)
        else:
            todo.extend(children[i][::-1])
    return sorted(chosen)


def _in(changed: list[int], first: int, last: int) -> list[int]:
    """The sorted `changed` lines within first..last."""
    return changed[bisect.bisect_left(changed, first) : bisect.bisect_right(changed, last)]


def _splice(data: bytes, edits: list[tuple[int, int, str]]) -> bytes:
    out: list[bytes] = []
    cursor = 0
    for start, end, new in sorted(edits):
        out += [data[cursor:start], new.encode()]
        cursor = end
    out.append(data[cursor:])
    return b"".join(out)


# -- Python -----------------------------------------------------------------------------------


class _Lines:
    def __init__(self, data: bytes) -> None:
        self.starts = [0]
        for line in data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def start(self, node: ast.expr | ast.stmt) -> int:
        return self.at(node.lineno, node.col_offset)

    def end(self, node: ast.expr | ast.stmt) -> int:
        line = node.end_lineno if node.end_lineno is not None else node.lineno
        col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return self.at(line, col)


_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _py_functions(
    body: list[ast.stmt], prefix: str
) -> Iterator[tuple[str, _Function | ast.Lambda, int, int]]:
    """(name, node, first line, last line) of the functions and name-bound lambdas in `body`,
    outermost first; a function's own body follows it."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
            yield f"{prefix}{stmt.name}", stmt, first, stmt.end_lineno or stmt.lineno
            yield from _py_functions(stmt.body, f"{prefix}{stmt.name}.")
        elif isinstance(stmt, ast.ClassDef):
            yield from _py_functions(stmt.body, f"{prefix}{stmt.name}.")
        elif isinstance(stmt, ast.Assign | ast.AnnAssign) and isinstance(stmt.value, ast.Lambda):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [ast.unparse(t) for t in targets]
            yield f"{prefix}{'/'.join(names)}", stmt.value, stmt.lineno, stmt.end_lineno or stmt.lineno
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    stmts: list[ast.stmt] = []
                    for item in inner:
                        if isinstance(item, ast.stmt):
                            stmts.append(item)
                        elif isinstance(item, ast.ExceptHandler | ast.match_case):
                            stmts.extend(item.body)
                    yield from _py_functions(stmts, prefix)


def _python(path: str, text: str, changed: frozenset[int] | None) -> Stubbed | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        raise ValueError(f"{path} does not parse as Python: {exc}") from None
    data = text.encode()
    lines = _Lines(data)
    edits: list[tuple[int, int, str]] = []
    names: list[str] = []
    functions = list(_py_functions(tree.body, ""))

    lines_changed = sorted(changed or ())

    def touched(lines_of: Span, nested: list[Span]) -> bool:
        return changed is None or any(
            not any(a <= line <= b for a, b in nested) for line in _in(lines_changed, *lines_of)
        )

    for i in _select([(first, last) for _, _, first, last in functions], touched):
        name, node, _, _ = functions[i]
        names.append(name)
        if isinstance(node, ast.Lambda):
            edits.append((lines.start(node.body), lines.end(node.body), PY_LAMBDA_STUB))
            continue
        body = node.body
        documented = (
            isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        )
        if documented and len(body) == 1:
            at = lines.end(body[0])
            edits.append((at, at, f"; {PY_STUB}"))
        else:
            rest = body[1:] if documented else body
            edits.append((lines.start(rest[0]), lines.end(rest[-1]), PY_STUB))
    if not names:
        return None
    out = _splice(data, edits).decode()
    try:
        ast.parse(out)
    except SyntaxError as exc:  # a bug here, never the file's: it parsed
        raise ValueError(f"stubbing {path} broke it: {exc}") from None
    return Stubbed(out, tuple(names))


# -- JavaScript / TypeScript ------------------------------------------------------------------

_JS_FUNCTIONS = (
    "function_declaration",
    "generator_function_declaration",
    "function_expression",
    "generator_function",
    "arrow_function",
    "method_definition",
)
_TEXT = re.compile(rb"\S")


# What binds a function to a name: the function owns it, with the statement that holds it.
_BINDING = frozenset(
    {
        "variable_declarator",
        "lexical_declaration",
        "variable_declaration",
        "assignment_expression",
        "expression_statement",
        "pair",
        "field_definition",
        "public_field_definition",
        "export_statement",
        "parenthesized_expression",
    }
)


def _owned(node: Node) -> Span:
    """The bytes a function owns: its own, or those of the declaration that binds it."""
    top = node
    while top.parent is not None and top.parent.type in _BINDING:
        parent = top.parent
        if parent.type in ("lexical_declaration", "variable_declaration") and len(parent.named_children) > 1:
            break  # `const a = () => 1, b = () => 2;`: each owns its own declarator
        top = parent
    return top.start_byte, top.end_byte


def _text(node: Node | None) -> str:
    return (node.text or b"").decode() if node is not None else ""


def _js_name(node: Node) -> str:
    """A function's name for a person: its own, or the name it is bound to."""
    own = node.child_by_field_name("name")
    if own is not None:
        name = _text(own)
        parent = node.parent
        if node.type == "method_definition" and parent is not None and parent.parent is not None:
            owner = parent.parent.child_by_field_name("name")
            if owner is not None:
                return f"{_text(owner)}.{name}"
        return name
    parent = node.parent
    if parent is not None:
        for field in ("name", "left", "key", "property"):
            bound = parent.child_by_field_name(field)
            if bound is not None and bound is not node and bound.end_byte <= node.start_byte:
                return _text(bound)
    return f"<anonymous>:{node.start_point[0] + 1}"


def _javascript(path: str, text: str, changed: frozenset[int] | None) -> Stubbed | None:
    data = text.encode()
    tree = js_tree(path, data)
    if tree.root_node.has_error:
        raise ValueError(
            f"{path} does not parse as {'TypeScript' if 'ts' in path.rsplit('.', 1)[-1] else 'JavaScript'}"
        )
    found = [
        (node, body)
        for node in js_nodes(path, tree.root_node, _JS_FUNCTIONS)
        if (body := node.child_by_field_name("body")) is not None
    ]
    owned = sorted(((_owned(node), node, body) for node, body in found), key=lambda f: (f[0][0], -f[0][1]))
    spans = [span for span, _, _ in owned]
    functions = [(node, body) for _, node, body in owned]
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    lines_changed = sorted(changed or ())

    def touched(span: Span, nested: list[Span]) -> bool:
        """Whether a changed line has a character (not whitespace) in the span, outside the
        functions inside it."""
        if changed is None:
            return True
        first, last = bisect.bisect_right(starts, span[0]), bisect.bisect_right(starts, span[1] - 1)
        for line in _in(lines_changed, first, last):
            low, high = max(starts[line - 1], span[0]), min(starts[line], span[1])
            cursor = low
            for a, b in nested:
                if b <= cursor:
                    continue
                if a >= high:
                    break
                if a > cursor and _TEXT.search(data, cursor, a):
                    return True
                cursor = max(cursor, b)
            if cursor < high and _TEXT.search(data, cursor, high):
                return True
        return False

    edits: list[tuple[int, int, str]] = []
    names: list[str] = []
    for i in _select(spans, touched):
        node, body = functions[i]
        edits.append((body.start_byte, body.end_byte, JS_STUB))
        names.append(_js_name(node))
    if not names:
        return None
    out = _splice(data, edits).decode()
    if js_tree(path, out.encode()).root_node.has_error:
        raise ValueError(f"stubbing {path} broke it")
    return Stubbed(out, tuple(names))
