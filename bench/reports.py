"""Reading a test report and matching verify_refs against it, at the size cap.

    python bench/reports.py [--tests 100000] [--refs 50] [--smoke]

Builds a JUnit report of vitest's shape (one suite per file, "describe > test" names, a failure
in every 50th test) just under MAX_REPORT_BYTES, then prints:
    baseline_xml_parse_s   defusedxml parsing the bytes alone (the floor for any safe reader)
    parse_junit_s          taskgate's parse_junit on the same bytes; vs_baseline = ratio
    first_match_s          the first match (builds the report's index)
    match_per_ref_ms       each further ref, the index reused
    match_reports_ms       match_reports over 3 such reports, per ref
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from xml.sax.saxutils import quoteattr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from defusedxml.ElementTree import fromstring

from benchkit import smoke
from taskgate.domain.reports import MAX_REPORT_BYTES, parse_junit
from taskgate.domain.testrefs import match, match_reports


def build(tests: int) -> bytes:
    per_file, per_group = 500, 25
    out = ['<?xml version="1.0" encoding="UTF-8" ?>\n<testsuites name="vitest tests">\n']
    for f in range(0, tests, per_file):
        path = f"src/module{f // per_file}.test.ts"
        out.append(f'<testsuite name={quoteattr(path)} tests="{per_file}">\n')
        for i in range(f, min(f + per_file, tests)):
            name = f"group {i // per_group} > case {i} keeps working"
            out.append(f'<testcase classname={quoteattr(path)} name={quoteattr(name)} time="0.001">')
            if i % 50 == 0:
                out.append(
                    '<failure message="expected 1 to be 2">AssertionError: expected 1 to be 2</failure>'
                )
            out.append("</testcase>\n")
        out.append("</testsuite>\n")
    out.append("</testsuites>\n")
    return "".join(out).encode()


def timed(fn: object, *args: object) -> tuple[float, object]:
    t0 = time.perf_counter()
    result = fn(*args)  # type: ignore[operator]
    return time.perf_counter() - t0, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", type=int, default=100_000)
    ap.add_argument("--refs", type=int, default=50)
    args = smoke.parse(ap, tests=2000, refs=5)
    data = build(args.tests)
    if len(data) > MAX_REPORT_BYTES:
        sys.exit(f"{len(data)} bytes is over the cap {MAX_REPORT_BYTES}; ask for fewer --tests")
    base_s, _ = timed(fromstring, data)
    parse_s, report = timed(parse_junit, data)
    refs = [f"group {g} > case {g * 25} keeps working" for g in range(args.refs)]
    refs[1::3] = [f"group {g}" for g in range(1, args.refs, 3)]
    first_s, _ = timed(match, report, refs[0])
    t0 = time.perf_counter()
    for ref in refs[1:]:
        match(report, ref)
    per_ref_ms = (time.perf_counter() - t0) / max(1, len(refs) - 1) * 1000
    others = {"a": parse_junit(build(1000)), "b": parse_junit(build(1000))}
    many = {"unit": report, **others}
    match_reports(many, refs[0])  # builds the two small indexes
    t0 = time.perf_counter()
    for ref in refs:
        match_reports(many, ref)
    reports_ms = (time.perf_counter() - t0) / len(refs) * 1000
    print(
        f"tests={args.tests} bytes={len(data)} baseline_xml_parse_s={base_s:.3f} "
        f"parse_junit_s={parse_s:.3f} vs_baseline={parse_s / base_s:.2f} first_match_s={first_s:.3f} "
        f"match_per_ref_ms={per_ref_ms:.3f} match_reports_ms={reports_ms:.3f}"
    )


if __name__ == "__main__":
    main()
