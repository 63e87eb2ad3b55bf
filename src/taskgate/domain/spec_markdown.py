"""Reading a spec written as Markdown: the shape `render_markdown` writes (`taskgate spec
export`), and the same shape written by hand, so export then create round-trips.

    # SPEC-3: Text helpers              (the "SPEC-<n>: " prefix is optional)

    - Risk: medium                      (or `risk: medium`; default low; Status and
                                         Approved-by lines as export writes them are ignored)

    Any Markdown: the spec's body.

    ## Acceptance criteria

    - **AC-3.1** (test) title_case capitalises each word — `test_text.test_title_case`
    - (command) the module compiles — `python -m py_compile text.py`
    - (review) every new function has a docstring
    - (test, guard) slugs stay lowercase — `test_text.test_lower`

The criteria list is the last `## Acceptance criteria` section: one `- ` item per criterion,
its kind in parentheses (test, command or review), an id in bold optional (the server numbers
criteria itself), and for test and command criteria the verify_ref in backticks after ` — `
(an em dash; ` -- `, an en dash and ` - ` work too: most terminals show the em dash as a
hyphen, so what a person retypes from one is a hyphen). A test criterion marked `(test, guard)` guards behaviour the
baseline already has: its named test passing before the change is what it expects. Pure: text
in, values out; a problem names its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from taskgate.domain.errors import invalid
from taskgate.domain.models import CriterionInput, CriterionKind, Risk

CRITERIA_HEADING = re.compile(r"^##\s+acceptance criteria\s*$", re.IGNORECASE)
_TITLE = re.compile(r"^#\s+(?:SPEC-\d+:\s*)?(?P<title>\S.*?)\s*$")
_META = re.compile(r"^(?:-\s+)?(?P<key>risk|status|approved by)\s*:\s*(?P<value>.*?)\s*$", re.IGNORECASE)
_ITEM = re.compile(
    r"^[-*]\s+(?:\*\*(?P<id>[^*]+)\*\*\s+)?\((?P<kind>[a-z]+)(?:\s*,\s*(?P<marker>[a-z]+))?\)\s+(?P<rest>.+?)\s*$",
    re.IGNORECASE,
)
_REF = re.compile(r"^(?P<text>.*?)\s+(?:—|\u2013|--|-)\s+`(?P<ref>[^`]+)`$")
KINDS = ", ".join(k.value for k in CriterionKind)
GUARD = "guard"  # the marker after a test criterion's kind: `(test, guard)`


@dataclass(frozen=True)
class SpecText:
    title: str
    body: str
    risk: Risk
    criteria: list[CriterionInput]


def parse_criteria(lines: list[str], *, first_line: int = 1) -> list[CriterionInput]:
    """A criteria list: one `- (kind) text — \\`ref\\`` item per criterion; blank lines skipped."""
    out: list[CriterionInput] = []
    for n, raw in enumerate(lines, start=first_line):
        line = raw.strip()
        if not line:
            continue
        m = _ITEM.match(line)
        if m is None:
            raise invalid(
                f"line {n}: a criterion is written `- (test|command|review) what it asks — `ref``, not {line[:80]!r}"
            )
        kind = m.group("kind").lower()
        if kind not in {k.value for k in CriterionKind}:
            raise invalid(f"line {n}: criterion kind {kind!r} is not one of {KINDS}")
        marker = (m.group("marker") or "").lower()
        if marker and marker != GUARD:
            raise invalid(
                f"line {n}: {marker!r} is not a criterion marker; the one marker is `(test, {GUARD})`"
            )
        if marker and kind != CriterionKind.TEST.value:
            raise invalid(f"line {n}: {GUARD} marks test criteria only, not a {kind} criterion")
        rest = m.group("rest")
        ref_m = _REF.match(rest)
        text, ref = (ref_m.group("text"), ref_m.group("ref")) if ref_m else (rest, None)
        if kind != CriterionKind.REVIEW.value and ref is None:
            raise invalid(
                f"line {n}: a {kind} criterion needs its verify_ref in backticks after ' — ' or ' - '"
            )
        if not text.strip():
            raise invalid(f"line {n}: the criterion says nothing before its verify_ref")
        out.append(
            CriterionInput(text=text.strip(), kind=CriterionKind(kind), verify_ref=ref, guard=marker == GUARD)
        )
    return out


def parse_spec_markdown(text: str) -> SpecText:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        raise invalid("the spec file is empty")
    title_m = _TITLE.match(lines[start].strip())
    if title_m is None:
        raise invalid(f"line {start + 1}: a spec starts with its title line, `# Title`")
    heading = max((i for i, line in enumerate(lines) if CRITERIA_HEADING.match(line.strip())), default=None)
    if heading is None:
        raise invalid("the spec has no `## Acceptance criteria` section")
    risk = Risk.LOW
    i = start + 1
    while i < heading:  # metadata lines right under the title, blank lines between them allowed
        line = lines[i].strip()
        meta = _META.match(line) if line else None
        if line and meta is None:
            break
        if meta is not None and meta.group("key").lower() == "risk":
            value = meta.group("value").lower()
            if value not in {r.value for r in Risk}:
                raise invalid(
                    f"line {i + 1}: risk {value!r} is not one of {', '.join(r.value for r in Risk)}"
                )
            risk = Risk(value)
        i += 1
    body = "\n".join(lines[i:heading]).strip()
    criteria = parse_criteria(lines[heading + 1 :], first_line=heading + 2)
    if not criteria:
        raise invalid("the `## Acceptance criteria` section lists no criterion")
    return SpecText(title=title_m.group("title"), body=body, risk=risk, criteria=criteria)
