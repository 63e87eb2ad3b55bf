"""What a submission adds that is loaded or run but cannot be read as source, or that changes
what gets loaded: the places between the screen and the interpreter where code can hide.

The screen (domain/screen.py) reads the Python and JavaScript a submission adds. The check runs
whatever CPython's import system and Node's resolver load, and those load more than that source:
a finder on `sys.path` takes an extension module before `slug.py` and a package directory (even
one whose `__init__` is bytecode) before both; a hash-based `.pyc` that is never checked against
its source loads in place of the unchanged `.py` (a fresh checkout makes timestamp-based ones
stale, not unchecked ones); `zipimport` runs archives on the path; `site` executes `.pth` lines
and imports `sitecustomize`; `importlib.metadata` finds distributions (and so pytest's `pytest11`
plugins) in any `*.dist-info`/`*.egg-info` on the path, the checkout included under `python -m`;
`python -m` and `pytest`'s rootdir insertion put the checkout's and the test directories first on
`sys.path`, so a top-level module there shadows the standard library, the runner and the
project's dependencies. Node's `require('./slug')` takes the exact file, then `.js`, `.json`,
`.node`, before `slug/index.js`; bare names resolve through any `node_modules` up the tree;
package.json `main`/`exports`/`imports` and tsconfig `paths`/`moduleSuffixes` redirect what a
name loads; NODE_OPTIONS (from an env file or `.npmrc`'s node-options) preloads anything.
Installers run code before any test: setup.py, build backends and their hooks, package.json's
install scripts, and entry points they install (`pytest11`, a console script named `pytest`).

Pure: `find` returns the hits, `uncollected` the test files no report names, `reason` the
words a human reads. Each hit holds the run for a human (needs_human, no attempt used). What the
verifier collects first (git's work, before the checkout is handed to a check):
- per changed path (`git diff --raw -z --no-renames <baseline> HEAD`: status letter and new mode,
  the old mode for a deletion): `Change.of(path, STATUS_LETTERS[letter], mode, data, size=...)`
  with the blob's size (`git cat-file -s`) and its first screen.MAX_BYTES + 1 bytes (for a
  symlink the blob is its target; a gitlink has none);
- the submitted tree's paths (`git ls-tree -r -z --name-only HEAD`);
- the baseline's text of `baseline_paths(changes)` (None where absent);
- the checks' commands with the package.json scripts they run (baseline.check_commands);
- Knowledge(stdlib=frozenset(sys.stdlib_module_names)) of the interpreter the checks run;
- for `uncollected`: the run with the submission's own test files (its whole tree), its
  reports' test files and classnames.

| kind            | what                                                               | why it matters |
|-----------------|--------------------------------------------------------------------|----------------|
| bytecode        | `*.pyc`/`*.pyo`, anything under `__pycache__/`                     | an unchecked-hash pyc loads instead of its unchanged source; `pkg/__init__.pyc` makes a package that wins over `pkg.py` |
| symlink         | a link added or changed (git mode 120000)                          | the screen reads no link; the interpreter loads whatever it points to |
| submodule       | a gitlink (mode 160000)                                            | content from another repository, not in the diff |
| native          | `.so .pyd .dll .dylib .node .wasm`, or ELF/Mach-O/PE/wasm bytes     | extension modules win over `.py` of the same name; `.node` addons load by `require` |
| archive         | `.zip .egg .whl .pyz .pyzw`                                        | zipimport runs them from any path entry |
| pickle          | `.pkl .pickle .joblib .dill`                                       | unpickling calls what the file names |
| executable      | mode 100755 and not text                                           | a program no one can read |
| not_utf8        | a `.py`/JS/TS source that is not UTF-8                             | the screen reads UTF-8 only |
| too_large       | a source over the screen's size cap (screen.MAX_BYTES)              | the screen skips it |
| encoding        | a Python coding declaration that decodes the bytes otherwise       | `# coding: utf-7` turns `+AAo-` into a newline the screen never sees |
| shadow          | a new top-level module named like a stdlib, runner or dependency module | it loads instead of the module the runner or the code asked for |
| collision       | two files resolving to one import name                             | `slug/__init__.py` beside `slug.py`, `tests/slug.py` beside `src/slug/`, `slug.js` beside `slug.ts`: which one runs is not what the diff shows |
| installed       | `node_modules/`, `site-packages/`, `.venv/`, `__pypackages__/`, `.yarn/`, `.pnp.*`, `pyvenv.cfg` | dependencies and resolvers the checks load, not the project's source |
| pth             | `*.pth`                                                            | `site` executes its `import` lines and puts its paths on `sys.path` |
| startup         | `sitecustomize`/`usercustomize`                                    | imported at interpreter start, before any test |
| metadata        | `*.dist-info/`, `*.egg-info/`, `*.egg-link`, `__editable__*`       | pytest loads the `pytest11` entry points of any distribution on the path |
| install_hook    | setup.py, build backends and hooks, entry points and scripts, package.json install scripts (and files they run), binding.gyp, local-path dependencies, when a check installs | runs before the tests, or installs a plugin or a `pytest` of its own |
| manager_config  | `.npmrc`, `.yarnrc(.yml)`, `.pnpmfile.cjs`, `pnpm-workspace.yaml`, `uv.toml`, `poetry.toml`, when a check runs that tool | `node-options`, `yarnPath`, pnpm hooks, indexes: code the tool runs |
| env_file        | `.env*`, `*.env`, `.envrc`, `.flaskenv` setting a loader variable  | PYTHONPATH, PYTEST_ADDOPTS/PLUGINS, NODE_OPTIONS, LD_PRELOAD... change what loads |
| package_map     | package.json `main`/`exports`/`imports` now pointing out of the source | a name that loads a test file, a dependency, a binary or a file outside the package |
| resolution      | tsconfig/jsconfig `paths`, `baseUrl`, `rootDirs`, `moduleSuffixes`, `customConditions`, `moduleResolution`, `extends` | `./slug` resolves to another file |
| preload         | babel/swc configs, `.mocharc*`, `.nycrc*`, `.coveragerc` plugins    | a transform or preload the runner applies to every file it loads |
| runner_file     | Makefile/`*.mk`, justfile, Taskfile, noxfile.py, tasks.py, dodo.py, when a check runs that tool | the check's own recipe |
| uncollected     | a file the naming rules call a test that no report names           | the screen skips test files: one nothing runs is a place to hide code the library imports |

Deletions hit nothing (a package replacing a module deletes the module). What no rule here
catches: a data file read by code (the screen reads the code), a binary fetched at run time,
a runner whose report names no file (node --test: its test files cannot be judged uncollected).
"""

from __future__ import annotations

import codecs
import configparser
import json
import posixpath
import re
import shlex
import tokenize
import tomllib
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from io import BytesIO
from typing import Any, Literal

from taskgate.domain import baseline
from taskgate.domain.screen import JS_SUFFIXES, MAX_BYTES, PY_SUFFIXES

Status = Literal["added", "modified", "deleted", "renamed", "type_changed"]
Family = Literal["unreadable", "loading", "uncollected"]

MODE_FILE, MODE_EXECUTABLE, MODE_SYMLINK, MODE_GITLINK = "100644", "100755", "120000", "160000"
HEAD_BYTES = 16  # of each changed file, for its magic number
# git's status letters (`git diff --raw`): a copy is an addition here.
STATUS_LETTERS: dict[str, Status] = {
    "A": "added",
    "C": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "T": "type_changed",
}

# kind -> (family, what it is), for the reason and for the docstring's table.
KINDS: dict[str, tuple[Family, str]] = {
    "bytecode": ("unreadable", "bytecode"),
    "symlink": ("unreadable", "a symlink"),
    "submodule": ("unreadable", "a submodule"),
    "native": ("unreadable", "native code"),
    "archive": ("unreadable", "an importable archive"),
    "pickle": ("unreadable", "a pickle, which runs code when loaded"),
    "executable": ("unreadable", "an executable that is not text"),
    "not_utf8": ("unreadable", "source that is not UTF-8"),
    "too_large": ("unreadable", "source over the screen's size cap"),
    "encoding": ("unreadable", "source Python decodes otherwise"),
    "shadow": ("loading", "shadows a module"),
    "collision": ("loading", "two files for one import name"),
    "installed": ("loading", "installed packages or a resolver in the commit"),
    "pth": ("loading", "a .pth file"),
    "startup": ("loading", "imported at interpreter start"),
    "metadata": ("loading", "distribution metadata"),
    "install_hook": ("loading", "runs when a check installs the project"),
    "manager_config": ("loading", "package manager configuration"),
    "env_file": ("loading", "an env file setting a loader variable"),
    "package_map": ("loading", "package.json entry points"),
    "resolution": ("loading", "module resolution settings"),
    "preload": ("loading", "a transform or preload configuration"),
    "runner_file": ("loading", "the recipe a check runs"),
    "uncollected": ("uncollected", "no runner collects it"),
}

# Modules of the test runners and their dependencies, in the check's interpreter: a top-level
# module of the checkout by one of these names is imported in their place.
RUNNER_MODULES: frozenset[str] = frozenset(
    {
        "pytest",
        "_pytest",
        "py",
        "pluggy",
        "iniconfig",
        "packaging",
        "exceptiongroup",
        "tomli",
        "pygments",
        "colorama",
        "unittest",
        "hypothesis",
        "_hypothesis_pytestplugin",
        "attr",
        "attrs",
        "sortedcontainers",
        "xdist",
        "execnet",
        "coverage",
        "pytest_cov",
        "nose",
        "nose2",
        "mock",
        "xmlrunner",
        "typing_extensions",
    }
)


@dataclass(frozen=True)
class Knowledge:
    """What the verifier knows of module names in the check's interpreter: its standard
    library (`sys.stdlib_module_names`) and the runners' modules (RUNNER_MODULES, or more)."""

    stdlib: frozenset[str]
    runners: frozenset[str] = RUNNER_MODULES


@dataclass(frozen=True)
class Change:
    """One path the submission changes against its baseline, as submitted (for a deletion: as
    it was). `text` is the content when it is at most screen.MAX_BYTES and decodes as UTF-8;
    `head` its first HEAD_BYTES bytes; `target` a symlink's target."""

    path: str
    status: Status
    mode: str = MODE_FILE
    size: int = 0
    text: str | None = None
    target: str | None = None
    head: bytes = b""
    old_path: str | None = None

    @classmethod
    def of(
        cls,
        path: str,
        status: Status,
        mode: str,
        data: bytes | None,
        *,
        size: int | None = None,
        old_path: str | None = None,
    ) -> Change:
        """From git's facts and the blob's bytes (at most screen.MAX_BYTES + 1 of them are
        needed; `size` is the whole blob's when `data` is cut). A symlink's blob is its target;
        a gitlink has no blob (`data` None)."""
        data = data or b""
        whole = len(data) if size is None else size
        text: str | None = None
        if whole <= MAX_BYTES and len(data) == whole:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        target = data.decode("utf-8", "replace") if mode == MODE_SYMLINK else None
        return cls(path, status, mode, whole, text, target, data[:HEAD_BYTES], old_path)

    @property
    def present(self) -> bool:
        return self.status != "deleted"

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Hit:
    path: str
    kind: str
    why: str

    def quoted(self) -> str:
        return f"{self.path} ({self.why})"


# -- what the verifier collects -----------------------------------------------------------------

_CONFIG_NAMES = re.compile(r"(^|/)(pyproject\.toml|setup\.cfg|package\.json|[tj]sconfig[^/]*\.json)\Z")


def baseline_paths(changes: Iterable[Change]) -> list[str]:
    """The paths whose baseline text `find` compares with the submission's: the top-level
    pyproject.toml and package.json (what installs run, where the sources are) and every
    changed configuration file it reads section by section."""
    wanted = ["pyproject.toml", "package.json", "setup.cfg"]
    wanted += [c.path for c in changes if _CONFIG_NAMES.search(c.path)]
    return list(dict.fromkeys(wanted))


# -- the rules ----------------------------------------------------------------------------------

_NATIVE_SUFFIXES = (".so", ".pyd", ".dll", ".dylib", ".node", ".wasm")
_NATIVE_SO = re.compile(r"\.so(\.\d+)*\Z")
_ARCHIVE_SUFFIXES = (".zip", ".egg", ".whl", ".pyz", ".pyzw")
_PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".dill")
_SOURCE_SUFFIXES = PY_SUFFIXES + JS_SUFFIXES
_NATIVE_MAGIC = (
    b"\x7fELF",
    b"\xfe\xed\xfa\xce",
    b"\xfe\xed\xfa\xcf",
    b"\xce\xfa\xed\xfe",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
    b"\x00asm",
)
_INSTALLED_DIRS = frozenset({"node_modules", "site-packages", "dist-packages", "__pypackages__", ".venv"})
_INSTALLED_FILES = frozenset({".pnp.cjs", ".pnp.js", ".pnp.loader.mjs", ".pnp.data.json", "pyvenv.cfg"})


def find(
    changes: Sequence[Change],
    *,
    tree: Collection[str],
    commands: Sequence[str],
    baseline_text: Mapping[str, str | None],
    knowledge: Knowledge,
) -> list[Hit]:
    """The hits among `changes` (unique by path and kind, sorted). `tree`: every path of the
    submitted tree; `commands`: the checks' commands and the package.json scripts they run
    (baseline.package_scripts); `baseline_text`: the baseline's text of baseline_paths(changes)
    (None or absent: not there)."""
    present = [c for c in changes if c.present]
    hits: list[Hit] = []
    for c in present:
        hits += _unreadable(c)
        hits += _by_name(c)
    tools = _tools(commands)
    hits += _shadows(present, tree, baseline_text, knowledge)
    hits += _collisions(present, tree, baseline_text)
    hits += _install_hooks(present, tools, baseline_text)
    hits += _configs(present, tools, baseline_text)
    unique = {(h.path, h.kind): h for h in hits}
    return sorted(unique.values(), key=lambda h: (h.path, h.kind))


def _unreadable(c: Change) -> list[Hit]:
    name, path = c.name, c.path
    if c.mode == MODE_SYMLINK:
        return [Hit(path, "symlink", f"symlink to {c.target}" if c.target else "symlink")]
    if c.mode == MODE_GITLINK:
        return [Hit(path, "submodule", "submodule")]
    parts = path.split("/")
    if name.endswith((".pyc", ".pyo")) or "__pycache__" in parts[:-1]:
        return [Hit(path, "bytecode", "bytecode")]
    if name.endswith(_NATIVE_SUFFIXES) or _NATIVE_SO.search(name):
        return [Hit(path, "native", "extension module or native library")]
    if c.head.startswith(_NATIVE_MAGIC) or (c.text is None and c.head.startswith(b"MZ")):
        return [Hit(path, "native", "native code")]
    if name.endswith(_ARCHIVE_SUFFIXES):
        return [Hit(path, "archive", "archive importable from the path")]
    if name.endswith(_PICKLE_SUFFIXES):
        return [Hit(path, "pickle", "pickle: loading it calls what it names")]
    if name.endswith(_SOURCE_SUFFIXES):
        if c.size > MAX_BYTES:
            return [Hit(path, "too_large", f"{c.size} bytes: over the screen's {MAX_BYTES}")]
        if c.text is None:
            return [Hit(path, "not_utf8", "not UTF-8: the screen cannot read it")]
        if name.endswith(PY_SUFFIXES) and (declared := _other_encoding(c.text)):
            return [Hit(path, "encoding", f"declares coding {declared}: Python reads other text")]
    if c.mode == MODE_EXECUTABLE and c.text is None and c.size:
        return [Hit(path, "executable", "executable that is not text")]
    return []


def _other_encoding(text: str) -> str | None:
    """The coding a Python source declares, when decoding its bytes with it gives other text
    than UTF-8 does (an unknown coding: Python refuses the file, nothing loads)."""
    data = text.encode("utf-8")
    try:
        declared, _ = tokenize.detect_encoding(BytesIO(data).readline)
    except SyntaxError:
        return None
    if codecs.lookup(declared).name in ("utf-8", "utf-8-sig"):
        return None
    try:
        decoded = data.decode(declared)
    except (UnicodeDecodeError, LookupError):
        return None
    return declared if decoded != text else None


def _by_name(c: Change) -> list[Hit]:
    path, name = c.path, c.name
    parts = path.split("/")
    dirs = parts[:-1]
    if installed := [d for d in dirs if d in _INSTALLED_DIRS or d == "venv" or d == ".yarn"]:
        return [Hit(path, "installed", f"inside {installed[0]}/")]
    if name in _INSTALLED_FILES:
        return [Hit(path, "installed", f"{name}: a resolver or environment file")]
    if name.endswith(".pth"):
        return [Hit(path, "pth", ".pth: site runs its import lines and extends sys.path")]
    stem = name.split(".", 1)[0]
    if (stem in ("sitecustomize", "usercustomize") and name.endswith((*PY_SUFFIXES, ".pyc"))) or any(
        d in ("sitecustomize", "usercustomize") for d in dirs
    ):
        return [Hit(path, "startup", f"{stem}: imported when the interpreter starts")]
    if meta := [p for p in parts if p.endswith((".dist-info", ".egg-info"))]:
        return [Hit(path, "metadata", f"{meta[0]}: its entry points load as plugins")]
    if name.endswith(".egg-link") or name.startswith("__editable__"):
        return [Hit(path, "metadata", "an editable install's pointer")]
    if _ENV_FILE.search(path) and not _ENV_EXAMPLE.search(name):
        return _env_file(c)
    if _PRELOAD_FILE.search(path) and (name != ".coveragerc" or "plugins" in (c.text or "plugins")):
        return [Hit(path, "preload", "transform or preload configuration")]
    return []


_ENV_FILE = re.compile(r"(^|/)(\.env(\.[^/]+)?|[^/]+\.env|\.envrc|\.flaskenv)\Z")
_ENV_EXAMPLE = re.compile(r"example|sample|template", re.IGNORECASE)
_LOADER_VARIABLE = re.compile(
    r"PYTHON\w*|PYTEST_\w+|NODE_(OPTIONS|PATH|TEST_CONTEXT|PRESERVE_SYMLINKS\w*|REPL_EXTERNAL_MODULE)"
    r"|LD_\w+|DYLD_\w+|PATH|VIRTUAL_ENV|COVERAGE_\w+|COV_CORE_\w+|npm_config_\w+|NPM_CONFIG_\w+"
    r"|PIP_\w+|UV_\w+|TS_NODE_\w+|TSX_\w+|VITEST\w*|JEST_\w+|BABEL_\w+|HYPOTHESIS_\w+",
)
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")
_PRELOAD_FILE = re.compile(
    r"(^|/)(\.babelrc(\.[^/]+)?|babel\.config\.[^/]+|\.swcrc|\.mocharc(\.[^/]+)?|\.nycrc(\.[^/]+)?|\.coveragerc)\Z"
)


def _env_file(c: Change) -> list[Hit]:
    if c.text is None:
        return [Hit(c.path, "env_file", "an env file that is not UTF-8 text")]
    names = [m.group(1) for line in c.text.splitlines() if (m := _ENV_LINE.match(line))]
    loaders = [n for n in names if _LOADER_VARIABLE.fullmatch(n)]
    if not loaders:
        return []
    return [Hit(c.path, "env_file", f"sets {', '.join(dict.fromkeys(loaders))}")]


# -- Python and JavaScript import names ---------------------------------------------------------

_EXTENSION_SUFFIX = re.compile(r"\.(cpython-[^./]+|abi3|pypy[^./]*)?\.(so|pyd)\Z|\.(so|pyd)\Z")


def _py_module(path: str) -> tuple[str, str] | None:
    """(directory, top name) a Python file is importable as from its directory: `d/x.py` and
    `d/x.cpython-311-x86_64-linux-gnu.so` are `x` in `d`, `d/x/__init__.py` is `x` in `d`."""
    head, _, name = path.rpartition("/")
    if name.startswith("__init__.") and name.endswith((*PY_SUFFIXES, ".pyc")) and head:
        parent, _, package = head.rpartition("/")
        return parent, package
    if name.endswith(PY_SUFFIXES):
        return head, name.rsplit(".", 1)[0]
    if m := _EXTENSION_SUFFIX.search(name):
        return head, name[: m.start()]
    return None


def _packages(tree: Collection[str]) -> set[str]:
    """Directories that are regular packages (hold an `__init__.py`)."""
    return {p.rpartition("/")[0] for p in tree if p.rpartition("/")[2] == "__init__.py"}


def _source_roots(tree: Collection[str], baseline_text: Mapping[str, str | None]) -> set[str]:
    """Where the project's own modules are imported from: the top, `src/`, the pytest
    `pythonpath` entries and setuptools' `package-dir` root of the baseline's pyproject."""
    roots = {"", "src"}
    data = _toml(baseline_text.get("pyproject.toml"))
    pytest_options = _dig(data, "tool", "pytest", "ini_options")
    paths = pytest_options.get("pythonpath") if isinstance(pytest_options, dict) else None
    if isinstance(paths, str):
        paths = paths.split()
    if isinstance(paths, list):
        roots |= {posixpath.normpath(p).strip("./") for p in paths if isinstance(p, str)}
    package_dir = _dig(data, "tool", "setuptools", "package-dir")
    if isinstance(package_dir, dict) and isinstance(package_dir.get(""), str):
        roots.add(posixpath.normpath(package_dir[""]).strip("./"))
    return {"" if r == "." else r for r in roots}


def _inserted_roots(tree: Collection[str], packages: set[str]) -> set[str]:
    """The directories pytest puts on sys.path for the test files it collects (prepend mode:
    the first directory up from the file that is not a package)."""
    roots: set[str] = set()
    for p in tree:
        if not (p.endswith(".py") and baseline.is_test_file(p)):
            continue
        d = p.rpartition("/")[0]
        while d in packages and d:
            d = d.rpartition("/")[0]
        roots.add(d)
    return roots


def _dependency_modules(baseline_text: Mapping[str, str | None]) -> set[str]:
    """The import names the baseline's declared Python dependencies most likely have."""
    data = _toml(baseline_text.get("pyproject.toml"))
    project = _mapping(data.get("project"))
    specs = list(project.get("dependencies") or [])
    for group in (project.get("optional-dependencies") or {}).values():
        specs += list(group) if isinstance(group, list) else []
    names = set()
    for spec in specs:
        if isinstance(spec, str) and (m := re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)):
            names.add(m.group(1).lower().replace("-", "_").replace(".", "_"))
    return names


def _shadows(
    present: Sequence[Change],
    tree: Collection[str],
    baseline_text: Mapping[str, str | None],
    knowledge: Knowledge,
) -> list[Hit]:
    """New top-level modules named like a module the interpreter, the runner or a dependency
    provides: top-level where their directory is on sys.path (a source root, or a directory
    pytest inserts for its tests)."""
    packages = _packages(tree)
    roots = _source_roots(tree, baseline_text) | _inserted_roots(tree, packages)
    dependencies = _dependency_modules(baseline_text)
    hits = []
    for c in present:
        if c.status not in ("added", "renamed", "type_changed"):
            continue
        found = _py_module(c.path)
        if found is None or found[0] not in roots or found[0] in packages:
            continue
        name = found[1]
        if name in knowledge.stdlib:
            what = "the standard library's"
        elif name in knowledge.runners or name.startswith("pytest_"):
            what = "the test runner's"
        elif name.lower() in dependencies:
            what = "a dependency's"
        else:
            continue
        where = f"{found[0]}/" if found[0] else "the top"
        hits.append(Hit(c.path, "shadow", f"a module `{name}` at {where}: shadows {what} `{name}`"))
    return hits


# pytest imports these by path, never by a name another module could answer to.
_NOT_MODULES = frozenset({"conftest", "__init__", "__main__"})
_JS_LOADABLE = (".js", ".cjs", ".mjs", ".json", ".node", ".ts", ".tsx", ".mts", ".cts", ".jsx")


def _js_module(path: str) -> tuple[str, str] | None:
    """(directory, name) a path answers to for `require('./name')` and TypeScript resolvers: the
    exact file, the name with a loadable extension, or a directory's index."""
    head, _, name = path.rpartition("/")
    if name.startswith("index.") and name.endswith(_JS_LOADABLE) and head:
        parent, _, directory = head.rpartition("/")
        return parent, directory
    if name.endswith(".d.ts"):
        return None
    if name.endswith(_JS_LOADABLE):
        return head, name.rsplit(".", 1)[0]
    return None


def _collisions(
    present: Sequence[Change], tree: Collection[str], baseline_text: Mapping[str, str | None]
) -> list[Hit]:
    """Files the submission adds that answer to an import name another file answers to: in one
    directory (Python's package over its module, Node's exact file over `.js` over `index.js`,
    a resolver's `.mjs` over `.ts`), or as top-level Python modules under a source root and a
    directory pytest inserts."""
    added = {c.path for c in present if c.status in ("added", "renamed", "type_changed")}
    py: dict[tuple[str, str], set[str]] = defaultdict(set)
    js: dict[tuple[str, str], set[str]] = defaultdict(set)
    for p in tree:
        if (m := _py_module(p)) is not None:
            py[m].add(p)
        if (j := _js_module(p)) is not None:
            js[j].add(p)
    # An extensionless file answers to require('./name') too, before name.js.
    for (d, name), paths in list(js.items()):
        exact = f"{d}/{name}" if d else name
        if exact in tree:
            paths.add(exact)
    hits: list[Hit] = []
    for groups in (py, js):
        for paths in groups.values():
            if len(paths) > 1 and paths & added:
                for p in sorted(paths & added):
                    others = ", ".join(sorted(paths - {p}))
                    hits.append(Hit(p, "collision", f"answers to the same import as {others}"))
    # Across sys.path entries: a module of the project's and one in a directory pytest inserts.
    packages = _packages(tree)
    sources = _source_roots(tree, baseline_text) - packages
    inserted = _inserted_roots(tree, packages) - sources
    by_name: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for (d, name), paths in py.items():
        if d in sources or d in inserted:
            by_name[name][d] |= paths
    for name, where in by_name.items():
        if name in _NOT_MODULES or not (where.keys() & sources and where.keys() & inserted):
            continue
        every = set().union(*where.values())
        for p in sorted(every & added):
            others = ", ".join(sorted(every - {p}))
            hits.append(Hit(p, "collision", f"answers to the same import as {others} (pytest's sys.path)"))
    return hits


# -- tools the checks run -----------------------------------------------------------------------

_NPM_INSTALL = frozenset(
    {
        *("install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall"),
        *("add", "ci", "clean-install", "ic", "install-clean", "isntall-clean", "install-ci-test", "cit"),
        *("clean-install-test", "sit", "install-test", "it", "rebuild", "rb", "pack", "publish"),
        *("link", "ln", "update", "up", "upgrade", "udpate"),
    }
)
_PNPM_INSTALL = frozenset(
    {
        "install",
        "i",
        "add",
        "rebuild",
        "rb",
        "update",
        "up",
        "pack",
        "publish",
        "link",
        "ln",
        "install-test",
        "it",
    }
)
_PY_INSTALLERS: dict[str, frozenset[str] | None] = {
    # tool -> the subcommands that install the project (None: any use of the tool does)
    "poetry": frozenset({"install", "sync", "build"}),
    "pdm": frozenset({"install", "sync", "build"}),
    "hatch": frozenset({"run", "test", "env", "shell", "build"}),
    "pipenv": frozenset({"install", "sync"}),
    "flit": frozenset({"install", "build"}),
    "maturin": frozenset({"develop", "build"}),
    "rye": frozenset({"sync", "build"}),
    "tox": None,
    "nox": None,
}
_RUNNERS = frozenset({"make", "just", "task", "nox", "invoke", "inv", "doit", "tox"})


def _simple_commands(command: str) -> list[list[str]]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return []
    out: list[list[str]] = [[]]
    for w in words:
        if w and all(ch in ";&|()<>" for ch in w):
            out.append([])
        elif out[-1] or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            out[-1].append(w)
    return [c for c in out if c]


def _tools(commands: Sequence[str]) -> set[str]:
    """What the checks run that loads more than the tests: `install:python`, `install:node`,
    each package manager by name, and each recipe runner (make, nox...)."""
    found: set[str] = set()
    for command in commands:
        for words in _simple_commands(command):
            prog = words[0].rsplit("/", 1)[-1]
            rest = [w for w in words[1:] if not w.startswith("-")]
            found |= _tool_words(prog, words, rest)
    return found


def _tool_words(prog: str, words: list[str], rest: list[str]) -> set[str]:
    found: set[str] = set()
    first = rest[0] if rest else ""
    if prog in _RUNNERS:
        found.add(prog)
    if prog in ("npm", "npx", "pnpm", "yarn", "bun", "uv", "poetry"):
        found.add(prog)
    if (
        (prog == "npm" and first in _NPM_INSTALL)
        or (prog == "pnpm" and first in _PNPM_INSTALL)
        or (prog == "yarn" and (not rest or first in ("install", "add", "up", "upgrade")))
        or (prog == "bun" and first in ("install", "i", "add"))
    ):
        found.add("install:node")
    module = words[words.index("-m") + 1] if "-m" in words[:-1] else ""
    pip = re.fullmatch(r"pip[0-9.]*", prog) is not None and first in ("install", "wheel")
    python = re.fullmatch(r"python[0-9.]*", prog) is not None and (
        (module == "pip" and "install" in rest) or module == "build" or "setup.py" in words
    )
    uv = prog == "uv" and (first in ("sync", "run", "build") or rest[:2] == ["pip", "install"])
    subcommands = _PY_INSTALLERS.get(prog, frozenset())
    other = prog in _PY_INSTALLERS and (subcommands is None or first in subcommands)
    if pip or python or uv or other:
        found.add("install:python")
    return found


# -- install hooks ------------------------------------------------------------------------------

_NODE_INSTALL_SCRIPTS = frozenset(
    {
        "preinstall",
        "install",
        "postinstall",
        "prepublish",
        "preprepare",
        "prepare",
        "postprepare",
        "prepack",
        "postpack",
        "dependencies",
    }
)
_LOCAL_DEPENDENCY = re.compile(r"^(file:|link:|portal:|workspace:|\.{0,2}/)")
_SETUPTOOLS_HOOK_KEYS = ("cmdclass", "package-dir", "data-files", "ext-modules", "script-files")
_SETUP_CFG_SAFE = frozenset(
    {
        "install_requires",
        "python_requires",
        "tests_require",
        "setup_requires",
        "zip_safe",
        "include_package_data",
    }
)
_BUILD_FILES = frozenset({"setup.py", "hatch_build.py", "pdm_build.py", "binding.gyp"})


def _install_hooks(
    present: Sequence[Change], tools: set[str], baseline_text: Mapping[str, str | None]
) -> list[Hit]:
    python, node = "install:python" in tools, "install:node" in tools
    if not (python or node):
        return []
    hits: list[Hit] = []
    run_by_hooks = _hook_files(baseline_text, present)
    for c in present:
        name = c.name
        before = baseline_text.get(c.path) if c.status != "added" else None
        if python and name in ("setup.py", "hatch_build.py", "pdm_build.py"):
            hits.append(Hit(c.path, "install_hook", f"{name} runs when a check installs the project"))
        elif node and name == "binding.gyp":
            hits.append(Hit(c.path, "install_hook", "binding.gyp: npm builds it on install"))
        elif c.path in run_by_hooks:
            hits.append(Hit(c.path, "install_hook", "run by the install or build of the project"))
        elif python and name == "pyproject.toml":
            changed = _changed_parts(_pyproject_hooks(before), _pyproject_hooks(c.text))
            if changed:
                hits.append(Hit(c.path, "install_hook", f"changes {', '.join(changed)}"))
        elif python and name == "setup.cfg":
            changed = _changed_parts(_setup_cfg_hooks(before), _setup_cfg_hooks(c.text))
            if changed:
                hits.append(Hit(c.path, "install_hook", f"changes [{'], ['.join(changed)}]"))
        elif node and name == "package.json":
            changed = _changed_parts(_package_hooks(before), _package_hooks(c.text))
            if changed:
                hits.append(Hit(c.path, "install_hook", f"changes {', '.join(changed)}"))
    return hits


def _changed_parts(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))


def _pyproject_hooks(text: str | None) -> dict[str, Any]:
    """The parts of a pyproject.toml that run or install code when the project is installed."""
    if text is None:
        return {}
    data = _toml(text)
    if not data and text.strip():
        return {"pyproject.toml": text}
    project = _mapping(data.get("project"))
    parts: dict[str, Any] = {
        "[build-system]": data.get("build-system"),
        "[project.entry-points]": project.get("entry-points"),
        "[project.scripts]": project.get("scripts"),
        "[project.gui-scripts]": project.get("gui-scripts"),
        "local-path dependencies": sorted(
            s
            for s in [*(project.get("dependencies") or [])]
            + [d for g in (project.get("optional-dependencies") or {}).values() for d in g]
            if isinstance(s, str) and re.search(r"@\s*(file:|\.{0,2}/)", s)
        ),
    }
    setuptools = _dig(data, "tool", "setuptools")
    if isinstance(setuptools, dict):
        for key in _SETUPTOOLS_HOOK_KEYS:
            parts[f"[tool.setuptools] {key}"] = setuptools.get(key)
    for table in (
        ("hatch", "build"),
        ("hatch", "metadata"),
        ("hatch", "envs"),
        ("pdm", "build"),
        ("pdm", "scripts"),
        ("poetry", "build"),
        ("poetry", "scripts"),
        ("poetry", "plugins"),
        ("poetry", "packages"),
        ("flit",),
        ("maturin",),
        ("scikit-build",),
        ("uv", "sources"),
    ):
        parts[f"[tool.{'.'.join(table)}]"] = _dig(data, "tool", *table)
    return {k: v for k, v in parts.items() if v not in (None, [], {})}


def _setup_cfg_hooks(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return {"setup.cfg": text}
    parts: dict[str, Any] = {}
    for section in parser.sections():
        if section == "options":
            kept = {k: v for k, v in parser[section].items() if k not in _SETUP_CFG_SAFE}
            if kept:
                parts[section] = kept
        elif section in ("options.entry_points", "options.packages.find", "options.data_files") or (
            section.startswith("build") or section in ("install", "develop", "egg_info")
        ):
            parts[section] = dict(parser[section])
    return parts


def _package_hooks(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    data = _json(text)
    if not isinstance(data, dict):
        return {"package.json": text} if text.strip() else {}
    scripts = _mapping(data.get("scripts"))
    parts: dict[str, Any] = {
        f"scripts.{k}": v for k, v in scripts.items() if k in _NODE_INSTALL_SCRIPTS and isinstance(v, str)
    }
    parts["workspaces"] = data.get("workspaces")
    parts["gypfile"] = data.get("gypfile")
    for field in ("dependencies", "devDependencies", "optionalDependencies"):
        deps = data.get(field)
        if isinstance(deps, dict):
            local = {k: v for k, v in deps.items() if isinstance(v, str) and _LOCAL_DEPENDENCY.match(v)}
            parts[f"{field} (local paths)"] = local
    return {k: v for k, v in parts.items() if v not in (None, {}, [])}


def _hook_files(baseline_text: Mapping[str, str | None], present: Sequence[Change]) -> set[str]:
    """Files an install runs by path: those the install scripts of the top-level package.json
    run (the baseline's and the submission's), the in-tree build backend (`backend-path`) and
    the build scripts pyproject names."""
    texts = [baseline_text.get("package.json")] + [c.text for c in present if c.path == "package.json"]
    found: set[str] = set()
    for text in texts:
        data = _json(text) if text else None
        scripts = data.get("scripts") if isinstance(data, dict) else None
        if isinstance(scripts, dict):
            for k, v in scripts.items():
                if k in _NODE_INSTALL_SCRIPTS and isinstance(v, str):
                    found |= set(baseline.command_paths(v))
    pyprojects = [baseline_text.get("pyproject.toml")] + [
        c.text for c in present if c.path == "pyproject.toml"
    ]
    backend_dirs: set[str] = set()
    for text in pyprojects:
        data = _toml(text)
        for d in _dig(data, "build-system", "backend-path") or []:
            if isinstance(d, str):
                backend_dirs.add(posixpath.normpath(d))
        for script in (
            _dig(data, "tool", "poetry", "build", "script"),
            _dig(data, "tool", "poetry", "build"),
        ):
            if isinstance(script, str):
                found.add(posixpath.normpath(script))
        custom = _dig(data, "tool", "hatch", "build", "hooks", "custom", "path")
        if isinstance(custom, str):
            found.add(posixpath.normpath(custom))
    for c in present:
        if c.path.endswith(".py") and any(
            ("/" not in c.path) if d == "." else c.path.startswith(d.rstrip("/") + "/") for d in backend_dirs
        ):
            found.add(c.path)
    return found


# -- configuration the tools read ---------------------------------------------------------------

_MANAGER_FILES: dict[str, tuple[str, ...]] = {
    ".npmrc": ("npm", "npx", "pnpm", "yarn"),
    ".yarnrc": ("yarn",),
    ".yarnrc.yml": ("yarn",),
    ".pnpmfile.cjs": ("pnpm",),
    "pnpm-workspace.yaml": ("pnpm",),
    "uv.toml": ("uv",),
    "poetry.toml": ("poetry",),
}
_RUNNER_FILES: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"(^|/)(GNUmakefile|[Mm]akefile|[^/]+\.mk)\Z"), ("make",)),
    (re.compile(r"(^|/)(\.?[Jj]ustfile|[^/]+\.just)\Z"), ("just",)),
    (re.compile(r"(^|/)Taskfile(\.dist)?\.ya?ml\Z"), ("task",)),
    (re.compile(r"(^|/)noxfile\.py\Z"), ("nox",)),
    (re.compile(r"(^|/)tasks\.py\Z"), ("invoke", "inv")),
    (re.compile(r"(^|/)dodo\.py\Z"), ("doit",)),
]
_RESOLUTION_OPTIONS = (
    "paths",
    "baseUrl",
    "rootDirs",
    "moduleSuffixes",
    "customConditions",
    "moduleResolution",
)
_TSCONFIG = re.compile(r"(^|/)[tj]sconfig[^/]*\.json\Z")


def _configs(
    present: Sequence[Change], tools: set[str], baseline_text: Mapping[str, str | None]
) -> list[Hit]:
    hits: list[Hit] = []
    for c in present:
        before = baseline_text.get(c.path) if c.status != "added" else None
        if (users := _MANAGER_FILES.get(c.name)) and tools & set(users):
            hits.append(Hit(c.path, "manager_config", f"read by {'/'.join(u for u in users if u in tools)}"))
        for pattern, runners in _RUNNER_FILES:
            if pattern.search(c.path) and tools & set(runners):
                hits.append(Hit(c.path, "runner_file", f"the recipe `{'/'.join(runners)}` runs"))
        if _TSCONFIG.search(c.path):
            changed = _changed_parts(_resolution(before), _resolution(c.text))
            if changed:
                hits.append(Hit(c.path, "resolution", f"changes {', '.join(changed)}"))
        if c.name == "package.json":
            hits += _package_map(c, before)
    return hits


def _resolution(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    data = _jsonc(text)
    if not isinstance(data, dict):
        return {"the whole file": text} if text.strip() else {}
    options = _mapping(data.get("compilerOptions"))
    parts = {f"compilerOptions.{k}": options.get(k) for k in _RESOLUTION_OPTIONS}
    parts["extends"] = data.get("extends")
    return {k: v for k, v in parts.items() if v is not None}


def _package_map(c: Change, before: str | None) -> list[Hit]:
    """package.json `main`, `exports` and `imports` targets the submission points somewhere
    that is not the package's own JavaScript: outside it, a dependency's files, a test file, a
    binary."""
    new, old = _json(c.text or ""), _json(before or "")
    if not isinstance(new, dict):
        return []
    old = old if isinstance(old, dict) else {}
    odd: list[str] = []
    for field in ("main", "exports", "imports"):
        if new.get(field) == old.get(field):
            continue
        odd += [f"{field} -> {t}" for t in _targets(new.get(field)) if _odd_target(t, field)]
    if not odd:
        return []
    return [Hit(c.path, "package_map", "; ".join(odd))]


def _targets(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in _targets(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _targets(v)]
    return []


def _odd_target(target: str, field: str) -> bool:
    if field == "imports" and not target.startswith((".", "/")):
        return False  # a dependency by name: what the lockfile says
    if target.startswith("/") or ".." in target.split("/"):
        return True
    parts = posixpath.normpath(target).split("/")
    path = "/".join(parts)
    if "node_modules" in parts:
        return True
    if baseline.is_test_file(path) or any(p in ("test", "tests", "__tests__", "spec") for p in parts[:-1]):
        return True
    name = parts[-1]
    return "." in name and not name.endswith((*JS_SUFFIXES, ".json")) and "*" not in name


# -- tests no runner collects -------------------------------------------------------------------

_JS_TEST_NAME = re.compile(r"(^|/)([^/]+\.(test|spec)\.|[^/]+[_-]test\.|test\.|test-)[^/]*\Z")


def uncollected(changed: Iterable[str], *, files: Iterable[str], classnames: Iterable[str]) -> list[Hit]:
    """The test files among `changed` (added or changed, by the runners' naming rules) that no
    report of the run that had them names, by the file its tests came from (`files`) or their
    JUnit classname (pytest's `tests.test_slug.TestX`, vitest's `test/slug.test.ts`). A
    JavaScript file is judged only when some report names JavaScript files (node --test's
    JUnit names none), and only by a file name the runners share (a script under `test/` is
    node's only). conftest.py is harness, never collected as a test."""
    reported = [f.replace("\\", "/").removeprefix("./") for f in files if f]
    names = [c for c in classnames if c]
    reported += [c.replace("\\", "/").removeprefix("./") for c in names if "/" in c]
    judge_js = any(r.endswith(JS_SUFFIXES) for r in reported)
    hits = []
    for path in changed:
        if not baseline.is_test_file(path) or path.rsplit("/", 1)[-1] == "conftest.py":
            continue
        if path.endswith(PY_SUFFIXES):
            found = _by_path(path, reported) or _by_classname(path, names)
        elif path.endswith(JS_SUFFIXES) and judge_js and _JS_TEST_NAME.search(path):
            found = _by_path(path, reported)
        else:
            continue
        if not found:
            hits.append(Hit(path, "uncollected", "no report names a test from it"))
    return hits


def _by_path(path: str, reported: Sequence[str]) -> bool:
    for r in reported:
        r = r.split("::", 1)[0]
        if r == path or path.endswith("/" + r) or r.endswith("/" + path):
            return True
    return False


def _by_classname(path: str, classnames: Sequence[str]) -> bool:
    """pytest's classname is the test's module dotted from its rootdir (then its class): any
    tail of the path's dotted form that starts a classname."""
    parts = path.rsplit(".", 1)[0].split("/")
    tails = {".".join(parts[k:]) for k in range(len(parts))}
    for c in classnames:
        pieces = c.split(".")
        if any(".".join(pieces[:n]) in tails for n in range(1, len(pieces) + 1)):
            return True
    return False


# -- the reason ---------------------------------------------------------------------------------

_FAMILY_WORDS: dict[Family, str] = {
    "unreadable": "adds files the verifier cannot read as source",
    "loading": "changes what gets loaded besides its source",
    "uncollected": "adds test files no runner collects",
}


def reason(hits: Sequence[Hit], *, limit: int = 10) -> str:
    """The needs_human reason: each family of hits with its paths, and the way out."""
    parts = []
    for family, words in _FAMILY_WORDS.items():
        of = [h for h in hits if KINDS[h.kind][0] == family]
        if not of:
            continue
        shown = ", ".join(h.quoted() for h in of[:limit])
        more = f" and {len(of) - limit} more" if len(of) > limit else ""
        parts.append(f"{words}: {shown}{more}")
    return (
        f"the submission {'; it '.join(parts)}. "
        "A human decides: send it back to the executor, or allow it and verify again"
    )


# -- parsing helpers ----------------------------------------------------------------------------


def _toml(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _json(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


_JSONC_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.DOTALL)


def _jsonc(text: str) -> Any:
    """JSON with comments and trailing commas, as tsconfig files are written."""
    stripped = _JSONC_TOKEN.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    return _json(stripped)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
