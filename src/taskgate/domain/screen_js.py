"""The screen's reading of JavaScript and TypeScript: tree-sitter's syntax tree, the rules of
domain/screen.py applied to calls, member lookups and assignments rather than to lines.

Names are followed through what the file binds them to: `const p = process`,
`const { exit } = require('node:process')`, `import * as a from 'node:assert'`,
`import fs = require('fs')`. Comments and strings are not code (a string is read where it is an
argument: a path handed to `fs`, an event handed to `process.on`). A file tree-sitter cannot
parse cleanly returns None, and the screen reads it line by line instead.

Imported only when the screen meets JavaScript or TypeScript: tree-sitter is no part of the
serving path.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache

import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser, Query, QueryCursor

from taskgate.domain.screen import REPORT_TEXT, AddedFile, Hit, clip, names_test_path

# Where a module's name is one of these, its local names stand for it (`node:` and `/strict`
# forms read as the plain name).
_ASSERT_MODULES = frozenset({"assert", "chai", "expect", "should", "node:test", "test"})
_TEST_FRAMEWORKS = re.compile(r"^(node:test|vitest|@vitest/.+|@jest/.+|jest|mocha|chai|ava|tap|uvu|jasmine)$")
_HOOK_EVENTS = frozenset(
    {
        "uncaughtException",
        "uncaughtExceptionMonitor",
        "unhandledRejection",
        "exit",
        "beforeExit",
        "SIGINT",
        "SIGTERM",
        "SIGHUP",
        "SIGBREAK",
    }
)
_LISTENERS = frozenset(
    {"on", "once", "addListener", "prependListener", "prependOnceListener", "off", "removeListener"}
)
_TEST_ENV_NAMES = frozenset(
    {
        "NODE_TEST_CONTEXT",
        "JEST_WORKER_ID",
        "VITEST",
        "VITEST_WORKER_ID",
        "VITEST_POOL_ID",
        "VITEST_MODE",
        "__vitest_worker__",
        "__vitest_environment__",
        "npm_lifecycle_event",
        "npm_lifecycle_script",
    }
)
_MODULE_INTERNALS = frozenset(
    {
        "_cache",
        "_load",
        "_resolveFilename",
        "_extensions",
        "_compile",
        "_pathCache",
        "_findPath",
        "_nodeModulePaths",
        "_initPaths",
        "wrap",
        "wrapper",
        "register",
        "prototype",
        "syncBuiltinESMExports",
    }
)
_VM_CALLS = frozenset(
    {
        "runInThisContext",
        "runInNewContext",
        "runInContext",
        "compileFunction",
        "Script",
        "SourceTextModule",
        "SyntheticModule",
    }
)
_FS_READS = frozenset(
    {
        "readFileSync",
        "readFile",
        "createReadStream",
        "readdirSync",
        "readdir",
        "opendir",
        "opendirSync",
        "open",
        "openSync",
        "glob",
        "globSync",
    }
)
_FS_WRITES = frozenset(
    {
        "writeFileSync",
        "writeFile",
        "appendFileSync",
        "appendFile",
        "createWriteStream",
        "renameSync",
        "rename",
        "copyFileSync",
        "copyFile",
        "cpSync",
        "cp",
        "rmSync",
        "rm",
        "unlinkSync",
        "unlink",
        "truncateSync",
        "truncate",
        "symlinkSync",
        "symlink",
        "linkSync",
        "link",
        "utimesSync",
        "utimes",
    }
)
# fs calls whose names nothing else has: read by name, whatever the receiver is called.
_FS_DISTINCT = frozenset(
    {m for m in _FS_READS | _FS_WRITES if m.endswith("Sync") or m.startswith(("create", "appendFile"))}
)
_SOURCE_TEXT = re.compile(r"\.([cm]?[jt]sx?|py)\b")
_WRAPPERS = frozenset(
    {
        "parenthesized_expression",
        "as_expression",
        "non_null_expression",
        "satisfies_expression",
        "type_assertion",
    }
)


@lru_cache(maxsize=3)
def _parser(dialect: str) -> Parser:
    if dialect == "tsx":
        language = Language(tree_sitter_typescript.language_tsx())
    elif dialect == "typescript":
        language = Language(tree_sitter_typescript.language_typescript())
    else:
        language = Language(tree_sitter_javascript.language())
    return Parser(language)


def _dialect(path: str) -> str:
    if path.endswith(".tsx"):
        return "tsx"
    if path.endswith((".ts", ".mts", ".cts")):
        return "typescript"
    return "javascript"


def _module_name(spec: str) -> str:
    name = spec.removeprefix("node:")
    if name in ("test", "assert/strict", "fs/promises"):
        return {"test": "node:test", "assert/strict": "assert", "fs/promises": "fs"}[name]
    return name


def _text(n: Node) -> str:
    return (n.text or b"").decode("utf-8", "replace")


def _unwrap(n: Node | None) -> Node | None:
    while n is not None and n.type in _WRAPPERS:
        n = n.named_children[0] if n.named_children else None
    return n


def _string(n: Node | None) -> str | None:
    """The value of a string literal (or a template without substitutions)."""
    n = _unwrap(n)
    if n is None or n.type not in ("string", "template_string"):
        return None
    if any(c.type == "template_substitution" for c in n.children):
        return None
    return "".join(_text(c) for c in n.named_children if c.type in ("string_fragment", "escape_sequence"))


def _strings(n: Node) -> Iterator[str]:
    """Every string fragment under `n`, template parts included."""
    stack = [n]
    while stack:
        node = stack.pop()
        if node.type == "string_fragment":
            yield _text(node)
        stack.extend(node.children)


class _Js:
    def __init__(self, f: AddedFile, is_bin: bool, test_dirs: Sequence[str]) -> None:
        self.f = f
        self.lines = f.text.splitlines()
        self.added = sorted(f.added)
        self.is_bin = is_bin
        self.test_dirs = test_dirs
        self.hits: list[Hit] = []
        self.modules: dict[str, str] = {"process": "process", "require": "require", "Error": "Error"}
        self.members: dict[str, tuple[str, str]] = {}  # local name -> (module, member)

    # -- where a hit goes ------------------------------------------------------------------------

    def _first_added(self, n: Node) -> int | None:
        start, end = n.start_point.row + 1, n.end_point.row + 1
        i = bisect.bisect_left(self.added, start)
        return self.added[i] if i < len(self.added) and self.added[i] <= end else None

    def hit(self, n: Node, rule: str) -> None:
        if self.is_bin and rule in ("js.exit", "js.argv"):
            return
        line = self._first_added(n)
        if line is not None:
            self.hits.append(Hit(self.f.path, line, rule, clip(self.lines[line - 1])))

    # -- what names stand for --------------------------------------------------------------------

    def bind(self, captures: dict[str, list[Node]]) -> None:
        """The file's bindings of modules and their members, wherever they are."""
        for n in captures.get("declare", []):
            self._declarator(n)
        for n in captures.get("import", []):
            self._import(n)

    def _declarator(self, n: Node) -> None:
        name, value = n.child_by_field_name("name"), _unwrap(n.child_by_field_name("value"))
        if name is None or value is None:
            return
        if value.type == "await_expression" and value.named_children:
            value = _unwrap(value.named_children[0])
        module = self._module_of(value) if value is not None else None
        if module is None:
            return
        if name.type == "identifier":
            self.modules[_text(name)] = module
        elif name.type == "object_pattern":
            for prop in name.named_children:
                if prop.type == "shorthand_property_identifier_pattern":
                    self.members[_text(prop)] = (module, _text(prop))
                elif prop.type == "pair_pattern":
                    key, local = prop.child_by_field_name("key"), prop.child_by_field_name("value")
                    if key is not None and local is not None and local.type == "identifier":
                        self.members[_text(local)] = (module, _string(key) or _text(key))

    def _module_of(self, value: Node) -> str | None:
        """The module an expression evaluates to: `require('m')`, `import('m')`, a name bound
        to one, `globalThis.process`."""
        if value.type == "call_expression":
            func, args = value.child_by_field_name("function"), value.child_by_field_name("arguments")
            if (
                func is not None
                and func.type in ("identifier", "import")
                and _text(func) in ("require", "import")
            ):
                spec = _string(args.named_children[0]) if args is not None and args.named_children else None
                return _module_name(spec) if spec else None
            return None
        return self.resolve(value)

    def _import(self, n: Node) -> None:
        source = n.child_by_field_name("source")
        require = next((c for c in n.named_children if c.type == "import_require_clause"), None)
        if require is not None:
            spec = _string(require.child_by_field_name("source"))
            local = next((c for c in require.named_children if c.type == "identifier"), None)
            if spec and local is not None:
                self.modules[_text(local)] = _module_name(spec)
            return
        spec = _string(source)
        clause = next((c for c in n.named_children if c.type == "import_clause"), None)
        if not spec or clause is None:
            return
        module = _module_name(spec)
        for part in clause.named_children:
            if part.type == "identifier":
                self.modules[_text(part)] = module
            elif part.type == "namespace_import":
                ids = [c for c in part.named_children if c.type == "identifier"]
                if ids:
                    self.modules[_text(ids[-1])] = module
            elif part.type == "named_imports":
                for spec_node in part.named_children:
                    names = [_text(c) for c in spec_node.named_children if c.type in ("identifier", "string")]
                    if names:
                        imported, alias = names[0].strip("'\""), names[-1]
                        if imported in ("default", "strict"):
                            self.modules[alias] = module
                        else:
                            self.members[alias] = (module, imported)

    def resolve(self, n: Node | None) -> str | None:
        """The module (or global: process, require, Error, module) an expression stands for."""
        n = _unwrap(n)
        if n is None:
            return None
        if n.type == "identifier":
            name = _text(n)
            if name in self.members:
                module, member = self.members[name]
                if (module, member) == ("module", "Module"):
                    return "module"
                return "assert" if (module, member) == ("assert", "strict") else None
            if name in self.modules:
                return self.modules[name]
            if name in ("assert", "expect", "chai", "should"):
                return "assert"
            if name in ("Module", "module"):
                return "module" if name == "Module" else "cjs-module"
            return None
        if n.type == "member_expression":
            obj = _unwrap(n.child_by_field_name("object"))
            prop = _text(n.child_by_field_name("property") or n)
            if (
                obj is not None
                and obj.type == "identifier"
                and _text(obj) in ("globalThis", "global", "window")
            ):
                return self.modules.get(prop) if prop in ("process", "require") else None
            if prop == "constructor" and self.resolve(obj) == "cjs-module":
                return "module"
            if prop == "strict" and self.resolve(obj) == "assert":
                return "assert"
            if prop == "promises" and self.resolve(obj) == "fs":
                return "fs"
            return None
        if n.type == "call_expression":
            return self._module_of(n)
        return None

    def member(self, n: Node) -> tuple[str | None, str] | None:
        """(what the object stands for, the member's name) for `a.b` and `a['b']`, or for a
        name bound to a module's member."""
        n = _unwrap(n) or n
        if n.type == "member_expression":
            prop = n.child_by_field_name("property")
            return self.resolve(n.child_by_field_name("object")), _text(prop) if prop is not None else ""
        if n.type == "subscript_expression":
            key = _string(n.child_by_field_name("index"))
            if key is not None:
                return self.resolve(n.child_by_field_name("object")), key
        if n.type == "identifier" and _text(n) in self.members:
            return self.members[_text(n)]
        return None

    # -- the rules -------------------------------------------------------------------------------

    def visit(self, captures: dict[str, list[Node]]) -> None:
        """The rules on the nodes the query found, those with an added line inside."""
        for name, nodes in captures.items():
            handler = self._handlers.get(name)
            if handler is None:
                continue
            for n in nodes:
                if self._first_added(n) is not None:
                    handler(n)

    @property
    def _handlers(self) -> dict[str, Callable[[Node], None]]:
        return {
            "lookup": self._on_lookup,
            "call": self._on_call_expression,
            "new": self._on_new_expression,
            "write": self._on_write_node,
            "delete": self._on_unary_expression,
            "env": self._on_env,
            "bound": self._on_bound,
            "import": self._on_import_statement,
        }

    def _on_lookup(self, n: Node) -> None:
        found = self.member(n)
        if found is not None:
            self._judge(n, found[0], found[1], _unwrap(n.child_by_field_name("object")))

    def _judge(self, n: Node, owner: str | None, name: str, obj: Node | None) -> None:
        """A lookup of `name` on what `owner` stands for (`obj`: the object's node, if any)."""
        if name == "stack" and obj is not None and obj.type == "new_expression":
            self.hit(n, "js.stack")
        if name in ("caller", "callee"):
            self.hit(n, "js.stack")
        if owner == "Error" and name in ("captureStackTrace", "prepareStackTrace", "stackTraceLimit"):
            self.hit(n, "js.stack")
        if owner == "process":
            if name in ("exit", "reallyExit", "abort", "_kill"):
                self.hit(n, "js.exit")
            elif name in ("argv", "execArgv"):
                self.hit(n, "js.argv")
            elif name in (
                "binding",
                "_linkedBinding",
                "dlopen",
                "mainModule",
                "setUncaughtExceptionCaptureCallback",
            ):
                self.hit(n, "js.hook" if name.startswith("setUncaught") else "js.require_cache")
        if owner == "require" and name in ("cache", "extensions", "main"):
            self.hit(n, "js.require_cache")
        if owner == "module" and name in _MODULE_INTERNALS:
            self.hit(n, "js.require_cache")
        if owner == "cjs-module" and name in ("parent", "children", "constructor"):
            self.hit(n, "js.require_cache")
        if owner == "assert" and name == "getState":
            self.hit(n, "js.test_env")

    def _on_call_expression(self, n: Node) -> None:
        func = _unwrap(n.child_by_field_name("function"))
        args_node = n.child_by_field_name("arguments")
        args = args_node.named_children if args_node is not None else []
        if func is None:
            return
        if func.type in ("identifier", "import"):
            name = _text(func)
            timer = name in ("setTimeout", "setInterval", "setImmediate")
            if name in ("eval", "Function") or (timer and args and _string(args[0]) is not None):
                self.hit(n, "js.dynamic")
            elif name in ("require", "import"):
                self._on_load(n, args[0] if args else None)
        found = self.member(func)
        if found is None and func.type == "identifier" and _text(func) in _FS_DISTINCT:
            found = ("fs", _text(func))  # imported by a road the file's bindings do not show
        if found is None:
            return
        owner, member = found
        if owner == "process":
            self._on_process_call(n, member, args)
        elif owner == "vm" and member in _VM_CALLS:
            self.hit(n, "js.dynamic")
        elif owner == "Error" and member == "captureStackTrace":
            self.hit(n, "js.stack")
        elif owner == "fs" or member in _FS_DISTINCT:
            self._on_fs_call(n, member)
        elif member in ("assign", "defineProperty", "defineProperties", "setPrototypeOf", "set") and args:
            target = self.resolve(args[0])
            if target in _ASSERT_MODULES or (target is not None and _TEST_FRAMEWORKS.match(target)):
                self.hit(n, "js.assert")
            elif target == "process" and any(s in ("exit", "exitCode", "reallyExit") for s in _strings(n)):
                self.hit(n, "js.exit")

    def _on_load(self, n: Node, arg: Node | None) -> None:
        spec = _string(arg)
        if spec is None:
            self.hit(n, "js.dynamic")  # a module named at run time
        elif _TEST_FRAMEWORKS.match(spec):
            self.hit(n, "js.test_env")
        elif spec.startswith(".") and names_test_path(spec, self.test_dirs):
            self.hit(n, "js.test_files")

    def _on_process_call(self, n: Node, member: str, args: Sequence[Node]) -> None:
        event = _string(args[0]) if args else None
        listens = (member in _LISTENERS or member == "emit") and event in _HOOK_EVENTS
        if listens or (member == "removeAllListeners" and (not args or event in _HOOK_EVENTS)):
            self.hit(n, "js.hook")
        elif member == "kill" and args and "pid" in _text(args[0]):
            self.hit(n, "js.exit")

    def _on_fs_call(self, n: Node, member: str) -> None:
        said = list(_strings(n))
        if member in _FS_READS and any(names_test_path(s, self.test_dirs) for s in said):
            self.hit(n, "js.test_files")
        if member in _FS_WRITES:
            own = any(_text(c) in ("__filename",) or c.type == "meta_property" for c in _descendants(n))
            if own or any(
                names_test_path(s, self.test_dirs) or REPORT_TEXT.search(s) or _SOURCE_TEXT.search(s)
                for s in said
            ):
                self.hit(n, "js.writes")

    def _on_new_expression(self, n: Node) -> None:
        ctor = _unwrap(n.child_by_field_name("constructor"))
        if ctor is None:
            return
        if ctor.type == "identifier" and _text(ctor) == "Function":
            self.hit(n, "js.dynamic")
        found = self.member(ctor)
        if found is not None and found[0] == "vm" and found[1] in _VM_CALLS:
            self.hit(n, "js.dynamic")

    def _on_write_node(self, n: Node) -> None:
        self._on_write(n, n.child_by_field_name("left"))

    def _on_unary_expression(self, n: Node) -> None:
        if n.children and n.children[0].type == "delete" and n.named_children:
            self._on_write(n, n.named_children[0])

    def _on_write(self, n: Node, left: Node | None) -> None:
        left = _unwrap(left)
        if left is None or left.type not in ("member_expression", "subscript_expression"):
            return
        found = self.member(left)
        if found is None:
            return
        owner, name = found
        if owner in _ASSERT_MODULES or (owner is not None and _TEST_FRAMEWORKS.match(owner)):
            self.hit(n, "js.assert")
        if owner == "process" and name in ("exitCode", "exit", "reallyExit"):
            self.hit(n, "js.exit")

    def _on_env(self, n: Node) -> None:
        self.hit(n, "js.test_env")

    def _on_bound(self, n: Node) -> None:
        """A name bound to a module's member (`const { exit } = process`), wherever it is used."""
        self._judge(n, *self.members[_text(n)], None)

    def _on_import_statement(self, n: Node) -> None:
        spec = _string(n.child_by_field_name("source"))
        if spec is not None:
            self._on_load(n, n.child_by_field_name("source"))


def _descendants(n: Node) -> Iterator[Node]:
    stack = [n]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _any_of(names: Iterable[str]) -> str:
    return " ".join(json.dumps(n) for n in sorted(names))


# The nodes the rules read, found by tree-sitter's queries (in C) rather than a walk of every
# node in Python: a large file has hundreds of thousands.
_LOOKUP_NAMES = frozenset(
    {
        *("stack", "caller", "callee", "captureStackTrace", "prepareStackTrace", "stackTraceLimit"),
        *("exit", "reallyExit", "abort", "_kill", "argv", "execArgv", "binding", "_linkedBinding"),
        *("dlopen", "mainModule", "setUncaughtExceptionCaptureCallback", "cache", "extensions", "main"),
        *("parent", "children", "constructor", "getState", "exitCode"),
        *_MODULE_INTERNALS,
    }
)
_CALL_MEMBERS = frozenset(
    {
        *_LISTENERS,
        *("emit", "removeAllListeners", "kill", "captureStackTrace"),
        *("assign", "defineProperty", "defineProperties", "setPrototypeOf", "set"),
        *_VM_CALLS,
        *_FS_READS,
        *_FS_WRITES,
    }
)
_CALL_NAMES = frozenset(
    {"eval", "Function", "setTimeout", "setInterval", "setImmediate", "require", *_FS_DISTINCT}
)
_QUERY = f"""
(member_expression property: (_) @name (#any-of? @name {_any_of(_LOOKUP_NAMES)})) @lookup
(subscript_expression index: (string)) @lookup
(call_expression function: (member_expression property: (_) @name (#any-of? @name {_any_of(_CALL_MEMBERS)}))) @call
(call_expression function: (subscript_expression index: (string))) @call
(call_expression function: (identifier) @name (#any-of? @name {_any_of(_CALL_NAMES)})) @call
(call_expression function: (import)) @call
(new_expression) @new
(assignment_expression left: [(member_expression) (subscript_expression)]) @write
(augmented_assignment_expression left: [(member_expression) (subscript_expression)]) @write
(unary_expression operator: "delete") @delete
((identifier) @env (#any-of? @env {_any_of(_TEST_ENV_NAMES)}))
((property_identifier) @env (#any-of? @env {_any_of(_TEST_ENV_NAMES)}))
((string_fragment) @env (#any-of? @env {_any_of(_TEST_ENV_NAMES)}))
(variable_declarator) @declare
(import_statement) @import
"""


@lru_cache(maxsize=3)
def _query(dialect: str) -> Query:
    return Query(_parser(dialect).language, _QUERY)  # type: ignore[arg-type]


def _bound_query(dialect: str, names: frozenset[str]) -> Query:
    """Uses of names bound to a module's member, which differ from file to file."""
    any_of = _any_of(names)
    return Query(
        _parser(dialect).language,  # type: ignore[arg-type]
        f"""
        ((identifier) @bound (#any-of? @bound {any_of}))
        (call_expression function: (identifier) @name (#any-of? @name {any_of})) @call
        """,
    )


def screen(f: AddedFile, *, is_bin: bool, test_dirs: Sequence[str]) -> list[Hit] | None:
    """The hits in the added lines of a JavaScript or TypeScript file, or None when tree-sitter
    finds a syntax error in it (the caller reads it line by line)."""
    dialect = _dialect(f.path)
    tree = _parser(dialect).parse(f.text.removeprefix("\ufeff").encode("utf-8"))
    if tree.root_node.has_error:
        return None
    v = _Js(f, is_bin, test_dirs)
    captures = QueryCursor(_query(dialect)).captures(tree.root_node)
    v.bind(captures)
    v.visit(captures)
    if v.members:
        v.visit(QueryCursor(_bound_query(dialect, frozenset(v.members))).captures(tree.root_node))
    return v.hits
