"""Report readers: real runners' JUnit XML, the JSON report format, and hostile input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskgate.domain.reports import (
    MAX_GROUP_DEPTH,
    MAX_MESSAGE_CHARS,
    MAX_REPORT_BYTES,
    Group,
    Report,
    ReportError,
    TestCase,
    TestOutcome,
    merge_reports,
    parse_json,
    parse_junit,
    parse_report,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "reports"
P, F, S = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.SKIPPED


def fixture(name: str) -> Report:
    return parse_junit((FIXTURES / name).read_bytes())


def surefire() -> Report:
    return merge_reports(
        parse_junit(p.read_bytes()) for p in sorted((FIXTURES / "surefire").glob("TEST-*.xml"))
    )


def group(report: Report | Group, *path: str) -> Group:
    groups = report.groups
    found: Group | None = None
    for name in path:
        (found,) = [g for g in groups if g.name == name]
        groups = found.groups
    assert found is not None
    return found


def outcomes(g: Group | Report) -> dict[str, TestOutcome]:
    return {t.name: t.outcome for t in g.tests}


# --- real runners ------------------------------------------------------------------------------


def test_pytest_report_is_one_suite_with_dotted_classnames_and_errors_as_failures() -> None:
    r = fixture("pytest/junit.xml")
    assert [g.name for g in r.groups] == ["pytest"] and r.tests == ()
    (suite,) = r.groups
    by_name = {t.name: t for t in suite.tests}
    keeps = by_name["test_keeps_digits"]
    assert keeps.classname == "tests.test_strings.TestSlugify" and keeps.outcome is P
    assert keeps.duration_ms is not None and keeps.duration_ms >= 0
    assert by_name["test_strips_accents"].classname == "tests.test_strings.TestSlugify.TestUnicode"
    emoji = by_name["test_keeps_emoji"]
    assert emoji.outcome is S and emoji.message == "emoji tables are not bundled"
    assert by_name["test_older_api"].outcome is S  # xfail is written as skipped
    err = by_name["test_uses_database"]  # <error> (a broken fixture) counts as failed
    assert err.outcome is F and "database fixture could not connect" in err.message
    cut = by_name["test_cuts_long_text"]
    assert cut.outcome is F and cut.message.startswith("AssertionError: truncate kept one character")
    assert by_name["test_slugify_cases[A-b]"].outcome is F
    assert r.counts() == {P: 9, F: 3, S: 3}


def test_node_report_nests_describes_and_keeps_top_level_tests() -> None:
    r = fixture("node/junit.xml")
    assert [g.name for g in r.groups] == [
        "helpers",
        "parse",
        "slugify",
        "truncate",
        "legacy",
        "trim",
        "helpers",
        "pad",
    ]
    assert outcomes(r) == {"trim": P, "throws": F}  # straight under <testsuites>
    slugify = group(r, "slugify")
    assert outcomes(slugify) == {"keeps digits": P, "lowercases": P}
    assert outcomes(group(r, "slugify", "unicode")) == {"strips accents": P, "keeps emoji": S}
    assert outcomes(group(r, "legacy")) == {"old api": S, "older api": S}  # it.todo is skipped
    assert outcomes(group(r, "parse", "ints")) == {"reads digits": P}
    assert outcomes(group(r, "pad")) == {"pads left": P, "pads right": P}  # subtests
    (cut,) = [t for t in group(r, "truncate").tests if t.name == "cuts long text"]
    assert cut.outcome is F and cut.classname == "test" and "'abc' !== 'ab'" in cut.message
    assert r.counts() == {P: 11, F: 2, S: 3}


def test_node_messages_keep_the_line_breaks_its_junit_attribute_drops() -> None:
    """node's JUnit reporter writes the message attribute with every newline removed; the
    element's text holds it as written, and that is the message a person reads."""
    (cut,) = [t for t in group(fixture("node/junit.xml"), "truncate").tests if t.name == "cuts long text"]
    assert cut.message == "Expected values to be strictly equal:\n\n'abc' !== 'ab'"
    diff = (
        "Expected values to be strictly equal:\n+ actual - expected\n\n+ 'Hello-big-w'\n- 'Hello-big'\n"
        "            ^"
    )
    flat = diff.replace("\n", "")
    xml = (
        '<testsuites><testsuite name="slugify"><testcase name="big" classname="test">'
        f'<failure message="{flat}">Error [ERR_TEST_FAILURE]: {diff}\n    at x (a.js:1:1)</failure>'
        "</testcase></testsuite></testsuites>"
    )
    [big] = list(parse_junit(xml.encode()).all_tests())
    assert big.message == diff
    # A text that does not hold the attribute's characters leaves the attribute as it is.
    other = xml.replace(f"{diff}\n", "something else\nentirely\n")
    assert next(parse_junit(other.encode()).all_tests()).message == flat


def test_vitest_report_has_a_suite_per_file_and_describe_paths_in_names() -> None:
    r = fixture("vitest/junit.xml")
    assert [g.name for g in r.groups] == ["test/numbers.test.js", "test/strings.test.js"]
    strings = group(r, "test/strings.test.js")
    assert strings.groups == ()
    got = outcomes(strings)
    assert got["slugify > keeps digits"] is P
    assert got["slugify > unicode > keeps emoji"] is S
    assert got["truncate > cuts long text"] is F
    assert got["trim"] is P and got["trim > strips spaces"] is P
    assert {t.classname for t in strings.tests} == {"test/strings.test.js"}
    (cut,) = [t for t in strings.tests if t.name == "truncate > cuts long text"]
    assert cut.message == "expected 'abc' to be 'ab' // Object.is equality"
    assert r.counts() == {P: 9, F: 2, S: 3}


def test_jest_junit_reports_configured_and_default() -> None:
    configured = fixture("jest/junit.xml")
    assert [g.name for g in configured.groups] == ["test/strings.test.js", "test/numbers.test.js"]
    got = outcomes(group(configured, "test/strings.test.js"))
    assert got["slugify > unicode > strips accents"] is P and got[" > trim"] is P
    # jest-junit writes no message attribute: the message is the element's text.
    (cut,) = [t for t in group(configured, "test/strings.test.js").tests if t.outcome is F][:1]
    assert cut.message.startswith("Error: expect(received).toBe(expected)")
    # jest-junit writes it.todo as a plain (passing) test case: that is what the report says.
    assert got["legacy > older api"] is P
    default = fixture("jest/junit-default.xml")
    assert [g.name for g in default.groups] == ["slugify", "helpers"]  # the first describe's title
    names = {t.name: t.classname for t in group(default, "slugify").tests}
    assert names["slugify unicode strips accents"] == "slugify unicode strips accents"


def test_surefire_reports_merge_one_file_per_class() -> None:
    r = surefire()
    assert sorted(g.name for g in r.groups) == [
        "com.example.numbers.HelpersTest",
        "com.example.text.HelpersTest",
        "com.example.text.LegacyTest",
        "com.example.text.SlugifyTest",
        "com.example.text.TruncateTest",
    ]
    slug = {t.name: t for t in group(r, "com.example.text.SlugifyTest").tests}
    assert slug["keepsDigits"].classname == "com.example.text.SlugifyTest"
    assert slug["stripsAccents"].classname == "com.example.text.SlugifyTest$Unicode"
    assert slug["keepsEmoji"].outcome is S and slug["keepsEmoji"].message == "emoji tables are not bundled"
    trunc = {t.name: t for t in group(r, "com.example.text.TruncateTest").tests}
    assert trunc["throwsOnNull"].outcome is F and trunc["throwsOnNull"].message == "exploded on purpose"
    assert trunc["cutsLongText"].message.startswith("truncate kept one character too many ==>")
    assert r.counts() == {P: 8, F: 2, S: 3}


def test_a_single_testsuite_root_and_a_namespaced_report_are_read() -> None:
    plain = parse_junit(b'<testsuite name="s"><testcase name="t" classname="c" time="0.25"/></testsuite>')
    assert plain == Report(groups=(Group("s", tests=(TestCase("t", "c", P, "", 250),)),))
    spaced = parse_junit(
        b'<testsuites xmlns="urn:example:junit"><testsuite name="s"><testcase name="t">'
        b'<failure message="boom"/></testcase></testsuite></testsuites>'
    )
    assert spaced.groups[0].tests == (TestCase("t", "", F, "boom", None),)


def test_odd_but_harmless_attributes_do_not_refuse_a_report() -> None:
    r = parse_junit(
        b"<testsuites><testsuite><testcase/>"
        b'<testcase name="a" time="soon"/><testcase name="b" time="-1"/><testcase name="c" time="nan"/>'
        b'<testcase name="d"><skipped/><failure message="both"/></testcase>'
        b'<testcase name="e"><error>only text</error></testcase>'
        b"</testsuite></testsuites>"
    )
    tests = r.groups[0].tests
    assert r.groups[0].name == ""
    assert [t.name for t in tests] == ["", "a", "b", "c", "d", "e"]
    assert [t.duration_ms for t in tests] == [None] * 6
    assert tests[4].outcome is F and tests[4].message == "both"  # a failure beats a skip
    assert tests[5].outcome is F and tests[5].message == "only text"


def test_messages_are_clipped() -> None:
    long = "x" * (MAX_MESSAGE_CHARS * 3)
    r = parse_junit(
        f'<testsuite name="s"><testcase name="t"><failure message="{long}"/></testcase></testsuite>'.encode()
    )
    message = r.groups[0].tests[0].message
    assert len(message) == MAX_MESSAGE_CHARS and message.endswith("…")


def test_declared_encodings_are_honoured() -> None:
    latin1 = '<?xml version="1.0" encoding="ISO-8859-1"?><testsuite name="café"><testcase name="crème"/></testsuite>'
    r = parse_junit(latin1.encode("latin-1"))
    assert r.groups[0].name == "café" and r.groups[0].tests[0].name == "crème"
    utf16 = '<?xml version="1.0" encoding="UTF-16"?><testsuite name="s"><testcase name="ü"/></testsuite>'
    assert parse_junit(utf16.encode("utf-16")).groups[0].tests[0].name == "ü"


# --- hostile and broken XML -------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuite name="&lol9;"><testcase name="t"/></testsuite>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE testsuite [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<testsuite name="s"><testcase name="t"><failure message="&secret;"/></testcase></testsuite>"""

EXTERNAL_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE testsuite SYSTEM "http://127.0.0.1:9/junit.dtd">
<testsuite name="s"><testcase name="t"/></testsuite>"""

PLAIN_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE testsuite [<!ELEMENT testsuite ANY>]>
<testsuite name="s"><testcase name="t"/></testsuite>"""


@pytest.mark.parametrize("data", [BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD, PLAIN_DTD])
def test_dtds_and_entities_are_refused(data: bytes) -> None:
    with pytest.raises(ReportError) as e:
        parse_junit(data)
    assert e.value.reason == "unsafe"
    assert str(e.value).startswith("report refused: it declares a DTD or entities")
    assert "root:" not in str(e.value)  # nothing of /etc/passwd


def test_an_entity_without_a_doctype_is_malformed_not_resolved() -> None:
    with pytest.raises(ReportError) as e:
        parse_junit(b'<testsuite name="&secret;"/>')
    assert e.value.reason == "malformed" and "undefined entity" in str(e.value)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not xml at all",
        b"<testsuite><testcase></testsuite>",
        b'<testsuite name="s"/><testsuite name="t"/>',
        b"<testsuite name='\xff\xfe'/>",  # bytes that are not UTF-8, and no declared encoding
    ],
)
def test_malformed_xml_is_refused(data: bytes) -> None:
    with pytest.raises(ReportError) as e:
        parse_junit(data)
    assert e.value.reason == "malformed" and str(e.value).startswith("report is not well-formed XML")


@pytest.mark.parametrize(
    ("data", "root"),
    [(b'<assemblies><assembly name="x"/></assemblies>', "assemblies"), (b"<TestRun/>", "TestRun")],
)
def test_xml_that_is_not_junit_is_refused(data: bytes, root: str) -> None:
    with pytest.raises(ReportError) as e:
        parse_junit(data)
    assert e.value.reason == "wrong_shape" and f"<{root}>" in str(e.value)


def test_suites_nested_too_deep_are_refused() -> None:
    ok = MAX_GROUP_DEPTH
    deep = b"<testsuite name='s'>" * ok + b"<testcase name='t'/>" + b"</testsuite>" * ok
    r = parse_junit(deep)
    g = r.groups[0]
    for _ in range(ok - 1):
        (g,) = g.groups
    assert g.tests[0].name == "t"
    deeper = b"<testsuite name='s'>" * (ok + 1) + b"</testsuite>" * (ok + 1)
    with pytest.raises(ReportError) as e:
        parse_junit(deeper)
    assert e.value.reason == "wrong_shape" and "nested deeper" in str(e.value)


def test_reports_over_the_cap_are_refused_in_both_formats() -> None:
    head = b'<testsuite name="s"><testcase name="t"/></testsuite>'
    at_cap = head + b" " * (MAX_REPORT_BYTES - len(head))
    assert parse_report(at_cap, "junit").groups[0].name == "s"
    for fmt in ("junit", "json"):
        with pytest.raises(ReportError) as e:
            parse_report(at_cap + b" ", fmt)  # type: ignore[arg-type]
        assert e.value.reason == "too_large" and isinstance(e.value, ValueError)
        assert (
            str(e.value)
            == f"report is {MAX_REPORT_BYTES + 1} bytes; the limit is {MAX_REPORT_BYTES} bytes (20 MiB)"
        )


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ReportError) as e:
        parse_report(b"{}", "trx")  # type: ignore[arg-type]
    assert e.value.reason == "wrong_shape" and "'trx'" in str(e.value)


# --- the JSON report format -------------------------------------------------------------------

SEED_JSON = b"""{
  "tests": [
    { "id": "InactivityTimeoutTests.ClosesAfterThirtyMinutes", "status": "passed", "duration_ms": 412 },
    { "id": "InactivityTimeoutTests.SkipsActiveHandling", "status": "failed", "message": "Expected Open, got Closed" }
  ]
}"""


def test_the_seed_json_example_parses() -> None:
    r = parse_json(SEED_JSON)
    assert r.groups == ()
    assert r.tests == (
        TestCase("ClosesAfterThirtyMinutes", "InactivityTimeoutTests", P, "", 412),
        TestCase("SkipsActiveHandling", "InactivityTimeoutTests", F, "Expected Open, got Closed", None),
    )
    assert parse_report(SEED_JSON, "json") == r


def test_json_ids_split_only_when_they_look_like_dotted_names() -> None:
    ids = ["a.b.C.d", "slugify > keeps digits", "parses 1.5", "plain", ".hidden", "ends.", "x.py::test_y"]
    data = json.dumps({"tests": [{"id": i, "status": "skipped"} for i in ids]}).encode()
    got = [(t.classname, t.name) for t in parse_json(data).tests]
    assert got == [
        ("a.b.C", "d"),
        ("", "slugify > keeps digits"),
        ("", "parses 1.5"),
        ("", "plain"),
        ("", ".hidden"),
        ("", "ends."),
        ("x", "py::test_y"),
    ]
    assert all(t.outcome is S for t in parse_json(data).tests)


def test_json_optional_fields_and_extra_keys() -> None:
    data = (
        b'{"runner": "custom", "tests": [{"id": "t", "status": "passed", "duration_ms": 2.6, '
        b'"message": null, "retries": 2}]}'
    )
    assert parse_json(data).tests == (TestCase("t", "", P, "", 3),)
    assert parse_json(b'{"tests": []}') == Report()
    long = json.dumps({"tests": [{"id": "t", "status": "failed", "message": "m" * 5000}]}).encode()
    assert len(parse_json(long).tests[0].message) == MAX_MESSAGE_CHARS


@pytest.mark.parametrize(
    ("data", "reason", "says"),
    [
        (b'{"tests": [{"id": "t", "status": "error"}]}', "wrong_shape", "at tests.0.status"),
        (b'{"tests": [{"id": "t", "status": "PASSED"}]}', "wrong_shape", "at tests.0.status"),
        (b'{"tests": [{"status": "passed"}]}', "wrong_shape", "at tests.0.id: Field required"),
        (b'{"tests": [{"id": "", "status": "passed"}]}', "wrong_shape", "at tests.0.id"),
        (b'{"tests": [{"id": 7, "status": "passed"}]}', "wrong_shape", "at tests.0.id"),
        (b'{"tests": [{"id": "t", "status": "passed", "duration_ms": -1}]}', "wrong_shape", "duration_ms"),
        (b'{"tests": [{"id": "t", "status": "passed", "duration_ms": "5"}]}', "wrong_shape", "duration_ms"),
        (b'{"tests": [{"id": "t", "status": "passed", "message": 5}]}', "wrong_shape", "message"),
        (b'{"tests": ["t"]}', "wrong_shape", "at tests.0"),
        (b'{"tests": {"id": "t"}}', "wrong_shape", "at tests"),
        (b'{"results": []}', "wrong_shape", "at tests: Field required"),
        (b"[]", "wrong_shape", "at the top level"),
        (b'"tests"', "wrong_shape", "at the top level"),
        (b"42", "wrong_shape", "at the top level"),
        (b"", "malformed", "not valid JSON"),
        (b'{"tests": [', "malformed", "not valid JSON"),
        (b'{"tests": []} trailing', "malformed", "not valid JSON"),
        (b'{"tests": [{"id": "\xff", "status": "passed"}]}', "malformed", "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "malformed", "not valid JSON"),
    ],
)
def test_bad_json_reports_are_refused_with_a_short_reason(data: bytes, reason: str, says: str) -> None:
    with pytest.raises(ReportError) as e:
        parse_json(data)
    assert e.value.reason == reason
    assert says in str(e.value)
    assert len(str(e.value)) < 300


def test_two_problems_are_counted() -> None:
    with pytest.raises(ReportError) as e:
        parse_json(b'{"tests": [{"id": "a", "status": "x"}, {"id": "b", "status": "y"}]}')
    assert str(e.value).endswith("(and 1 more)")


def test_merge_keeps_suites_apart_and_counts() -> None:
    a = Report(groups=(Group("g", tests=(TestCase("t"),)),), tests=(TestCase("x", outcome=F),))
    b = Report(groups=(Group("g", tests=(TestCase("t", outcome=S),)),))
    merged = merge_reports([a, b])
    assert [g.name for g in merged.groups] == ["g", "g"] and merged.tests == a.tests
    assert merged.counts() == {P: 1, F: 1, S: 1}
    assert merge_reports([]) == Report()
