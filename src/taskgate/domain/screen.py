"""The screen for code that reads or ends its grader rather than computing an answer.

A submission's tests judge its code; code that looks at the test calling it (its frame, its
source line, the expected value in the caller's locals), that ends the process with success when
the failing input arrives, that hooks the interpreter's error or trace machinery, that patches
builtins, or that reads the test files, passes visible and hidden tests alike without doing the
work. Such code is rarely needed in a project's own modules, so its lines go to a human.

Only the lines a submission ADDS (against its baseline), outside test files, are screened:
existing code never trips it. A hit is not a verdict: the run waits for a human, who reopens the
task or allows the rule for that path in the verifier config (`screen_allow`).

Python files are read with `ast` (aliases of `sys`, `os`, `inspect`... are followed, and
`sys.exit` or `sys.argv` in a command-line module, under or beside a module-level
`if __name__ == "__main__":`, is its entry point, not a hit); JavaScript and TypeScript with
tree-sitter (domain/screen_js.py, imported only when such a file is screened). A file that does
not parse is read line by line with patterns. Names assembled at run time
(`getattr(sys, "_get" + "frame")`, `sys.modules[name]`) escape any screen of source text:
`eval`/`exec`/`compile`/`__import__`/`import_module`, lookups through `sys.modules` and string
literals naming the screened attributes or the runner's modules are hits for that reason.

The screen is the cheap first pass, not the defence of record: what it cannot read is
domain/loading.py's, and the grading run's tripwires catch a grader bent by any road.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from taskgate.domain import baseline

# rule id -> what it means, for the reason a human reads and for `screen_allow`.
RULES: dict[str, str] = {
    "py.frame": "reads the call stack or a caller's frame (inspect, sys._getframe, f_back/f_locals/f_globals, traceback, gc.get_referrers)",
    "py.exit": 'ends the process (os._exit, os.kill, os.exec*, signal.raise_signal, _thread.interrupt_main anywhere; sys.exit, exit or SystemExit outside an `if __name__ == "__main__":` block)',
    "py.hook": "hooks the interpreter or runs at exit or collection (sys.excepthook, sys.settrace/setprofile/addaudithook/monitoring, threading hooks, atexit, weakref.finalize, __del__, signal handlers, faulthandler, gc.callbacks)",
    "py.builtins": "patches builtins",
    "py.dynamic": "runs code built at run time (eval, exec, compile, __import__, import_module, marshal, types.CodeType/FunctionType, __code__, runpy, spec_from_file_location), which can hide any of the above",
    "py.modules": "reaches modules through sys.modules (not `in sys.modules`, not its own `sys.modules[__name__]`) or changes how modules are found (sys.meta_path, sys.path_hooks)",
    "py.argv": "reads the command line (sys.argv: which tests were asked for) outside a command-line module",
    "py.test_env": "looks at or plugs into the test runner (imports pytest, names its modules, defines pytest_* hooks, reads PYTEST_* variables)",
    "py.test_files": "opens or imports files under the test paths",
    "py.writes": "writes, moves or deletes test files, report files or source files (its own included)",
    "js.stack": "parses the call stack (new Error().stack, Error.captureStackTrace, Error.prepareStackTrace, .caller, .callee)",
    "js.exit": "ends the process (process.exit, reallyExit, abort, exitCode, process.kill of itself) outside a package.json `bin` file",
    "js.hook": "hooks the process's error, exit or signal events (uncaughtException, unhandledRejection, exit, SIGTERM..., removeAllListeners, setUncaughtExceptionCaptureCallback)",
    "js.require_cache": "reads or edits the module cache or loader (require.cache, require.extensions, Module._cache/_load/_resolveFilename/_extensions, module.register, module.parent, process.binding)",
    "js.dynamic": "runs code built at run time (eval, new Function, vm, require or import of a computed name, a string to setTimeout)",
    "js.test_env": "looks at or imports the test runner (node:test, vitest, jest..., NODE_TEST_CONTEXT, JEST_WORKER_ID, VITEST, expect.getState)",
    "js.assert": "changes the assertion library or the test framework (assigns to node:assert's, expect's or node:test's members)",
    "js.argv": "reads the command line (process.argv, process.execArgv) outside a package.json `bin` file",
    "js.test_files": "reads or imports test files",
    "js.writes": "writes, moves or deletes test files, report files or source files (its own included)",
}

PY_SUFFIXES = (".py", ".pyw")
# The largest file the screen reads; the verifier reads no more (a larger source is a hit of
# domain/loading.py, not screened).
MAX_BYTES = 16 * 1024 * 1024
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")


def is_test_file(path: str, extra_dirs: Sequence[str] = ()) -> bool:
    """True for a file its test runner reads as a test (baseline.is_test_file: the runners'
    naming rules, one place for every rule that asks), or one under `extra_dirs` (where hidden
    tests are placed). By name only: a helper module under tests/ is not a test, and code the
    submission hides there and imports is screened."""
    if any(path.startswith(d.rstrip("/") + "/") for d in extra_dirs if d):
        return True
    return baseline.is_test_file(path)


# A string that names a test path: a test directory, a test file, conftest.
_TEST_PATH_TEXT = re.compile(
    r"(^|[/\\])(tests?|__tests__)([/\\]|$)|test_\w*\.py|_test\.py|conftest|\.(test|spec)\.[cm]?[jt]sx?"
)
# A string that names a test report or the runner's files: what a write must not touch.
REPORT_TEXT = re.compile(r"junit|report|results?\b|\.xml\b|\.tap\b|pytest|TEST-", re.IGNORECASE)
# A string that names a source file.
_SOURCE_TEXT = re.compile(r"\.(py|[cm]?[jt]sx?)\b")


@dataclass(frozen=True)
class AddedFile:
    """A changed file as the submission has it: its whole text (for context) and the numbers
    (1-based) of the lines it adds against the baseline."""

    path: str
    text: str
    added: frozenset[int]


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    rule: str
    text: str  # the added line, stripped and clipped

    def quoted(self) -> str:
        return f"{self.path}:{self.line} [{self.rule}] `{self.text}`"


LINE_CHARS = 160


def clip(line: str) -> str:
    line = line.strip()
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def allowed(allow: Mapping[str, Sequence[str]], path: str, rule: str) -> bool:
    """`screen_allow`: path glob -> rule ids (or "*") a human allowed there."""
    return any(
        fnmatch.fnmatchcase(path, glob) and (rule in rules or "*" in rules) for glob, rules in allow.items()
    )


def screen(
    files: Iterable[AddedFile],
    *,
    allow: Mapping[str, Sequence[str]] | None = None,
    test_dirs: Sequence[str] = (),
    package_json: str | None = None,
) -> list[Hit]:
    """The hits among the added lines of `files` (test files skipped), in path and line order.
    `test_dirs`: more directories whose files are tests (where hidden tests are placed);
    `package_json`: the baseline's top-level package.json, for its `bin` files (a `bin` the
    submission declares is screened: it could name its library a command line)."""
    bins = _bin_files(package_json)
    hits: list[Hit] = []
    for f in files:
        if not f.added or is_test_file(f.path, test_dirs):
            continue
        if f.path.endswith(PY_SUFFIXES):
            found = _python(f, test_dirs)
        elif f.path.endswith(JS_SUFFIXES):
            found = _javascript(f, f.path in bins, test_dirs)
        else:
            continue
        hits += [h for h in found if not allowed(allow or {}, h.path, h.rule)]
    unique = {(h.path, h.line, h.rule): h for h in hits}
    return sorted(unique.values(), key=lambda h: (h.path, h.line, h.rule))


def _bin_files(package_json: str | None) -> set[str]:
    if not package_json:
        return set()
    try:
        data = json.loads(package_json)
    except ValueError:
        return set()
    bin_ = data.get("bin") if isinstance(data, dict) else None
    names = [bin_] if isinstance(bin_, str) else list(bin_.values()) if isinstance(bin_, dict) else []
    return {posixpath.normpath(n) for n in names if isinstance(n, str)}


def names_test_path(text: str, test_dirs: Sequence[str]) -> bool:
    return bool(_TEST_PATH_TEXT.search(text)) or any(d and d.strip("/") in text for d in test_dirs)


# -- Python --------------------------------------------------------------------------------------

_FRAME_ATTRS = {"f_back", "f_locals", "f_globals", "tb_frame", "gi_frame", "cr_frame", "f_code"}
_EXEC_FUNCTIONS = ("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe")
_MODULE_CALLS: dict[str, dict[str, str]] = {
    "sys": {
        "_getframe": "py.frame",
        "_current_frames": "py.frame",
        "excepthook": "py.hook",
        "unraisablehook": "py.hook",
        "settrace": "py.hook",
        "setprofile": "py.hook",
        "monitoring": "py.hook",
        "addaudithook": "py.hook",
        "breakpointhook": "py.hook",
        "set_asyncgen_hooks": "py.hook",
        "meta_path": "py.modules",
        "path_hooks": "py.modules",
        "path_importer_cache": "py.modules",
    },
    "inspect": {
        name: "py.frame"
        for name in (
            "stack",
            "currentframe",
            "getframeinfo",
            "getouterframes",
            "getinnerframes",
            "trace",
            "getsource",
            "getsourcelines",
            "getsourcefile",
            "findsource",
            "getcomments",
        )
    },
    "traceback": {
        name: "py.frame" for name in ("extract_stack", "walk_stack", "format_stack", "print_stack")
    },
    "gc": {"get_referrers": "py.frame", "get_objects": "py.frame", "callbacks": "py.hook"},
    "linecache": {"getline": "py.frame", "getlines": "py.frame"},
    "os": {
        "_exit": "py.exit",
        "abort": "py.exit",
        "kill": "py.exit",
        "killpg": "py.exit",
        **{name: "py.exit" for name in _EXEC_FUNCTIONS},
    },
    "threading": {"settrace": "py.hook", "setprofile": "py.hook", "excepthook": "py.hook"},
    "_thread": {"interrupt_main": "py.exit", "exit": "py.exit"},
    "atexit": {"register": "py.hook"},
    "weakref": {"finalize": "py.hook"},
    "signal": {
        "signal": "py.hook",
        "setitimer": "py.hook",
        "alarm": "py.hook",
        "set_wakeup_fd": "py.hook",
        "raise_signal": "py.exit",
        "pthread_kill": "py.exit",
    },
    "faulthandler": {"enable": "py.hook", "register": "py.hook", "dump_traceback_later": "py.hook"},
    "marshal": {"loads": "py.dynamic", "load": "py.dynamic"},
    "runpy": {"run_path": "py.dynamic", "run_module": "py.dynamic"},
    "zipimport": {"zipimporter": "py.dynamic"},
    # import_module by a name built at run time (below); a literal name is a plain import
    "importlib": {"reload": "py.dynamic", "__import__": "py.dynamic"},
    "types": {},  # its CodeType and FunctionType called (below): annotations name them honestly
    "shutil": {},  # writes (below)
    "builtins": {},  # any assignment to or setattr on it (below)
}
# Attribute names that, written as a string, are a way round the attribute screen.
_SCREENED_STRINGS = {
    "_getframe": "py.frame",
    "f_back": "py.frame",
    "f_locals": "py.frame",
    "f_globals": "py.frame",
    "tb_frame": "py.frame",
    "get_referrers": "py.frame",
    "currentframe": "py.frame",
    "_exit": "py.exit",
    "excepthook": "py.hook",
    "settrace": "py.hook",
    "setprofile": "py.hook",
    "addaudithook": "py.hook",
    "meta_path": "py.modules",
    "path_hooks": "py.modules",
    "__code__": "py.dynamic",
}
# Strings naming the test runner: its variables, its modules.
_RUNNER_STRINGS = re.compile(r"PYTEST_\w+|_?pytest|pluggy|(_?pytest|pluggy)\.[\w.]+")
# Attributes screened on any receiver (`sys.modules["sys"]._getframe`, a module under another
# name): nothing else in the standard library or common code is called this.
_ANY_RECEIVER = {
    "_getframe": "py.frame",
    "_current_frames": "py.frame",
    "currentframe": "py.frame",
    "get_referrers": "py.frame",
    "_exit": "py.exit",
    "interrupt_main": "py.exit",
    "raise_signal": "py.exit",
    "excepthook": "py.hook",
    "settrace": "py.hook",
    "setprofile": "py.hook",
    "addaudithook": "py.hook",
    "__code__": "py.dynamic",
    "spec_from_file_location": "py.dynamic",
    "module_from_spec": "py.dynamic",
    "exec_module": "py.dynamic",
    "meta_path": "py.modules",
    "path_hooks": "py.modules",
    "path_importer_cache": "py.modules",
}
_FILE_CALLS = {
    "open",
    "read_text",
    "read_bytes",
    "listdir",
    "scandir",
    "walk",
    "glob",
    "iglob",
    "rglob",
    "getline",
}
# Writes by any receiver (pathlib's), and by the os and shutil modules.
_PATH_WRITES = {"write_text", "write_bytes", "unlink", "touch", "symlink_to", "hardlink_to", "rmdir"}
_MODULE_WRITES = {
    "os": {
        "replace",
        "rename",
        "renames",
        "remove",
        "unlink",
        "truncate",
        "rmdir",
        "removedirs",
        "symlink",
        "link",
        "utime",
    },
    "shutil": {"copy", "copy2", "copyfile", "copytree", "move", "rmtree", "copymode", "copystat"},
}
_TEST_MODULE = re.compile(r"^(tests|test_\w*|\w*_test|conftest)$")


class _Py(ast.NodeVisitor):
    def __init__(self, f: AddedFile, test_dirs: Sequence[str]) -> None:
        self.f = f
        self.lines = f.text.splitlines()
        self.test_dirs = test_dirs
        self.hits: list[Hit] = []
        self.modules: dict[str, str] = {}  # local name -> screened module it stands for
        self.imported: dict[str, tuple[str, str]] = {}  # local name -> (module, attribute)
        self.from_imported: set[str] = set()  # every name an ImportFrom binds
        self.main_guard = 0
        # A command-line module (a `__main__` block, or `__main__.py`) reads its argv.
        self.command_line = f.path.rsplit("/", 1)[-1] == "__main__.py"
        self.allowed: set[int] = set()  # ids of sys.modules lookups that reach no module

    def hit(self, node: ast.AST, rule: str) -> None:
        line = getattr(node, "lineno", 0)
        end = getattr(node, "end_lineno", line) or line
        for n in range(line, end + 1):
            if n in self.f.added:
                self.hits.append(Hit(self.f.path, n, rule, clip(self.lines[n - 1])))
                return

    def prepare(self, tree: ast.Module) -> None:
        """Imports first, wherever they are in the file (a name used above its import is still
        it); then the sys.modules lookups that reach no module: `x in sys.modules`, its own
        `sys.modules[__name__]`."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    top = a.name.split(".")[0]
                    if top in _MODULE_CALLS:
                        self.modules[a.asname or top] = top
            elif isinstance(node, ast.ImportFrom):
                self.from_imported |= {a.asname or a.name for a in node.names}
        self.command_line = self.command_line or any(
            isinstance(n, ast.If) and _is_main_guard(n.test) for n in tree.body
        )
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and all(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
                self.allowed |= {id(c) for c in node.comparators if self._sys_modules(c)}
            elif isinstance(node, ast.Subscript) and self._sys_modules(node.value) and _is_name(node.slice):
                self.allowed.add(id(node.value))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and self._sys_modules(node.func.value)
                and node.args
                and _is_name(node.args[0])
            ):
                self.allowed.add(id(node.func.value))

    def _sys_modules(self, node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "modules"
            and isinstance(node.value, ast.Name)
            and self.modules.get(node.value.id) == "sys"
        )

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            top = a.name.split(".")[0]
            if top in ("pytest", "_pytest", "pluggy"):
                self.hit(node, "py.test_env")
            if any(_TEST_MODULE.match(part) for part in a.name.split(".")):
                self.hit(node, "py.test_files")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = (node.module or "").split(".")[0]
        if mod in ("pytest", "_pytest", "pluggy"):
            self.hit(node, "py.test_env")
        if mod == "builtins":
            self.hit(node, "py.builtins")
        if node.level == 0 and any(_TEST_MODULE.match(part) for part in (node.module or "").split(".")):
            self.hit(node, "py.test_files")
        table = _MODULE_CALLS.get(mod, {})
        for a in node.names:
            rule = table.get(a.name)
            if rule:
                self.imported[a.asname or a.name] = (mod, a.name)
                self.hit(node, rule)
            elif mod == "sys" and a.name == "modules":
                self.hit(node, "py.modules")
            elif mod == "sys" and a.name in ("argv", "orig_argv") and not self.command_line:
                self.hit(node, "py.argv")
            elif (
                mod in ("types", "shutil")
                or (mod == "os" and a.name in _MODULE_WRITES["os"])
                or (mod == "importlib" and a.name == "import_module")
            ):
                self.imported[a.asname or a.name] = (mod, a.name)

    def visit_If(self, node: ast.If) -> None:
        if _is_main_guard(node.test):
            self.main_guard += 1
            for child in node.body:
                self.visit(child)
            self.main_guard -= 1
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name == "__del__":
            self.hit(node, "py.hook")
        elif node.name.startswith("pytest_"):
            self.hit(node, "py.test_env")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets):
            self.hit(node, "py.test_env")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _FRAME_ATTRS:
            self.hit(node, "py.frame")
        if node.attr in _ANY_RECEIVER:
            self.hit(node, _ANY_RECEIVER[node.attr])
        if isinstance(node.value, ast.Name):
            mod = self.modules.get(node.value.id)
            if mod == "builtins" and isinstance(node.ctx, ast.Store):
                self.hit(node, "py.builtins")
            rule = _MODULE_CALLS.get(mod or "", {}).get(node.attr)
            if rule:
                self.hit(node, rule)
            elif mod == "sys" and node.attr == "exit" and not self.main_guard:
                self.hit(node, "py.exit")
            elif mod == "sys" and node.attr == "modules" and id(node) not in self.allowed:
                self.hit(node, "py.modules")
            elif mod == "sys" and node.attr in ("argv", "orig_argv") and not self.command_line:
                self.hit(node, "py.argv")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.hit(node, "py.builtins")
        elif node.id in self.imported:
            mod, attr = self.imported[node.id]
            if attr == "exit" and mod == "sys" and self.main_guard:
                return
            rule = _MODULE_CALLS.get(mod, {}).get(attr)
            if rule:
                self.hit(node, rule)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(exc, ast.Name) and exc.id == "SystemExit" and not self.main_guard:
            self.hit(node, "py.exit")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if isinstance(func, ast.Name):
            if name in ("eval", "exec", "__import__") or (
                name == "compile" and name not in self.from_imported
            ):
                self.hit(node, "py.dynamic")
            elif name in ("exit", "quit") and not self.main_guard:
                self.hit(node, "py.exit")
            elif name == "setattr" and node.args and _names_module(node.args[0], self.modules, "builtins"):
                self.hit(node, "py.builtins")
        loads = name == "import_module" or self._module_member(func) == ("importlib", "import_module")
        if loads and not _plain_import(node):
            self.hit(node, "py.dynamic")
        if self._module_member(func) in (("types", "CodeType"), ("types", "FunctionType")):
            self.hit(node, "py.dynamic")
        if name in _FILE_CALLS and self._mentions_test_path(node):
            self.hit(node, "py.test_files")
        if self._writes(node, func, name) and self._mentions_written_path(node):
            self.hit(node, "py.writes")
        self.generic_visit(node)

    def _module_member(self, func: ast.expr) -> tuple[str, str] | None:
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            mod = self.modules.get(func.value.id)
            return (mod, func.attr) if mod else None
        if isinstance(func, ast.Name) and func.id in self.imported:
            return self.imported[func.id]
        return None

    def _writes(self, node: ast.Call, func: ast.expr, name: str) -> bool:
        """Whether the call writes, moves or deletes a file."""
        if name == "open":
            mode_at = 1 if isinstance(func, ast.Name) else 0
            mode = node.args[mode_at] if len(node.args) > mode_at else None
            mode = next((k.value for k in node.keywords if k.arg == "mode"), mode)
            return (
                isinstance(mode, ast.Constant)
                and isinstance(mode.value, str)
                and bool(set(mode.value) & set("wax+"))
            )
        if isinstance(func, ast.Attribute) and name in _PATH_WRITES:
            return True
        found = self._module_member(func)
        return found is not None and found[1] in _MODULE_WRITES.get(found[0], set())

    def _mentions_written_path(self, node: ast.Call) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id == "__file__":
                return True
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                text = n.value
                if (
                    names_test_path(text, self.test_dirs)
                    or REPORT_TEXT.search(text)
                    or _SOURCE_TEXT.search(text)
                ):
                    return True
        return False

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str):
            return
        if node.value in _SCREENED_STRINGS:
            self.hit(node, _SCREENED_STRINGS[node.value])
        elif _RUNNER_STRINGS.fullmatch(node.value):
            self.hit(node, "py.test_env")

    def _mentions_test_path(self, node: ast.Call) -> bool:
        return any(
            isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and names_test_path(n.value, self.test_dirs)
            for n in ast.walk(node)
        )


def _plain_import(node: ast.Call) -> bool:
    """`import_module("numpy")`: a literal name, not the runner's, is as plain as `import numpy`
    (an optional-import probe); a name assembled at run time is not."""
    first = node.args[0] if node.args else None
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) or len(node.args) > 1:
        return False
    top = first.value.split(".")[0]
    return bool(top) and not _RUNNER_STRINGS.fullmatch(top) and top not in _MODULE_CALLS


def _is_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "__name__"


def _names_module(node: ast.expr, modules: Mapping[str, str], module: str) -> bool:
    return isinstance(node, ast.Name) and modules.get(node.id) == module


def _is_main_guard(test: ast.expr) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def _python(f: AddedFile, test_dirs: Sequence[str]) -> list[Hit]:
    try:
        # Python reads a UTF-8 byte order mark as nothing; ast, given text, refuses it.
        tree = ast.parse(f.text.removeprefix("\ufeff"))
    except (SyntaxError, ValueError):
        return _by_pattern(f, _PY_PATTERNS, test_dirs, "py.test_files")
    v = _Py(f, test_dirs)
    v.prepare(tree)
    v.visit(tree)
    return v.hits


# Line patterns for a Python file that does not parse (the screen still reads it).
_PY_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("py.frame", re.compile(r"\b(_getframe|f_back|f_locals|f_globals|tb_frame|get_referrers)\b|\binspect\.")),
    (
        "py.exit",
        re.compile(
            r"\bos\.(_exit|kill|killpg|exec\w+)\b|\bsys\.exit\b|\bSystemExit\b|\binterrupt_main\b|\braise_signal\b"
        ),
    ),
    (
        "py.hook",
        re.compile(
            r"\b(excepthook|settrace|setprofile|addaudithook|__del__|faulthandler)\b|\bweakref\.finalize\b"
            r"|\bsignal\.signal\b|\bgc\.callbacks\b|\batexit\b"
        ),
    ),
    ("py.builtins", re.compile(r"\bbuiltins\b|__builtins__")),
    (
        "py.dynamic",
        re.compile(r"\b(eval|exec|compile|__import__|import_module)\s*\(|\bmarshal\.|\bCodeType\b|__code__"),
    ),
    ("py.modules", re.compile(r"\bsys\s*\.\s*(modules|meta_path|path_hooks)\b")),
    ("py.argv", re.compile(r"\bsys\s*\.\s*argv\b")),
    (
        "py.test_env",
        re.compile(r"PYTEST_\w+|\bimport\s+_?pytest\b|\bfrom\s+_?pytest\b|['\"]_pytest|\bdef\s+pytest_"),
    ),
]
_FILE_READ = {
    "py.test_files": re.compile(r"\b(open|read_text|read_bytes|listdir|scandir|walk|glob|getline)\s*\("),
    "js.test_files": re.compile(
        r"\b(readFileSync|readFile|createReadStream|readdirSync|readdir|opendir|opendirSync)\s*\("
    ),
}

# -- JavaScript / TypeScript --------------------------------------------------------------------

_JS_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "js.stack",
        re.compile(
            r"\bnew\s+Error\b[^;]*?\)\s*\)?\s*\.\s*stack\b|\(\s*new\s+Error\s*\)\s*\.\s*stack\b"
            r"|\bError\s*\.\s*(captureStackTrace|prepareStackTrace|stackTraceLimit)\b"
        ),
    ),
    (
        "js.exit",
        re.compile(
            r"\bprocess\s*\.\s*(exit|reallyExit|abort)\s*\(|\bprocess\s*\.\s*kill\s*\(\s*process\s*\.\s*pid"
            r"|\bprocess\s*\.\s*exitCode\s*="
        ),
    ),
    ("js.argv", re.compile(r"\bprocess\s*\.\s*(argv|execArgv)\b")),
    (
        "js.hook",
        re.compile(
            r"\bprocess\s*\.\s*(on|once|prependListener)\s*\(\s*['\"`](uncaughtException|unhandledRejection|exit|beforeExit)"
        ),
    ),
    (
        "js.require_cache",
        re.compile(
            r"\brequire\s*\.\s*(cache|extensions)\b|\bModule\s*\.\s*(_cache|_load|_resolveFilename|_extensions|prototype)\b"
            r"|\bprocess\s*\.\s*binding\b"
        ),
    ),
    ("js.dynamic", re.compile(r"(?<![\w.])eval\s*\(|\bnew\s+Function\s*\(|\bvm\s*\.\s*run")),
    (
        "js.test_env",
        re.compile(
            r"\b(NODE_TEST_CONTEXT|JEST_WORKER_ID|VITEST)\b|['\"`](node:test|vitest|@jest/globals)['\"`]"
        ),
    ),
    # `assert.strictEqual = () => {}` in a module the tests import makes every assertion pass.
    (
        "js.assert",
        re.compile(
            r"(?:\b(?:assert|expect)\b|\brequire\s*\(\s*['\"`](?:node:)?assert(?:/strict)?['\"`]\s*\))"
            r"\s*(?:\.\s*\w+|\[[^\]]+\])\s*=(?![=>])"
            r"|\bObject\s*\.\s*(?:assign|defineProperty|defineProperties|setPrototypeOf)\s*\(\s*(?:assert|expect)\b"
        ),
    ),
]
_COMMENT = re.compile(r"^\s*(//|/\*|\*)")


def _by_pattern(
    f: AddedFile, patterns: list[tuple[str, re.Pattern[str]]], test_dirs: Sequence[str], files_rule: str
) -> list[Hit]:
    lines = f.text.splitlines()
    hits: list[Hit] = []
    for n in sorted(f.added):
        if n > len(lines):
            continue
        line = lines[n - 1]
        if _COMMENT.match(line) or line.lstrip().startswith("#"):
            continue
        for rule, pattern in patterns:
            if pattern.search(line):
                hits.append(Hit(f.path, n, rule, clip(line)))
        if _FILE_READ[files_rule].search(line) and names_test_path(line, test_dirs):
            hits.append(Hit(f.path, n, files_rule, clip(line)))
    return hits


def _javascript(f: AddedFile, is_bin: bool, test_dirs: Sequence[str]) -> list[Hit]:
    from taskgate.domain import screen_js  # tree-sitter: only when there is JavaScript to read

    found = screen_js.screen(f, is_bin=is_bin, test_dirs=test_dirs)
    if found is not None:
        return found
    patterns = [(r, p) for r, p in _JS_PATTERNS if not (is_bin and r in ("js.exit", "js.argv"))]
    return _by_pattern(f, patterns, test_dirs, "js.test_files")


def reason(hits: Sequence[Hit], *, limit: int = 10) -> str:
    """The needs_human reason: what was found, each line quoted, and the way out."""
    shown = "; ".join(h.quoted() for h in hits[:limit])
    more = f"; and {len(hits) - limit} more" if len(hits) > limit else ""
    rules = ", ".join(sorted({h.rule for h in hits}))
    return (
        f"the submission adds code that reads or ends its grader ({rules}): {shown}{more}. "
        "A human decides: send it back to the executor, or allow the rule for that path "
        "(verifier config screen_allow) and verify again"
    )
