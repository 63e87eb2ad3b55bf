"""Test reports: JUnit XML and the JSON report format, read into one tree of groups and tests
(docs/architecture.md, "Test reports and test refs").

Pure: bytes in, values out. The verifier reads the file (inside the checkout, size-capped) and
hands the bytes here; the matcher (`testrefs`) maps a verify_ref onto the tree.

JUnit XML is parsed by defusedxml with DTDs forbidden (so no entity expansion, no external
entity, no billion laughs) and read through junitparser's model. The tree keeps what the runner
wrote: a test's name stays as written (vitest's "slugify > keeps digits" is one name here; the
matcher reads the `>` path in it), each `<testsuite>` is a group, nested suites nest.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal, cast
from xml.etree.ElementTree import Element as XmlElement
from xml.etree.ElementTree import ParseError

import defusedxml
from defusedxml.ElementTree import fromstring
from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped
from junitparser import TestCase as JTestCase
from pydantic import BaseModel, ConfigDict, Field, ValidationError

# The largest report read, in bytes. 20 MiB of JUnit XML is about 100,000 test cases with short
# messages: far more than one project's suite, far less than a memory problem. The verifier
# checks the file's size before reading it; parse_report checks again.
MAX_REPORT_BYTES = 20 * 1024 * 1024
# A failure, error or skip message is clipped to this many characters, ending in "…".
MAX_MESSAGE_CHARS = 2000
# Deeper <testsuite> nesting than this is refused: no runner nests describes that deep, and the
# tree is walked recursively.
MAX_GROUP_DEPTH = 64


class TestOutcome(StrEnum):
    __test__ = False  # not a pytest test class

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class TestCase:
    __test__ = False  # not a pytest test class

    name: str
    classname: str = ""  # JUnit classname ("" when the runner writes none)
    outcome: TestOutcome = TestOutcome.PASSED
    message: str = ""  # failure/error/skip message, clipped to MAX_MESSAGE_CHARS
    duration_ms: int | None = None
    file: str = ""  # the file defining it, where the runner writes one ("" when it does not)


@dataclass(frozen=True)
class Group:
    name: str
    groups: tuple[Group, ...] = ()
    tests: tuple[TestCase, ...] = ()

    def all_tests(self) -> Iterator[TestCase]:
        yield from self.tests
        for g in self.groups:
            yield from g.all_tests()


@dataclass(frozen=True)
class Report:
    groups: tuple[Group, ...] = ()  # top-level <testsuite>s (JSON format: none)
    tests: tuple[TestCase, ...] = ()  # tests outside any suite (JSON format: all of them)

    def all_tests(self) -> Iterator[TestCase]:
        yield from self.tests
        for g in self.groups:
            yield from g.all_tests()

    def counts(self) -> dict[TestOutcome, int]:
        """How many tests passed, failed and were skipped (every outcome present, maybe 0)."""
        got = Counter(t.outcome for t in self.all_tests())
        return {o: got.get(o, 0) for o in TestOutcome}


# Why a report was refused: over MAX_REPORT_BYTES; a DTD or entity declaration (XML bombs,
# external entities); not well-formed XML or JSON (undeclared non-UTF-8 bytes included); well-formed
# but not a JUnit report or not the JSON report format (or suites nested too deep).
ReportReason = Literal["too_large", "unsafe", "malformed", "wrong_shape"]


class ReportError(ValueError):
    """A report that cannot be used. `reason` is stable for code to branch on; the message says
    which, short."""

    def __init__(self, message: str, reason: ReportReason) -> None:
        super().__init__(message)
        self.reason: ReportReason = reason


def parse_report(data: bytes, fmt: Literal["junit", "json"]) -> Report:
    if fmt == "junit":
        return parse_junit(data)
    if fmt == "json":
        return parse_json(data)
    raise ReportError(f"unknown report format {fmt!r}; use junit or json", "wrong_shape")


def merge_reports(reports: Iterable[Report]) -> Report:
    """One report from several files of one run (Maven Surefire writes one file per class).
    Suites stay distinct, so the same suite name in two files stays ambiguous."""
    groups: list[Group] = []
    tests: list[TestCase] = []
    for r in reports:
        groups.extend(r.groups)
        tests.extend(r.tests)
    return Report(groups=tuple(groups), tests=tuple(tests))


def _check_size(data: bytes) -> None:
    if len(data) > MAX_REPORT_BYTES:
        raise ReportError(
            f"report is {len(data)} bytes; the limit is {MAX_REPORT_BYTES} bytes "
            f"({MAX_REPORT_BYTES // (1024 * 1024)} MiB)",
            "too_large",
        )


def _clip(text: str) -> str:
    text = text.strip()
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return text[: MAX_MESSAGE_CHARS - 1].rstrip() + "…"


# ---------------------------------------------------------------------------------------------
# JUnit XML


def parse_junit(data: bytes) -> Report:
    _check_size(data)
    try:
        root: XmlElement = fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except defusedxml.DefusedXmlException as e:
        raise ReportError(
            f"report refused: it declares a DTD or entities, which are not allowed ({e})", "unsafe"
        ) from e
    except ParseError as e:
        raise ReportError(f"report is not well-formed XML: {e}", "malformed") from e
    _strip_namespaces(root)
    try:
        xml: Any = JUnitXml.fromroot(cast(Any, root))  # junitparser's types name its own Element
    except JUnitXmlError as e:
        raise ReportError(
            f"report is not JUnit XML: its root element is <{root.tag}>, not <testsuites> or <testsuite>",
            "wrong_shape",
        ) from e
    # junitparser iterates <testsuite> children of the root; node --test also writes top-level
    # tests straight under <testsuites>, so those are read from the root as test cases too.
    return Report(
        groups=tuple(_group(s, 1) for s in xml),
        tests=tuple(_test(c) for c in xml.iterchildren(JTestCase)),
    )


def _strip_namespaces(root: XmlElement) -> None:
    # A few writers put the JUnit elements in a namespace; the tags are what we read.
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.startswith("{"):
            el.tag = el.tag.split("}", 1)[1]


def _group(suite: Any, depth: int) -> Group:
    if depth > MAX_GROUP_DEPTH:
        raise ReportError(f"test suites are nested deeper than {MAX_GROUP_DEPTH} levels", "wrong_shape")
    return Group(
        name=_attr(suite, "name"),
        groups=tuple(_group(s, depth + 1) for s in suite.testsuites()),
        tests=tuple(_test(c) for c in suite.iterchildren(JTestCase)),
    )


def _attr(element: Any, name: str) -> str:
    value = element._elem.get(name)
    return value if isinstance(value, str) else ""


def _test(case: Any) -> TestCase:
    results = list(case.result)
    failed = [r for r in results if isinstance(r, Failure | Error)]
    skipped = [r for r in results if isinstance(r, Skipped)]
    # An <error> (the test broke rather than asserted) counts as failed, as every runner's
    # summary does; a failure wins over a skip written next to it.
    result: Any
    if failed:
        outcome, result = TestOutcome.FAILED, failed[0]
    elif skipped:
        outcome, result = TestOutcome.SKIPPED, skipped[0]
    else:
        outcome, result = TestOutcome.PASSED, None
    message = ""
    if result is not None:
        # The message attribute when there is one (pytest, surefire, node); jest-junit writes
        # only the element's text.
        text = result._elem.text or ""
        message = _clip(_with_line_breaks(result._elem.get("message") or "", text) or text)
    return TestCase(
        name=_attr(case, "name"),
        classname=_attr(case, "classname"),
        outcome=outcome,
        message=message,
        duration_ms=_duration_ms(case._elem.get("time")),
        file=_attr(case, "file"),
    )


def _with_line_breaks(message: str, text: str) -> str:
    """The message attribute with the line breaks it lost, read back from the element's text.

    `node --test`'s JUnit reporter drops every newline from the attribute ("Expected values to
    be strictly equal:+ actual - expected+ 'a'- 'b'"), and an XML parser turns a raw newline in
    an attribute into a space, while the element's text holds the same message as written. When
    the text holds the attribute's characters in order, whitespace aside, that span of the text
    is the message; else the attribute as it is."""
    if not message or "\n" in message or "\n" not in text:
        return message
    squeezed = "".join(message.split())
    at = [i for i, ch in enumerate(text) if not ch.isspace()]
    start = "".join(text[i] for i in at).find(squeezed)
    if not squeezed or start < 0:
        return message
    span = text[at[start] : at[start + len(squeezed) - 1] + 1]
    return span if "\n" in span else message


def _duration_ms(seconds: str | None) -> int | None:
    if not seconds:
        return None
    try:
        value = float(seconds)
    except ValueError:
        return None  # a bad time attribute is no reason to refuse the report
    if not math.isfinite(value) or value < 0:
        return None
    return round(value * 1000)


# ---------------------------------------------------------------------------------------------
# The JSON report format: {"tests": [{"id", "status", "duration_ms"?, "message"?, "file"?}]}


class _JsonTest(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    id: Annotated[str, Field(min_length=1)]
    status: Literal["passed", "failed", "skipped"]
    duration_ms: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    message: str | None = None
    file: str | None = None


class _JsonReport(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    tests: list[_JsonTest]


def parse_json(data: bytes) -> Report:
    """Each test sits outside any group. An id such as "InactivityTimeoutTests.ClosesAfter" (no
    whitespace, no '>') splits at its last '.' into classname and name, so the whole id matches
    as classname.name and "ClosesAfter" matches by name; any other id is the name as written
    ("slugify > keeps digits" is then a path, "parses 1.5" a name)."""
    _check_size(data)
    try:
        parsed = _JsonReport.model_validate_json(data)
    except ValidationError as e:
        raise _json_problem(e) from e
    tests = []
    for t in parsed.tests:
        classname, name = _split_id(t.id)
        tests.append(
            TestCase(
                name=name,
                classname=classname,
                outcome=TestOutcome(t.status),
                message=_clip(t.message or ""),
                duration_ms=None if t.duration_ms is None else round(t.duration_ms),
                file=t.file or "",
            )
        )
    return Report(tests=tuple(tests))


def _json_problem(e: ValidationError) -> ReportError:
    first = e.errors(include_url=False, include_context=False, include_input=False)[0]
    if first["type"] in ("json_invalid", "json_type"):
        return ReportError(f"report is not valid JSON: {first['msg']}", "malformed")
    where = ".".join(str(p) for p in first["loc"]) or "the top level"
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return ReportError(
        f"report does not follow the JSON report format at {where}: {first['msg']}{more}", "wrong_shape"
    )


def _split_id(test_id: str) -> tuple[str, str]:
    if ">" in test_id or any(c.isspace() for c in test_id) or "." not in test_id.strip("."):
        return "", test_id
    classname, _, name = test_id.rpartition(".")
    return classname, name
