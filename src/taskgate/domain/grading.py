"""The grading run: what judges a submission is built by the verifier, not taken from the commit.

The grading tree is the submission's tree (merged onto the base tip when the config merges) with
its test side put back as the baseline has it (docs/architecture.md, "The grading run"):

- every test-side path the submission adds, changes or deletes (testdefs.is_test_side: test files
  by the runners' naming rules, every file under a test directory, the harness and config at any
  depth) is the baseline's again: restored where the baseline holds it, removed where it does not;
- but a test file whose submitted version defines a named test its baseline version does not
  (a new test for a criterion) stays as submitted: it is what a criterion names;
- and a file holding the harness in one part only (pyproject.toml, setup.cfg, package.json)
  whose harness part is as it was stays as submitted (its dependencies and metadata are source).

Test files the submission adds or changes that no criterion names do not run in the grading
run; where there are any, the checks run once more on the submission's whole tree, whose
failures are findings for the executor, never evidence. An existing test the submission changed
that fails in the grading run and passes in its own tree is a changed expectation: a human's
call. Pure: paths and texts in, decisions out.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from taskgate.domain.baseline import SCOPED
from taskgate.domain.newtests import defining_files, unplaced
from taskgate.domain.reports import Report, TestOutcome
from taskgate.domain.testdefs import (
    JS_SUFFIXES,
    PY_SUFFIXES,
    TestDef,
    defined_tests,
    defines_ref,
    is_harness,
    is_test_path,
    is_test_side,
)
from taskgate.domain.testrefs import outcomes


@dataclass(frozen=True)
class Plan:
    """How the grading tree differs from the submission's tree. `restore`: test-side paths put
    back as the baseline has them; `remove`: test-side paths the baseline does not hold, taken
    out; `named`: new or changed test files kept as submitted because they define a named test
    their baseline version does not, and the new helpers those import. `unnamed`: the restored or removed paths that are not the
    harness (test files, helpers, data): where there are any, the checks run once more on the
    submission's whole tree."""

    restore: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    named: tuple[str, ...] = ()
    unnamed: tuple[str, ...] = ()

    @property
    def changes_tree(self) -> bool:
        return bool(self.restore or self.remove)


def _defines_new(path: str, submitted: str, before: str | None, refs: Sequence[str]) -> bool:
    """Whether the submitted text of `path` defines a test one of `refs` names that its
    baseline version does not define."""
    if not path.endswith(PY_SUFFIXES + JS_SUFFIXES):
        return False
    now = defined_tests(path, submitted)
    was = defined_tests(path, before) if before is not None else []
    return any(defines_ref(now, ref) and not defines_ref(was, ref) for ref in refs)


def plan(
    changed: Iterable[str],
    *,
    baseline_text: Callable[[str], str | None],
    submitted_text: Callable[[str], str | None],
    at_baseline: Collection[str],
    harness_unchanged: Collection[str],
    refs: Sequence[str],
    harness: Collection[str] = (),
) -> Plan:
    """The grading tree's plan for the paths the submission changes. `at_baseline`: the paths
    the baseline holds; `baseline_text` / `submitted_text`: a file's text there and as submitted
    (None: absent or not text); `harness_unchanged`: the scoped files whose harness part is as
    it was; `refs`: the test criteria's refs; `harness`: further paths that are the harness
    whatever their names (the protected paths: what a check's command or test script runs by
    path, a preload included)."""
    restore: list[str] = []
    remove: list[str] = []
    named: list[str] = []
    unnamed: list[str] = []
    for path in changed:
        if path in harness:
            (restore if path in at_baseline else remove).append(path)
            continue
        if not is_test_side(path):
            continue
        if path.rsplit("/", 1)[-1] in SCOPED and path in harness_unchanged:
            continue  # its harness part is as it was: the rest of it is source
        text = submitted_text(path)
        if (
            text is not None
            and is_test_path(path)
            and not is_harness(path)
            and _defines_new(path, text, baseline_text(path), refs)
        ):
            named.append(path)
            continue
        (restore if path in at_baseline else remove).append(path)
        if not is_harness(path):
            unnamed.append(path)
    # A new helper a named test imports stays with it: without it the named test cannot even be
    # collected. It adds nothing a named file could not do inline (the tripwires and the stubbed
    # run judge what either does).
    wanted = {m for path in named if (text := submitted_text(path)) is not None for m in imported(path, text)}
    helpers = [p for p in remove if p not in harness and not is_harness(p) and _module(p) in wanted]
    remove = [p for p in remove if p not in helpers]
    unnamed = [p for p in unnamed if p not in helpers]
    return Plan(tuple(restore), tuple(remove), tuple([*named, *helpers]), tuple(unnamed))


_JS_IMPORT = re.compile(r"""(?:require\(\s*|\bfrom\s+|\bimport\s*\(?\s*)['"]([^'"]+)['"]""")


def _module(path: str) -> str:
    """The name a file is imported by: its file name without the suffix."""
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def imported(path: str, text: str) -> set[str]:
    """The module names a test file imports (the last part of each: `tests.helpers` -> helpers;
    JavaScript: `./helpers.js` -> helpers). Python is read with ast; text that does not parse
    imports nothing."""
    if path.endswith(PY_SUFFIXES):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return set()
        out: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out |= {a.name.rsplit(".", 1)[-1] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.module:
                    out.add(node.module.rsplit(".", 1)[-1])
                if node.level:  # from . import helpers
                    out |= {a.name for a in node.names}
        return out
    if path.endswith(JS_SUFFIXES):
        return {_module(m) for m in _JS_IMPORT.findall(text) if m.startswith(".")}
    return set()


# -- named tests ------------------------------------------------------------------------------


def _candidates(files: Mapping[str, str], ref: str) -> Mapping[str, str]:
    """The files a ref can name a test in: of the Python files, those whose module name is a
    part of a dotted ref that names one (`tests.test_slug.TestSlugify`), else all of them; every
    JavaScript file (a describe's name is no file's)."""
    parts = set(ref.strip().split(".")) if ">" not in ref else set()
    python = {p: t for p, t in files.items() if p.endswith(PY_SUFFIXES)}
    named = {p: t for p, t in python.items() if p.rsplit("/", 1)[-1].removesuffix(".py") in parts}
    if not named:
        return files
    return named | {p: t for p, t in files.items() if p not in python}


def named_definitions(files: Mapping[str, str], ref: str, limit: int = 3) -> list[TestDef]:
    """The tests a criterion's ref names among the test files `files` (path -> text): the test
    itself, or each test of the group it names (the first `limit`: each twin is a file the
    runner collects, and costs the check its import)."""
    out: list[TestDef] = []
    for path, text in _candidates(files, ref).items():
        defs = defined_tests(path, text)
        for d in defines_ref(defs, ref):
            if d.kind == "test":
                out.append(d)
            else:
                inside = [
                    t
                    for t in defs
                    if t.kind == "test"
                    and d.start_line <= t.start_line
                    and t.end_line <= d.end_line
                    and (*d.groups, d.name) == t.groups[: len(d.groups) + 1]
                ]
                out.extend(inside)
    unique = list({(d.path, d.groups, d.name): d for d in out}.values())
    return unique[:limit]


def names_test_files(command: str) -> list[str]:
    """The test files a check's command names one by one (`pytest tests/test_a.py`, `node --test
    test/a.test.js`): a runner given files collects those only, never a tripwire beside them."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out = []
    for word in words:
        path = word.split("::", 1)[0].removeprefix("./")
        if path.endswith(PY_SUFFIXES + JS_SUFFIXES) and is_test_path(path) and not is_harness(path):
            out.append(path)
    return out


_STOPS = ("-x", "--exitfirst", "--bail", "--test-bail")


def stops_at_first_failure(command: str) -> str | None:
    """The option with which a check's runner stops at its first failing test (pytest's `-x`,
    `--maxfail`, jest's and mocha's `--bail`, node's `--test-bail`), if any: a tripwire, which
    fails by design, would stop it before the tests after it ran."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for word in words:
        if word in _STOPS or word.startswith(("--maxfail", "--bail=")):
            return word
    return None


# -- the runner's output ----------------------------------------------------------------------

# Where a runner starts the report of one failing test: pytest's `____ name ____` and its
# `=== section ===` banners, node's spec reporter's `test at <file>:<line>:<col>`.
_SECTION = re.compile(r"^(_{3,} .* _{3,}|={3,} .* ={3,}|test at \S+:\d+:\d+)\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def without_tripwire_output(text: str, tokens: Sequence[str]) -> str:
    """A check's output without what its runner wrote about the tripwires, so the end an executor
    reads is its own tests': each section that starts with a line naming a token (to the next
    section), each line naming one, and the lines indented under such a line."""
    if not tokens:
        return text
    out: list[str] = []
    dropping_section = False
    under: int | None = None  # the indent of the last dropped line, while its block lasts
    for line in text.splitlines(keepends=True):
        named = any(t in line for t in tokens)
        if _SECTION.match(line.rstrip("\n")):
            dropping_section, under = named, None
            if named:
                continue
        if dropping_section:
            continue
        if under is not None and (not line.strip() or _indent(line) > under):
            continue
        under = None
        if named:
            under = _indent(line)
            continue
        out.append(line)
    return "".join(out)


# -- changed expectations ---------------------------------------------------------------------


@dataclass(frozen=True)
class Changed:
    """An existing test the submission changed: failed in the grading run (its baseline version)
    and passed in the submission's tree (its own version)."""

    test: str
    files: tuple[str, ...]
    message: str


def changed_expectations(
    grading: Iterable[Report], submitted: Iterable[Report], restored: Sequence[str], root: str = ""
) -> list[Changed]:
    """The tests of the grading reports that failed, are defined in a file the grading tree
    restored (by the report's `file` or classname; any restored test file where the runner says
    neither), and passed in the submission's tree under the same name."""
    passed = {
        name for r in submitted for name, (outcome, _) in outcomes(r).items() if outcome is TestOutcome.PASSED
    }
    tests = [p for p in restored if is_test_path(p)]
    out: list[Changed] = []
    for report in grading:
        for name, (outcome, runs) in outcomes(report).items():
            if outcome is not TestOutcome.FAILED or name not in passed:
                continue
            files = defining_files(runs, tests, root) or (set(tests) if unplaced(runs) else set())
            if files:
                message = next((r.message for r in runs if r.outcome is TestOutcome.FAILED), "")
                out.append(Changed(name, tuple(sorted(files)), message))
    return out
