"""Which of a submission's changed paths define a named test, and which are test files: what
the verifier needs to tell a named test the submission wrote from one the baseline already had.

A test's defining file is the report's own `file` attribute where the runner writes one (pytest
with `junit_family=xunit1`, jest-junit with its file attribute, the JSON report's `file`), else
the file its classname names: a path as jest-junit and vitest write it, or pytest's dotted module
path (`tests.test_calc.TestCalc` is `tests/test_calc.py`; the parts after the module are classes,
so they start with a capital letter). Where the runner says neither (node --test), a test
file the submission changes defines it when its source does (`defining_sources`). A test file is one the runner's naming rules name
(`baseline.is_test_file`), one a report names as a test's `file`, or the defining file of a named
test. Pure: names in, names out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from taskgate.domain.baseline import is_test_file
from taskgate.domain.reports import TestCase
from taskgate.domain.testdefs import defined_tests, defines_ref


def _relative(file: str, root: str) -> str:
    """A report's `file` as a path inside the checkout: without the checkout's own absolute
    prefix (vitest and jest write absolute paths), without leading `./`."""
    path = file.replace("\\", "/")
    top = root.rstrip("/") + "/" if root else ""
    if top and path.startswith(top):
        path = path[len(top) :]
    while path.startswith("./"):
        path = path[2:]
    return path


def _named_by_file(file: str, changed: Sequence[str], root: str) -> list[str]:
    """The changed paths a report's `file` attribute names: the same path, or the same path
    seen from a subdirectory the check ran in."""
    path = _relative(file, root)
    if not path or path.startswith("/"):
        return []
    return [p for p in changed if p == path or p.endswith("/" + path)]


def _named_by_classname(classname: str, changed: Sequence[str]) -> str | None:
    """The changed path a classname names, or None: the path itself, else the one whose module
    path (from any directory the check ran in) starts the classname with only classes after it.
    The longest module path wins (`tests/test_calc.py` over `tests.py`)."""
    if not classname:
        return None
    for p in changed:
        if classname == p or p.endswith("/" + classname):
            return p
    parts = classname.split(".")
    best: tuple[int, str] | None = None
    for p in changed:
        stem, dot, ext = p.rpartition(".")
        if not dot or not stem or "/" in ext:
            continue
        module = stem.split("/")
        for start in range(len(module)):
            tail = module[start:]
            rest = parts[len(tail) :]
            if parts[: len(tail)] == tail and all(r[:1].isupper() for r in rest):
                if best is None or len(tail) > best[0]:
                    best = (len(tail), p)
                break
    return best[1] if best is not None else None


# Classnames that say nothing of where a test is: none, or node --test's constant "test".
_UNPLACED = frozenset({"", "test"})


def unplaced(tests: Iterable[TestCase]) -> bool:
    """Whether the runner said nothing of where one of `tests` is defined (no `file`, no
    classname of its own, as node --test writes them): then any changed test file may hold it."""
    return any(not t.file and t.classname in _UNPLACED for t in tests)


def defining_files(tests: Iterable[TestCase], changed: Sequence[str], root: str = "") -> set[str]:
    """The changed paths that define any of `tests` (none: every one of them is defined in a
    file the submission left as it was). `root`: the checkout's absolute path."""
    out: set[str] = set()
    for t in tests:
        if t.file:
            out.update(_named_by_file(t.file, changed, root))
        elif (found := _named_by_classname(t.classname, changed)) is not None:
            out.add(found)
    return out


def paths_of_tests(
    changed: Sequence[str], reported: Iterable[TestCase], defining: Iterable[str], root: str = ""
) -> list[str]:
    """The changed paths that are test files: by the runner's naming rules, named as a test's
    `file` in a report, or defining a named test."""
    found = {p for p in changed if is_test_file(p)} | set(defining)
    for t in reported:
        if t.file:
            found.update(_named_by_file(t.file, changed, root))
    return sorted(found)


def defining_sources(ref: str, texts: Mapping[str, str | None]) -> set[str]:
    """Of the test files `texts` (path -> source; None: not readable), those whose source defines
    a test or group `ref` may name (domain/testdefs.py): where a report says nothing of where a
    test is, a changed file counts as the named test's only if it defines it, so a Python file
    never stands for a node test of the same name."""
    return {p for p, text in texts.items() if text is not None and defines_ref(defined_tests(p, text), ref)}
