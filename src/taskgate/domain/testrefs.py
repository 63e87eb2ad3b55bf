"""The test-ref rule: which test or group a verify_ref names, and its evidence
(docs/architecture.md, "Test reports and test refs").

A ref is matched, in this order, stopping at the first step that matches anything:

1. `classname.name` of a test, exactly (a JUnit 5 name written as `method()` also answers to
   `classname.method`). Where step 3 would also find other tests or groups for the ref, the
   ref is AMBIGUOUS: an exact decoy does not hide the test its dotted path names.
2. A path through the groups, `group > nested group > test`, outer groups optional: the path may
   start at any depth, its segments are consecutive and it ends at the matched group or test.
   Groups are the report's nested `<testsuite>`s, and the describe path a flat runner writes into
   a test's name: vitest's `slugify > keeps digits` (and jest-junit configured with
   ancestorSeparator " > ") is the test `keeps digits` in the group `slugify`. (A name with more
   than MAX_GROUP_DEPTH parts stays one name.)
3. Only if nothing matched so far: the ref read as a dotted path through classnames, outer parts
   optional, the way step 2 reads a `>` path through suites. It names a test
   (`TestSlugify.test_keeps_digits`) or the group of tests under a class, a module or a package
   (`TestSlugify`, `test_strings.TestSlugify`, `tests`, `Outer$Inner`); parts are separated by
   '.' or '$' and matched whole. The same class name in two modules is two groups, so
   AMBIGUOUS. This step is an addition to the rule: runners without nested suites (pytest, surefire,
   the JSON format) would otherwise have no groups at all, and as it comes last it never changes
   what steps 1 and 2 decide.

Matching is exact and case-sensitive; whitespace around each `>` is ignored, and so are empty
segments (jest-junit writes " > trim" for a test outside any describe).

A ref that matches more than one test or group (a group and a test of the same name, the same
group in two files) is AMBIGUOUS and never passes. A test written more than once in the same
group with the same classname and name (retries, duplicate parameters) is one test with several
runs: it fails if any run failed, passes if a run passed and none failed, and is skipped if every
run was skipped. A single test: passed -> PASS, failed or error (JUnit `<error>`) -> FAIL,
skipped -> SKIPPED. A group passes when at least one of its tests ran (passed) and none failed; skipped tests don't fail
it; a group whose tests were all skipped is SKIPPED; a group with no test at all is MISSING.
"""

from __future__ import annotations

import difflib
import re
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from taskgate.domain.models import FailedTest
from taskgate.domain.reports import MAX_GROUP_DEPTH, Group, Report, TestCase, TestOutcome
from taskgate.domain.run_report import Evidence

MAX_DETAIL_CHARS = 4000
MAX_NAME_CHARS = 1000  # a failing test's name as a result carries it
_LISTED = 5  # how many names an ambiguous result lists
FAILURES_LISTED = 3  # how many failing tests of a group a result carries, with their messages
_SUGGEST_FROM = 20_000  # a MISSING result suggests near names only from reports this small
# node --test's JUnit reporter writes classname="test" on every test: a constant, not a class.
_PLACEHOLDER_CLASSNAMES = frozenset({"test"})


@dataclass(frozen=True)
class RefResult:
    evidence: Evidence
    detail: str  # why, for a person: "1 test passed: slugify > keeps digits"
    # For a FAIL: the failing tests (the first few of a group), each by its full name with its
    # own message from the report, as the runner wrote it (clipped by reports.MAX_MESSAGE_CHARS).
    failures: tuple[FailedTest, ...] = ()


@dataclass(eq=False)
class _Node:
    """A group or a test in the matcher's view of a report. Real groups are `<testsuite>`s;
    implied groups come from `a > b` in a test's name. A test node holds every run of it."""

    name: str
    parent: _Node | None
    is_group: bool
    classname: str = ""
    children: list[_Node] = field(default_factory=list)
    runs: list[TestCase] = field(default_factory=list)

    def path(self) -> list[str]:
        """Names from the outermost group down; an unnamed suite is transparent."""
        names: list[str] = []
        node: _Node | None = self
        while node is not None and node.parent is not None:
            if node.name:
                names.append(node.name)
            node = node.parent
        return names[::-1]

    def label(self) -> str:
        """The path, with the classname when the path does not hold it: tells apart two tests
        whose full names are the same (one class's test in two suites)."""
        text = " > ".join(self.path())
        if (
            self.classname
            and self.classname not in self.path()
            and self.classname not in _PLACEHOLDER_CLASSNAMES
        ):
            text += f" [{self.classname}]"
        return text

    def full_name(self) -> str:
        """A test's own full name, the way a person finds it in the project: `classname.name`
        when the runner writes a real classname (pytest's module and class, a JSON id) that its
        suites do not already hold, else its path through the groups (node's and vitest's
        describes, a Surefire class suite). A runner's own root suite (pytest's "pytest") is not
        part of a test's name. A group's full name is its path."""
        path = self.path()
        cls = self.classname
        if (
            not self.is_group
            and cls
            and cls not in path
            and cls != self.name
            and cls not in _PLACEHOLDER_CLASSNAMES
        ):
            return f"{cls}.{self.name}"
        return " > ".join(path)

    def tests(self) -> Iterator[_Node]:
        # Iterative: a name like "a > a > ... > a" nests implied groups as deep as it likes.
        stack = [self]
        while stack:
            node = stack.pop()
            if node.is_group:
                stack.extend(reversed(node.children))
            else:
                yield node


def segments(text: str) -> list[str]:
    """A ref or a test name read as a path: split at '>', each part stripped, empty parts dropped."""
    if ">" not in text:
        text = text.strip()
        return [text] if text else []
    return [part for part in map(str.strip, text.split(">")) if part]


def normalize(ref: str) -> str:
    return " > ".join(segments(ref))


class _Index:
    """A report as nodes, with lookups built once (a report is immutable, so one index serves
    every criterion matched against it)."""

    def __init__(self, report: Report) -> None:
        self.root = _Node("", None, True)
        self.nodes: list[_Node] = []
        self.by_full_name: dict[str, list[_Node]] = {}  # normalized "classname.name" -> tests
        self.by_classname: dict[str, list[_Node]] = {}
        self.by_name: dict[str, list[_Node]] = {}
        self._add_tests(self.root, report.tests)
        for g in report.groups:
            self._add_group(self.root, g)
        for node in self.nodes:
            self.by_name.setdefault(node.name, []).append(node)

    def _add_group(self, parent: _Node, group: Group) -> None:
        node = _Node(group.name.strip(), parent, True)
        parent.children.append(node)
        self.nodes.append(node)
        for g in group.groups:
            self._add_group(node, g)
        self._add_tests(node, group.tests)

    def _add_tests(self, parent: _Node, tests: Iterable[TestCase]) -> None:
        implied: dict[tuple[int, str], _Node] = {}
        same: dict[tuple[int, str, str], _Node] = {}
        for case in tests:
            parts = segments(case.name)
            if not parts or len(parts) > MAX_GROUP_DEPTH:
                # No runner nests describes that deep; a name like that stays one name, so a
                # hostile report cannot make the tree deep (paths are walked per candidate).
                parts = [case.name.strip()]
            at = parent
            for part in parts[:-1]:
                key = (id(at), part)
                if key not in implied:
                    implied[key] = _Node(part, at, True)
                    at.children.append(implied[key])
                    self.nodes.append(implied[key])
                at = implied[key]
            test_key = (id(at), case.classname, parts[-1])
            node = same.get(test_key)
            if node is None:
                node = same[test_key] = _Node(parts[-1], at, False, classname=case.classname)
                at.children.append(node)
                self.nodes.append(node)
                if case.classname:
                    self.by_classname.setdefault(case.classname, []).append(node)
                    names = [case.name] + ([case.name[:-2]] if case.name.endswith("()") else [])
                    for name in names:
                        full = normalize(f"{case.classname}.{name}")
                        self.by_full_name.setdefault(full, []).append(node)
            node.runs.append(case)

    def find_classname_name(self, ref: str) -> list[_Node]:
        return list(self.by_full_name.get(normalize(ref), []))

    def find_path(self, parts: list[str]) -> list[_Node]:
        n = len(parts)
        return [node for node in self.by_name.get(parts[-1], []) if node.path()[-n:] == parts]

    def find_by_classname(self, ref: str) -> list[_Node]:
        """Step 3: the ref read as a dotted path through classnames, outer parts optional, the
        way a `>` path is read through suites. It names a test (`TestSlugify.test_keeps_digits`
        for `tests.test_strings.TestSlugify.test_keeps_digits`) or a group: a class, a module, a
        package (`TestSlugify`, `test_strings.TestSlugify`, `tests`). The same class name in two
        modules is two groups, so AMBIGUOUS."""
        ref = ref.strip()
        if not ref:
            return []
        tests = [n for full, nodes in self.by_full_name.items() if full.endswith("." + ref) for n in nodes]
        want = _dotted(ref)
        groups: dict[str, list[_Node]] = {}
        for classname, nodes in self.by_classname.items():
            parts = _dotted(classname)
            for end in range(len(want), len(parts) + 1):
                if parts[end - len(want) : end] == want:
                    prefix = _dotted_prefix(classname, end)
                    groups.setdefault(prefix, []).extend(nodes)
        found = [*tests, *(_Node(prefix, None, True, children=nodes) for prefix, nodes in groups.items())]
        return found

    def names(self) -> set[str]:
        return (set(self.by_name) | set(self.by_full_name)) - {""}


# One index per live report object: the verifier matches every criterion against the same few
# reports, and building the index is most of a match's cost. Keyed by identity (hashing a report
# would walk it); an entry goes when its report is freed, before its id can be reused. No lock:
# each dict operation is atomic, two threads may at worst build the same index twice, and a
# weakref callback that took a lock could deadlock when the collector runs inside the locked code.
_INDEXES: dict[int, tuple[weakref.ref[Report], _Index]] = {}


def _index(report: Report) -> _Index:
    key = id(report)
    hit = _INDEXES.get(key)
    if hit is not None and hit[0]() is report:
        return hit[1]
    index = _Index(report)

    def forget(_: weakref.ref[Report]) -> None:
        _INDEXES.pop(key, None)

    _INDEXES[key] = (weakref.ref(report, forget), index)
    return index


def _run_outcome(runs: list[TestCase]) -> TestOutcome:
    outcomes = {r.outcome for r in runs}
    if TestOutcome.FAILED in outcomes:
        return TestOutcome.FAILED
    if TestOutcome.PASSED in outcomes:
        return TestOutcome.PASSED
    return TestOutcome.SKIPPED


def _first_message(runs: list[TestCase], outcome: TestOutcome) -> str:
    """The first message of a run with this outcome, as the report holds it."""
    return next((r.message for r in runs if r.outcome is outcome and r.message), "")


def _failure(node: _Node) -> FailedTest:
    name = node.full_name()
    if len(name) > MAX_NAME_CHARS:  # no runner writes such a name; a hostile report may
        name = name[: MAX_NAME_CHARS - 1] + "…"
    return FailedTest(name=name, message=_first_message(node.runs, TestOutcome.FAILED))


def _clip(text: str) -> str:
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 1].rstrip() + "…"


def _judge_test(node: _Node) -> RefResult:
    outcome = _run_outcome(node.runs)
    runs = ""
    if len(node.runs) > 1:
        counted = sum(1 for r in node.runs if r.outcome is outcome)
        runs = f" ({outcome.value} in {counted} of {len(node.runs)} runs)"
    evidence = {
        TestOutcome.PASSED: Evidence.PASS,
        TestOutcome.FAILED: Evidence.FAIL,
        TestOutcome.SKIPPED: Evidence.SKIPPED,
    }[outcome]
    # A skip's reason says why it did not run; a failure's message travels in `failures`.
    reason = _first_message(node.runs, outcome) if outcome is TestOutcome.SKIPPED else ""
    tail = f": {reason}" if reason else ""
    failures = (_failure(node),) if outcome is TestOutcome.FAILED else ()
    return RefResult(evidence, _clip(f"1 test {outcome.value}: {node.full_name()}{runs}{tail}"), failures)


def _judge_group(node: _Node, label: str) -> RefResult:
    tests = list(node.tests())
    if not tests:
        return RefResult(Evidence.MISSING, _clip(f"group {label} holds no test"))
    by = {o: [t for t in tests if _run_outcome(t.runs) is o] for o in TestOutcome}
    failed, passed, skipped = by[TestOutcome.FAILED], by[TestOutcome.PASSED], by[TestOutcome.SKIPPED]
    n = len(tests)
    if failed:
        shown = failed[:FAILURES_LISTED]
        names = ", ".join(t.full_name() for t in shown)
        more = f" and {len(failed) - len(shown)} more" if len(failed) > len(shown) else ""
        return RefResult(
            Evidence.FAIL,
            _clip(f"{len(failed)} of {n} tests failed in group {label}: {names}{more}"),
            tuple(_failure(t) for t in shown),
        )
    if not passed:
        every = "the one test" if n == 1 else f"all {n} tests"
        return RefResult(
            Evidence.SKIPPED, _clip(f"{every} of group {label} {'was' if n == 1 else 'were'} skipped")
        )
    extra = f", {len(skipped)} skipped" if skipped else ""
    return RefResult(Evidence.PASS, _clip(f"{len(passed)} of {n} tests passed in group {label}{extra}"))


def _judge(node: _Node) -> RefResult:
    return _judge_group(node, node.label()) if node.is_group else _judge_test(node)


def _listing(nodes: list[_Node]) -> str:
    """The first few of several matches, each by its full name, or by its label where two
    listed share a full name (they differ in where they sit)."""
    names = [n.full_name() for n in nodes[:_LISTED]]
    twice = {name for name in names if names.count(name) > 1}
    shown = ", ".join(
        ("group " if n.is_group else "test ") + (n.label() if name in twice else name)
        for n, name in zip(nodes, names, strict=False)
    )
    more = f" and {len(nodes) - _LISTED} more" if len(nodes) > _LISTED else ""
    return shown + more


def _matches(nodes: list[_Node]) -> str:
    """ "71 tests", "2 groups", "2 (1 test, 1 group)"."""
    groups = sum(1 for n in nodes if n.is_group)
    tests = len(nodes) - groups

    def count(k: int, word: str) -> str:
        return f"{k} {word}{'s' if k != 1 else ''}"

    if groups and tests:
        return f"{len(nodes)} ({count(tests, 'test')}, {count(groups, 'group')})"
    return count(tests, "test") if tests else count(groups, "group")


def failed_names(report: Report) -> list[str]:
    """One name per failed testcase of a report (a test that failed twice is named twice), each
    the test's full name as a result gives it: node's `slugify > keeps digits`, not its
    placeholder classname `test.keeps digits`."""
    return [
        _failure(node).name
        for node in _index(report).root.tests()
        for run in node.runs
        if run.outcome is TestOutcome.FAILED
    ]


def outcomes(report: Report) -> dict[str, tuple[TestOutcome, tuple[TestCase, ...]]]:
    """Each test a report holds, by its full name as a result gives it (node's `slugify > keeps
    digits`), with its outcome over its runs and the runs themselves."""
    return {
        node.full_name(): (_run_outcome(node.runs), tuple(node.runs))
        for node in _index(report).root.tests()
        if node.runs
    }


def match(report: Report, ref: str) -> RefResult:
    """The evidence a report holds for one verify_ref (the module docstring is the rule)."""
    index = _index(report)
    result, found = _match(index, ref)
    return result if found else _missing(ref, [index])


def _named(index: _Index, parts: list[str], ref: str) -> list[_Node]:
    """What steps 1 and 2 find for a ref (step 3 only where they find nothing)."""
    exact = index.find_classname_name(ref)
    hits = exact or index.find_path(parts)
    if len(exact) == 1:
        # A test written to answer to the ref exactly does not hide another that the ref names
        # as a dotted path (the same test under a longer module path): both are the ref's.
        hits = [*exact, *(n for n in index.find_by_classname(ref) if n is not exact[0])]
    return hits


def matched_tests(reports: Mapping[str, Report], ref: str) -> tuple[TestCase, ...]:
    """Every run of the tests a ref names (each test of the group it names), when it names
    exactly one test or group in exactly one report; else none."""
    parts = segments(ref)
    if not parts:
        return ()
    found: list[_Node] = []
    for report in reports.values():
        index = _index(report)
        found += _named(index, parts, ref) or index.find_by_classname(ref)
    if len(found) != 1:
        return ()
    return tuple(run for test in found[0].tests() for run in test.runs)


def _match(index: _Index, ref: str) -> tuple[RefResult, bool]:
    """The result, and whether the ref points at anything in this report."""
    parts = segments(ref)
    if not parts:
        return RefResult(Evidence.MISSING, "the verify_ref is empty"), False
    hits = _named(index, parts, ref)
    if len(hits) > 1:
        detail = f"`{normalize(ref)}` matches {_matches(hits)}: {_listing(hits)}"
        return RefResult(Evidence.AMBIGUOUS, _clip(detail)), True
    if hits:
        return _judge(hits[0]), True
    by_classname = index.find_by_classname(ref)
    if len(by_classname) > 1:
        labels = ", ".join(n.name if n.is_group else n.full_name() for n in by_classname[:_LISTED])
        more = f" and {len(by_classname) - _LISTED} more" if len(by_classname) > _LISTED else ""
        detail = f"`{ref.strip()}` matches {_matches(by_classname)} by classname: {labels}{more}"
        return RefResult(Evidence.AMBIGUOUS, _clip(detail)), True
    if by_classname:
        node = by_classname[0]
        return (_judge_group(node, f"{node.name} (by classname)") if node.is_group else _judge(node)), True
    return RefResult(Evidence.MISSING, ""), False


_CLASS_SEP = re.compile(r"[.$]")


def _dotted(name: str) -> list[str]:
    return [p for p in _CLASS_SEP.split(name.strip()) if p]


def _dotted_prefix(classname: str, parts: int) -> str:
    """The classname up to (not including) the separator after its first `parts` parts."""
    seen = 0
    for i, ch in enumerate(classname):
        if ch in ".$":
            if i and classname[i - 1] not in ".$":
                seen += 1
            if seen == parts:
                return classname[:i]
    return classname


def _missing(ref: str, indexes: list[_Index], where: str = "") -> RefResult:
    if not segments(ref):
        return RefResult(Evidence.MISSING, "the verify_ref is empty")
    # Suggestions only here, for the final answer: most reports miss most refs in match_reports.
    names = set().union(*(index.names() for index in indexes))
    parts = segments(ref)
    near = (
        difflib.get_close_matches(parts[-1], sorted(names), n=3, cutoff=0.6)
        if len(names) <= _SUGGEST_FROM
        else []
    )
    hint = f"; nearest names: {', '.join(near)}" if near else ""
    return RefResult(Evidence.MISSING, _clip(f"no test or group named {normalize(ref)!r}{where}{hint}"))


def match_reports(reports: Mapping[str, Report], ref: str) -> tuple[RefResult, str | None]:
    """Match one ref against every check's report (keyed by check name). Found in more than one
    report it is AMBIGUOUS. Returns the result and the check whose report produced it (None when
    the ref is missing from every report or found in several)."""
    if not reports:
        return RefResult(Evidence.MISSING, "no test report to match against"), None
    indexes = {check: _index(report) for check, report in reports.items()}
    found = {}
    for check, index in indexes.items():
        result, hit = _match(index, ref)
        if hit:
            found[check] = result
    if len(found) == 1:
        ((check, result),) = found.items()
        return result, check
    if len(found) > 1:
        where = "; ".join(f"{check}: {r.detail}" for check, r in found.items())
        detail = f"`{normalize(ref)}` is found in the reports of {len(found)} checks: {where}"
        return RefResult(Evidence.AMBIGUOUS, _clip(detail)), None
    return _missing(ref, list(indexes.values()), f" in the reports of {', '.join(indexes)}"), None
