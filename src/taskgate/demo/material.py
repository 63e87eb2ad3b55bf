"""What `taskgate demo` works on: a small Python package with pytest tests, the spec and tasks
a human writes for it, the commits an agent makes, and a deterministic reviewer (so no model is
needed). Data only; tour.py runs it."""

from __future__ import annotations

PROJECT = "demo"

BASE_FILES = {
    ".gitignore": "reports/\n__pycache__/\n",
    "textkit.py": '''\
"""Small text helpers."""

import re


def slugify(text):
    """A URL slug: lowercase words joined by '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def word_count(text):
    """How many words the text has."""
    return len(text.split())
''',
    "tests/test_slug.py": """\
from textkit import slugify, word_count


def test_keeps_digits():
    assert slugify("Route 66") == "route-66"


def test_counts_words():
    assert word_count("one two  three") == 3
""",
}

TITLE_CASE = '''

def title_case(text):
    """Each word capitalised, the rest lowercase."""
    return " ".join(w[:1].upper() + w[1:].lower() for w in text.split())
'''

TITLE_CASE_TESTS = """\
from textkit import title_case


def test_title_case():
    assert title_case("hello wide WORLD") == "Hello Wide World"
"""

# The first attempt at truncate cuts mid-word (and skips the docstring): its own test, the one
# the spec names, fails, and the reviewer finds no docstring.
TRUNCATE_BROKEN = """

def truncate(text, width):
    return text if len(text) <= width else text[: width - 1] + "…"
"""

TRUNCATE_FIXED = '''

def truncate(text, width):
    """At most `width` characters, cut at a word boundary, ending in '…' when cut."""
    if len(text) <= width:
        return text
    cut = text[: width - 1].rsplit(" ", 1)[0]
    return cut + "…"
'''

TRUNCATE_TESTS = """\
from textkit import truncate


def test_short_text_is_kept():
    assert truncate("short", 10) == "short"


def test_cuts_at_word_boundary():
    assert truncate("the quick brown fox", 12) == "the quick…"
"""

SPEC_TITLE = "Text helpers"
SPEC_BODY = (
    "textkit gains title_case and truncate. Each new function comes with pytest tests and a "
    "docstring; the module stays importable."
)
# (kind, text, verify_ref): the spec's criteria AC-1.1 .. AC-1.4.
SPEC_CRITERIA = [
    ("test", "title_case capitalises each word", "test_title.test_title_case"),
    ("test", "truncate cuts at a word boundary", "test_truncate.test_cuts_at_word_boundary"),
    ("command", "textkit compiles", "{python} -m py_compile textkit.py"),
    ("review", "every new function has a docstring", None),
]
# Which of the spec's criteria each task holds (by position, 1-based).
TASKS = [
    ("Add title_case", [1, 3, 4]),
    ("Add truncate", [2, 4]),
]

# The reviewer the demo's verifier config names. It reads the verifier's prompt on stdin (the
# spec, the review criteria as "- AC-x.y: text", the diff) and judges the docstring criterion
# from the diff alone: every function a non-test file gains must open with a docstring.
REVIEWER = r'''"""taskgate demo's reviewer: deterministic, no model. Reads the verifier's prompt on
stdin and answers {"results": [{"criterion", "result", "rationale"}]} on stdout."""

import json
import re
import sys

prompt = sys.stdin.read()
criteria = re.findall(r"^- (AC-[0-9.]+): (.*)$", prompt, re.MULTILINE)
diff = prompt.split("\nDIFF (against", 1)[-1].splitlines()
added, path = [], ""
for line in diff:
    if line.startswith("+++ "):
        path = line[6:] if line.startswith("+++ b/") else ""
    elif line.startswith("+") and not path.startswith("tests/"):
        added.append((path, line[1:]))
missing, found = [], []
for i, (where, line) in enumerate(added):
    m = re.match(r"\s*def (\w+)\(", line)
    if m:
        found.append(m.group(1))
        nxt = added[i + 1][1].strip() if i + 1 < len(added) else ""
        if not nxt.startswith(('"' * 3, "'" * 3)):
            missing.append(f"{where}: {m.group(1)}")
results = []
for cid, text in criteria:
    if "docstring" not in text:
        results.append({"criterion": cid, "result": "fail", "rationale": "the demo reviewer judges docstrings only"})
    elif missing:
        results.append({"criterion": cid, "result": "fail", "rationale": "no docstring: " + ", ".join(missing)})
    else:
        results.append(
            {"criterion": cid, "result": "pass", "rationale": "docstrings on " + (", ".join(found) or "no new function")}
        )
print(json.dumps({"results": results}))
'''
