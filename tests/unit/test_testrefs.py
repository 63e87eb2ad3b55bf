"""The test-ref matcher on synthetic trees and on every real runner's report."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from taskgate.domain.reports import (
    MAX_GROUP_DEPTH,
    Group,
    Report,
    TestCase,
    TestOutcome,
    merge_reports,
    parse_json,
    parse_junit,
)
from taskgate.domain.run_report import Evidence
from taskgate.domain.testrefs import RefResult, failed_names, match, match_reports, normalize, segments

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "reports"
P, F, S = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.SKIPPED
PASS, FAIL, SKIPPED, MISSING, AMBIGUOUS = (
    Evidence.PASS,
    Evidence.FAIL,
    Evidence.SKIPPED,
    Evidence.MISSING,
    Evidence.AMBIGUOUS,
)


def junit(name: str) -> Report:
    return parse_junit((FIXTURES / name).read_bytes())


def surefire() -> Report:
    return merge_reports(
        parse_junit(p.read_bytes()) for p in sorted((FIXTURES / "surefire").glob("TEST-*.xml"))
    )


def t(name: str, outcome: TestOutcome = P, classname: str = "", message: str = "") -> TestCase:
    return TestCase(name, classname, outcome, message)


# The canonical picture: describe('slugify') with tests, a nested describe, in a file of its own;
# another file with other groups.
SLUGIFY_FILE = Group(
    "src/slugify.test.ts",
    groups=(
        Group(
            "slugify",
            groups=(Group("unicode", tests=(t("strips accents"), t("keeps emoji", S, message="no tables"))),),
            tests=(t("keeps digits"), t("lowercases")),
        ),
        Group("legacy", tests=(t("old api", S), t("older api", S))),
        Group("empty"),
    ),
)
OTHER_FILE = Group(
    "src/other.test.ts",
    groups=(
        Group(
            "truncate", tests=(t("cuts long text", F, message="expected 'ab', got 'abc'"), t("keeps short"))
        ),
        Group("helpers", tests=(t("adds"),)),
    ),
)
THIRD_FILE = Group("src/third.test.ts", groups=(Group("helpers", tests=(t("joins"),)),))
SEED = Report(groups=(SLUGIFY_FILE, OTHER_FILE, THIRD_FILE))


def check(report: Report, ref: str, evidence: Evidence, *says: str) -> RefResult:
    """`says`: parts of what the result tells a person: its detail, then each failing test it
    carries as "<full name>: <message>" on a line of its own."""
    got = match(report, ref)
    assert got.evidence is evidence, (ref, got)
    told = got.detail + "".join(f"\n{f.name}: {f.message}" for f in got.failures)
    for part in says:
        assert part in told, (ref, told)
    return got


# --- the matcher's examples and rules ---------------------------------------------------------


def test_the_seed_examples() -> None:
    check(SEED, "slugify", PASS, "3 of 4 tests passed in group src/slugify.test.ts > slugify, 1 skipped")
    check(SEED, "slugify > keeps digits", PASS, "1 test passed: src/slugify.test.ts > slugify > keeps digits")
    check(SEED, "keeps digits", PASS, "1 test passed: src/slugify.test.ts > slugify > keeps digits")


def test_outer_groups_are_optional_but_segments_are_consecutive_and_end_at_the_node() -> None:
    for ref in (
        "strips accents",
        "unicode > strips accents",
        "slugify > unicode > strips accents",
        "src/slugify.test.ts > slugify > unicode > strips accents",
    ):
        check(SEED, ref, PASS, "slugify > unicode > strips accents")
    check(
        SEED,
        "slugify > unicode",
        PASS,
        "1 of 2 tests passed in group src/slugify.test.ts > slugify > unicode",
    )
    check(SEED, "src/slugify.test.ts > unicode", MISSING)  # skips a level
    check(SEED, "slugify > strips accents", MISSING)  # skips a level
    check(SEED, "slugify > keeps digits > more", MISSING)  # goes past the test
    check(SEED, "src/slugify.test.ts > slugify > keeps", MISSING)  # a prefix of a name is not the name
    check(SEED, "other > slugify > keeps digits", MISSING)  # a group above that is not there


def test_group_rules() -> None:
    # One failure fails the group, and the detail names it with its message.
    check(
        SEED,
        "truncate",
        FAIL,
        "1 of 2 tests failed in group src/other.test.ts > truncate: src/other.test.ts > truncate > cuts long text",
        "\nsrc/other.test.ts > truncate > cuts long text: expected 'ab', got 'abc'",
    )
    check(SEED, "src/other.test.ts", FAIL, "1 of 3 tests failed")
    # All skipped: not a pass.
    check(SEED, "legacy", SKIPPED, "all 2 tests of group src/slugify.test.ts > legacy were skipped")
    lone = Report(groups=(Group(name="g", tests=(TestCase(name="t", outcome=TestOutcome.SKIPPED),)),))
    check(lone, "g", SKIPPED, "the one test of group g was skipped")
    # A group with no test at all has no evidence.
    check(SEED, "empty", MISSING, "group src/slugify.test.ts > empty holds no test")
    # Skipped tests don't fail a group that has a passing test.
    check(SEED, "src/slugify.test.ts", PASS, "3 of 6 tests passed", "3 skipped")


def test_single_tests() -> None:
    check(
        SEED,
        "cuts long text",
        FAIL,
        "1 test failed: src/other.test.ts > truncate > cuts long text",
        "\nsrc/other.test.ts > truncate > cuts long text: expected 'ab', got 'abc'",
    )
    check(
        SEED,
        "keeps emoji",
        SKIPPED,
        "1 test skipped: src/slugify.test.ts > slugify > unicode > keeps emoji: no tables",
    )
    check(SEED, "keeps short", PASS)


def test_nothing_matches_is_missing_with_nearest_names() -> None:
    check(SEED, "keeps digit", MISSING, "no test or group named 'keeps digit'", "nearest names: keeps digits")
    check(SEED, "zzz", MISSING, "no test or group named 'zzz'")
    assert "nearest" not in match(SEED, "zzz").detail
    check(SEED, "", MISSING, "the verify_ref is empty")
    check(SEED, " > > ", MISSING, "the verify_ref is empty")


def test_matching_is_exact_and_case_sensitive() -> None:
    check(SEED, "Slugify", MISSING)
    check(SEED, "keeps  digits", MISSING)
    check(SEED, "slugify > Keeps Digits", MISSING)


def test_whitespace_around_the_separator_is_ignored() -> None:
    for ref in (
        "slugify>keeps digits",
        "  slugify  >   keeps digits  ",
        "slugify > > keeps digits",
        "> slugify > keeps digits",
    ):
        check(SEED, ref, PASS, "slugify > keeps digits")
    assert normalize(" a>b >  c ") == "a > b > c" and segments(" > a > ") == ["a"]


def test_the_same_group_name_in_two_files_is_ambiguous() -> None:
    got = check(SEED, "helpers", AMBIGUOUS)
    assert (
        got.detail
        == "`helpers` matches 2 groups: group src/other.test.ts > helpers, group src/third.test.ts > helpers"
    )
    # A longer path picks one.
    check(SEED, "src/third.test.ts > helpers", PASS, "1 of 1 tests passed")
    check(SEED, "helpers > adds", PASS)


def test_a_group_and_a_test_of_the_same_name_are_ambiguous() -> None:
    report = Report(groups=(Group("f", groups=(Group("trim", tests=(t("a"),)),), tests=(t("trim"),)),))
    check(report, "trim", AMBIGUOUS, "`trim` matches 2 (1 test, 1 group): group f > trim, test f > trim")
    # The same in vitest's flat shape: a test "trim" and a test "trim > a".
    flat = Report(groups=(Group("f", tests=(t("trim"), t("trim > a"))),))
    check(flat, "trim", AMBIGUOUS, "matches 2 (1 test, 1 group): test f > trim, group f > trim")
    check(flat, "trim > a", PASS)


def test_many_matches_are_listed_briefly() -> None:
    report = Report(groups=tuple(Group(f"f{i}", tests=(t("x"),)) for i in range(8)))
    check(report, "x", AMBIGUOUS, "`x` matches 8 tests: test f0 > x, test f1 > x", "f4 > x and 3 more")


def test_classname_name_is_matched_first() -> None:
    # "a.b" is a test's classname.name and also the name of a group: classname.name wins.
    report = Report(
        groups=(Group("s", tests=(t("b", F, classname="a"),), groups=(Group("a.b", tests=(t("x"),)),)),)
    )
    check(report, "a.b", FAIL, "1 test failed: a.b")
    check(report, "s > a.b", PASS)
    # Two tests with the same classname.name in different suites are ambiguous.
    twice = Report(
        groups=(Group("s1", tests=(t("b", classname="a"),)), Group("s2", tests=(t("b", classname="a"),)))
    )
    # Their full names are the same, so the listing says where each sits.
    check(twice, "a.b", AMBIGUOUS, "matches 2 tests: test s1 > b [a], test s2 > b [a]")


def test_junit5_method_names_with_parentheses_also_match_without() -> None:
    report = Report(
        groups=(Group("com.x.SlugTest", tests=(t("keepsDigits()", classname="com.x.SlugTest"),)),)
    )
    for ref in ("com.x.SlugTest.keepsDigits()", "com.x.SlugTest.keepsDigits", "keepsDigits()"):
        check(report, ref, PASS)
    # by name alone the name is exact; as a dotted path through classnames, outer parts optional
    check(report, "keepsDigits", PASS, "1 test passed")
    check(report, "SlugTest.keepsDigits", PASS)
    check(report, "keepsDigit", MISSING)


def test_a_classname_names_a_group_only_when_nothing_else_matched() -> None:
    report = Report(
        groups=(
            Group(
                "pytest",
                tests=(
                    t("test_a", classname="tests.test_x.TestA"),
                    t("test_b", S, classname="tests.test_x.TestA"),
                    t("test_c", classname="tests.test_x.TestA.TestInner"),
                    t("test_d", F, classname="tests.test_x"),
                    t("test_e", classname="tests.test_xy"),
                    t("test_f", classname="Outer$Inner"),
                ),
            ),
        )
    )
    check(
        report,
        "tests.test_x.TestA",
        PASS,
        "2 of 3 tests passed in group tests.test_x.TestA (by classname), 1 skipped",
    )
    check(
        report, "tests.test_x", FAIL, "1 of 4 tests failed in group tests.test_x (by classname)"
    )  # not test_xy
    check(report, "tests", FAIL, "1 of 5 tests failed")
    check(report, "Outer", PASS, "1 of 1 tests passed in group Outer (by classname)")
    check(report, "tests.test", MISSING)  # a prefix must end at a '.' or '$'
    # outer parts optional, as in a '>' path: the class alone, or module and class
    check(report, "TestA", PASS, "2 of 3 tests passed in group tests.test_x.TestA (by classname)")
    check(report, "test_x.TestA", PASS, "in group tests.test_x.TestA")
    check(report, "TestA.test_a", PASS, "1 test passed")
    check(report, "Inner", PASS, "in group Outer$Inner")
    check(report, "estA", MISSING)  # whole parts only
    # A path match comes first: a group named like a classname shadows the classname group.
    shadow = Report(
        groups=(Group("pkg.A", tests=(t("x", classname="pkg.A.B"),)),), tests=(t("y", F, classname="pkg.A"),)
    )
    check(shadow, "pkg.A", PASS, "1 of 1 tests passed in group pkg.A")


def test_a_test_written_twice_is_one_test_that_fails_if_any_run_failed() -> None:
    def twice(*runs: TestOutcome) -> Report:
        return Report(groups=(Group("s", tests=tuple(t("x", o, "C", message=o.value) for o in runs)),))

    check(twice(P, F), "x", FAIL, "1 test failed: C.x (failed in 1 of 2 runs)", "\nC.x: failed")
    check(twice(F, P, P), "C.x", FAIL, "(failed in 1 of 3 runs)")
    check(twice(P, P), "x", PASS, "(passed in 2 of 2 runs)")
    check(twice(S, P), "x", PASS, "(passed in 1 of 2 runs)")
    check(twice(S, S), "x", SKIPPED, "(skipped in 2 of 2 runs)")
    # In a group, such a test counts once.
    check(twice(P, F, P), "s", FAIL, "1 of 1 tests failed")
    # The same name under different classnames is two tests.
    two = Report(groups=(Group("s", tests=(t("x", classname="A"), t("x", classname="B"))),))
    check(two, "x", AMBIGUOUS, "matches 2 tests: test A.x, test B.x")
    check(two, "A.x", PASS)


def test_unnamed_suites_are_transparent() -> None:
    report = Report(groups=(Group("", groups=(Group("g", tests=(t("x"),)),)),))
    check(report, "g > x", PASS, "1 test passed: g > x")


def test_a_failure_message_travels_whole_with_its_test_and_stays_out_of_the_detail() -> None:
    report = Report(tests=(t("x", F, message="m" * 1500),))
    got = match(report, "x")
    assert got.detail == "1 test failed: x"
    assert [(f.name, f.message) for f in got.failures] == [("x", "m" * 1500)]


def test_names_nest_as_deep_as_suites_may_and_no_deeper() -> None:
    deep = " > ".join(["a"] * MAX_GROUP_DEPTH)
    report = Report(tests=(t(deep, F),))
    check(report, "a", AMBIGUOUS, f"matches {MAX_GROUP_DEPTH} (1 test, {MAX_GROUP_DEPTH - 1} groups)")
    check(report, deep, FAIL)
    # Deeper than that (a hostile report), the name is kept whole: one test, no deep tree, and it
    # still counts in its group.
    deeper = " > ".join(["a"] * 100_000)
    report = Report(groups=(Group("g", tests=(t(deeper, F), t("b"))),))
    check(report, "a", MISSING)
    check(report, "g", FAIL, "1 of 2 tests failed")


# --- the JSON format --------------------------------------------------------------------------


def test_json_report_refs() -> None:
    report = parse_json(
        b'{"tests": ['
        b'{"id": "InactivityTimeoutTests.ClosesAfterThirtyMinutes", "status": "passed", "duration_ms": 412},'
        b'{"id": "InactivityTimeoutTests.SkipsActiveHandling", "status": "failed", "message": "Expected Open, got Closed"},'
        b'{"id": "slugify > keeps digits", "status": "passed"},'
        b'{"id": "parses 1.5", "status": "skipped"}]}'
    )
    check(report, "InactivityTimeoutTests.ClosesAfterThirtyMinutes", PASS)
    check(report, "ClosesAfterThirtyMinutes", PASS)
    check(report, "InactivityTimeoutTests.SkipsActiveHandling", FAIL, "Expected Open, got Closed")
    check(
        report,
        "InactivityTimeoutTests",
        FAIL,
        "1 of 2 tests failed in group InactivityTimeoutTests (by classname)",
    )
    check(report, "slugify", PASS, "1 of 1 tests passed in group slugify")
    check(report, "keeps digits", PASS)
    check(report, "parses 1.5", SKIPPED)


# --- real runners' reports --------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["node/junit.xml", "vitest/junit.xml", "jest/junit.xml"])
def test_js_runners_follow_the_seed_examples(fixture: str) -> None:
    r = junit(fixture)
    check(r, "slugify", PASS, "3 of 4 tests passed", "1 skipped")
    check(r, "slugify > keeps digits", PASS, "slugify > keeps digits")
    check(r, "keeps digits", PASS, "slugify > keeps digits")
    check(r, "unicode", PASS, "1 of 2 tests passed")
    check(r, "slugify > unicode > strips accents", PASS)
    check(r, "unicode > keeps emoji", SKIPPED)
    check(r, "truncate", FAIL, "1 of 2 tests failed", "cuts long text")
    check(r, "truncate > cuts long text", FAIL)
    check(r, "truncate > keeps short text", PASS)
    check(r, "throws", FAIL, "exploded on purpose")
    check(r, "trim", AMBIGUOUS, "matches 2")  # a test and a group
    check(r, "trim > strips spaces", PASS)
    check(r, "helpers", AMBIGUOUS, "matches 2 groups: group")  # the same group in two files
    check(r, "helpers > adds", PASS)
    check(r, "helpers > joins", PASS)
    check(r, "parse > ints > reads digits", PASS)
    check(r, "ints", PASS)
    check(r, "parse > reads digits", MISSING)
    check(r, "Slugify", MISSING)


def test_node_specifics() -> None:
    r = junit("node/junit.xml")
    check(r, "legacy", SKIPPED, "all 2 tests")  # it.skip and it.todo
    check(r, "pad", PASS, "2 of 2 tests passed")  # a test with subtests is a group
    check(r, "pad > pads left", PASS)


def test_failed_testcases_are_named_as_results_name_them() -> None:
    """node writes classname="test" on every test: a failing one is named by its describe path."""
    assert failed_names(junit("node/junit.xml")) == ["throws", "truncate > cuts long text"]
    pytest_failed = failed_names(junit("pytest/junit.xml"))
    assert pytest_failed[0] == "tests.test_strings.TestTruncate.test_cuts_long_text"
    twice = Report(tests=(TestCase("a", "m", F), TestCase("a", "m", F), TestCase("b", "m", P)))
    assert failed_names(twice) == ["m.a", "m.a"]  # one name per failed testcase


def test_vitest_specifics() -> None:
    r = junit("vitest/junit.xml")
    check(r, "legacy", SKIPPED, "all 2 tests")
    check(r, "test/strings.test.js > slugify > keeps digits", PASS)
    check(r, "test/strings.test.js.slugify > keeps digits", PASS)  # classname.name
    check(r, "test/numbers.test.js", PASS, "2 of 2 tests passed")


def test_jest_specifics() -> None:
    configured = junit("jest/junit.xml")
    # jest-junit writes it.todo as a passing test, so "legacy" has one "passing" test.
    check(configured, "legacy", PASS, "1 of 2 tests passed", "1 skipped")
    check(configured, "test/strings.test.js > trim > strips spaces", PASS)
    default = junit("jest/junit-default.xml")
    # Defaults join titles with spaces: no structure left, only whole titles match.
    check(default, "slugify unicode strips accents", PASS)
    check(default, "slugify > keeps digits", MISSING, "nearest names: slugify keeps digits")
    check(default, "keeps digits", MISSING)


def test_pytest_refs() -> None:
    r = junit("pytest/junit.xml")
    check(
        r,
        "tests.test_strings.TestSlugify.test_keeps_digits",
        PASS,
        "1 test passed: tests.test_strings.TestSlugify.test_keeps_digits",
    )
    check(r, "test_keeps_digits", PASS)
    check(r, "tests.test_strings.TestSlugify", PASS, "3 of 4 tests passed", "(by classname)", "1 skipped")
    check(r, "tests.test_strings.TestSlugify.TestUnicode", PASS, "1 of 2 tests passed")
    check(r, "tests.test_strings.TestLegacy", SKIPPED, "all 2 tests")  # skip and xfail
    check(r, "tests.test_strings.TestTruncate", FAIL, "truncate kept one character too many")
    check(r, "test_uses_database", FAIL, "database fixture could not connect")  # <error>
    check(r, "tests.test_strings.test_slugify_cases[A-b]", FAIL)
    check(r, "test_slugify_cases[a b-a-b]", PASS)
    check(r, "tests.test_numbers", PASS, "3 of 3 tests passed")
    check(r, "tests.test_strings", FAIL, "3 of 12 tests failed")
    # the same class name in two modules is the same group name in two files: ambiguous
    check(r, "TestHelpers", AMBIGUOUS, "tests.test_numbers.TestHelpers", "tests.test_strings.TestHelpers")
    check(r, "tests.test_numbers.TestHelpers", PASS)
    check(r, "tests.test_strings.TestHelpers", PASS)
    check(r, "test_adds", PASS)
    check(r, "pytest", FAIL, "3 of 15 tests failed")


def test_surefire_refs() -> None:
    r = surefire()
    check(r, "com.example.text.SlugifyTest", PASS, "3 of 4 tests passed", "1 skipped")
    check(r, "com.example.text.SlugifyTest.keepsDigits", PASS)
    check(r, "keepsDigits", PASS)
    check(r, "com.example.text.SlugifyTest > keepsDigits", PASS)
    check(r, "com.example.text.SlugifyTest$Unicode", PASS, "1 of 2 tests passed", "(by classname)")
    check(r, "com.example.text.SlugifyTest$Unicode.keepsEmoji", SKIPPED, "emoji tables are not bundled")
    check(r, "com.example.text.TruncateTest", FAIL, "2 of 3 tests failed")
    check(r, "com.example.text.TruncateTest.throwsOnNull", FAIL, "exploded on purpose")  # <error>
    check(r, "com.example.text.LegacyTest", SKIPPED, "all 2 tests")
    check(r, "com.example.text", FAIL, "(by classname)")
    check(r, "com.example.numbers", PASS, "3 of 3 tests passed")
    check(r, "com.example.numbers.HelpersTest.isPositive{int}[1]", PASS)
    check(r, "HelpersTest", AMBIGUOUS, "matches 2 groups by classname")
    check(r, "com.example.text.HelpersTest", PASS)


# Hand-written, not produced by a runner: there is no .NET SDK on this machine. It follows the
# shape of JunitXml.TestLogger's documented output: one suite per assembly, the class as
# classname, the method with its arguments as name, and a test case that NUnit ran twice with
# the same arguments written twice.
DOTNET_SHAPE = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites name="Slug.Tests.dll" tests="5" failures="2">
  <testsuite name="Slug.Tests.dll" tests="5" skipped="1" failures="2" errors="0" time="0.14">
    <properties />
    <testcase classname="Slug.Tests.SlugifyTests" name="KeepsDigits" time="0.01" />
    <testcase classname="Slug.Tests.SlugifyTests" name="Lowercases(&quot;ABC&quot;)" time="0.01" />
    <testcase classname="Slug.Tests.SlugifyTests" name="KeepsEmoji" time="0"><skipped message="no tables" /></testcase>
    <testcase classname="Slug.Tests.TruncateTests" name="Cuts(3)" time="0.02">
      <failure type="failure" message="  Expected: 3&#xD;&#xA;  But was:  4&#xD;&#xA;">at Slug.Tests.TruncateTests.Cuts</failure>
    </testcase>
    <testcase classname="Slug.Tests.TruncateTests" name="Cuts(3)" time="0.02">
      <failure type="failure" message="  Expected: 3&#xD;&#xA;  But was:  4&#xD;&#xA;">at Slug.Tests.TruncateTests.Cuts</failure>
    </testcase>
  </testsuite>
</testsuites>"""


def test_dotnet_junit_logger_shape() -> None:
    r = parse_junit(DOTNET_SHAPE)
    check(r, "Slug.Tests.SlugifyTests.KeepsDigits", PASS)
    check(r, 'Slug.Tests.SlugifyTests.Lowercases("ABC")', PASS)
    check(r, "Slug.Tests.SlugifyTests", PASS, "2 of 3 tests passed", "1 skipped")
    check(r, "Slug.Tests.TruncateTests.Cuts(3)", FAIL, "(failed in 2 of 2 runs)", "Expected: 3")
    check(r, "Slug.Tests", FAIL, "1 of 4 tests failed")
    check(r, "Slug.Tests.dll", FAIL)


# --- several reports --------------------------------------------------------------------------


def test_match_reports_finds_the_one_report_that_holds_the_ref() -> None:
    reports = {
        "unit": junit("vitest/junit.xml"),
        "e2e": parse_json(b'{"tests": [{"id": "Login.Works", "status": "passed"}]}'),
    }
    got, check_name = match_reports(reports, "slugify > keeps digits")
    assert got.evidence is PASS and check_name == "unit"
    got, check_name = match_reports(reports, "Login.Works")
    assert got.evidence is PASS and check_name == "e2e"
    got, check_name = match_reports(reports, "truncate")
    assert got.evidence is FAIL and check_name == "unit"
    # Ambiguous inside one report: that report produced the evidence.
    got, check_name = match_reports(reports, "helpers")
    assert got.evidence is AMBIGUOUS and check_name == "unit"


def test_match_reports_ambiguous_across_reports_and_missing_everywhere() -> None:
    reports = {"unit": junit("node/junit.xml"), "web": junit("vitest/junit.xml")}
    got, check_name = match_reports(reports, "slugify > keeps digits")
    assert got.evidence is AMBIGUOUS and check_name is None
    assert got.detail.startswith(
        "`slugify > keeps digits` is found in the reports of 2 checks: unit: 1 test passed"
    )
    got, check_name = match_reports(reports, "keeps digit")
    assert got.evidence is MISSING and check_name is None
    assert got.detail.startswith(
        "no test or group named 'keeps digit' in the reports of unit, web; nearest names: keeps digits"
    )
    got, check_name = match_reports({}, "x")
    assert (got.evidence, check_name) == (MISSING, None) and got.detail == "no test report to match against"
    got, check_name = match_reports({"unit": SEED}, "zzz")
    assert (got.evidence, check_name) == (MISSING, None) and "in the reports of unit" in got.detail
    # An empty group is found (MISSING evidence, but the ref points there).
    got, check_name = match_reports({"unit": SEED, "web": junit("vitest/junit.xml")}, "empty")
    assert got.evidence is MISSING and check_name == "unit" and "holds no test" in got.detail


def test_match_is_the_same_for_equal_reports_built_apart_and_across_threads() -> None:
    # The index cache is keyed by object identity: equal reports built apart, reports that come
    # and go, and threads matching at once all see their own report.
    errors: list[BaseException] = []

    def worker(outcome: TestOutcome, want: Evidence) -> None:
        try:
            for _ in range(200):
                report = Report(tests=(t("x", outcome),))
                assert match(report, "x").evidence is want
                del report
                gc.collect(0)
        except BaseException as e:
            errors.append(e)

    pairs = [(P, PASS), (F, FAIL), (S, SKIPPED)] * 2
    threads = [threading.Thread(target=worker, args=pair) for pair in pairs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


# --- a failing test's own full name and message, as each runner writes them -------------------


@pytest.mark.parametrize(
    ("report", "ref", "name", "message"),
    [
        (
            "pytest/junit.xml",
            "test_cuts_long_text",
            "tests.test_strings.TestTruncate.test_cuts_long_text",  # not "pytest > test_cuts_long_text"
            "AssertionError: truncate kept one character too many\nassert 'abc' == 'ab'",
        ),
        (
            "node/junit.xml",
            "cuts long text",
            "truncate > cuts long text",
            "Expected values to be strictly equal",
        ),
        (
            "vitest/junit.xml",
            "cuts long text",
            "test/strings.test.js > truncate > cuts long text",
            "expected 'abc' to be 'ab'",
        ),
        (
            "jest/junit.xml",
            "cuts long text",
            "test/strings.test.js > truncate > cuts long text",
            "Error: expect(received).toBe(expected)",
        ),
    ],
)
def test_a_failing_test_carries_its_full_name_and_its_message(
    report: str, ref: str, name: str, message: str
) -> None:
    got = match(junit(report), ref)
    assert got.evidence is FAIL
    [failure] = got.failures
    assert failure.name == name and failure.message.startswith(message), failure
    assert got.detail == f"1 test failed: {name}"


def test_a_failing_group_carries_its_first_failing_tests_with_their_messages() -> None:
    r = surefire()
    got = match(r, "com.example.text.TruncateTest")
    assert got.evidence is FAIL
    names = [f.name for f in got.failures]
    assert names and all(n.startswith("com.example.text.TruncateTest > ") for n in names)
    assert all(f.message for f in got.failures)
    many = Report(groups=(Group("g", tests=tuple(t(f"x{i}", F, message=f"m{i}") for i in range(5))),))
    got = match(many, "g")
    assert [(f.name, f.message) for f in got.failures] == [
        ("g > x0", "m0"),
        ("g > x1", "m1"),
        ("g > x2", "m2"),
    ]
    assert got.detail == "5 of 5 tests failed in group g: g > x0, g > x1, g > x2 and 2 more"
