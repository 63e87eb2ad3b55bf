"""Comments in src/, tests/, bench/, functions/ and scripts/ stand on their own: none points at an
issue number, a numbered seed document or a design file a clone does not have; what needs more
than a comment is in docs/architecture.md, and every pointer there names a section that exists."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "taskgate"
# Beside src/: the tests, the benches, the Lambda entry points and the scripts' Python.
OTHER_ROOTS = (ROOT / "tests", ROOT / "bench", ROOT / "functions", ROOT / "scripts")
ARCHITECTURE = ROOT / "docs" / "architecture.md"

# An issue by number (with or without a hash sign), a seed document by its file name, or the
# design document the code was first written from (not in the repository).
_POINTERS = r"\bissues?\s*#?\d+|(?<![\w/&])#\d{1,5}\b|\b\d{3}_[\w*-]*\.txt\b|\bDESIGN\.md\b"
# src/ has no use for the word seed at all.
FORBIDDEN = re.compile(_POINTERS + r"|\bseeds?\b", re.IGNORECASE)
# Tests and benches draw random seeds, so there only a seed document is refused: a seed and its
# three-digit number, the possessive of one, or the plural with an article as a set of documents.
FORBIDDEN_OUTSIDE_SRC = re.compile(
    _POINTERS + r"|\bseeds?\s+\d{3}\b|\bseed's\b|\bseeds'(?!\w)|\bthe\s+seeds\b", re.IGNORECASE
)
POINTER = re.compile(r'docs/architecture\.md, "([^"]+)"')


def comments(source: str) -> Iterator[tuple[int, str]]:
    """Each comment and docstring line of a module, with its line number."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                for offset, line in enumerate(first.value.value.splitlines()):
                    yield first.lineno + offset, line


def offenders(source: str, name: str, pattern: re.Pattern[str] = FORBIDDEN) -> list[str]:
    return [
        f"{name}:{line}: {found.group(0)!r} in {text.strip()[:100]}"
        for line, text in comments(source)
        for found in pattern.finditer(text)
    ]


def modules_outside_src() -> list[Path]:
    return sorted(path for root in OTHER_ROOTS for path in root.rglob("*.py"))


@pytest.mark.parametrize(
    "source",
    [
        "x = 1  # see issue 18\n",
        "# Issue #7 explains it\nx = 1\n",
        "x = 1  # fixed in #123\n",
        "def f():\n    '''The rule of seed 000.'''\n",
        "class C:\n    '''As the seeds say.'''\n",
        "# from 001_agent_lifecycle.txt\n",
        '"""DESIGN.md section 4."""\n',
    ],
)
def test_the_scan_finds_each_kind_of_pointer(source: str) -> None:
    assert offenders(source, "m.py")


@pytest.mark.parametrize(
    "source",
    [
        "x = '#12'  # a string, not a comment\n",
        "random.seed(1)  # the generator is re-seeded per run\n",
        "# issues are filed by humans; the color is #ffffff\nx = 1\n",
        "x = 1  # HTML entities such as &#160; are escaped\n",
    ],
)
def test_the_scan_leaves_other_text_alone(source: str) -> None:
    assert offenders(source, "m.py") == []


@pytest.mark.parametrize(
    "source",
    [
        "x = 1  # see issue 18\n",
        "# Issue 8, defect 6: lowering risk is a human action\nx = 1\n",
        "x = 1  # fixed in #12\n",
        "def f():\n    '''Delegation (seed 001): a human asks.'''\n",
        "# --- Seed 000's JSON format ---\n",
        "# The seed's picture: a nested describe\n",
        "# as the seeds' examples show\n",
        "'''A model written from the seeds.'''\n",
        "# from 001_agent_lifecycle.txt\n",
        "x = 1  # DESIGN.md section 5: moto is not atomic\n",
    ],
)
def test_the_scan_outside_src_finds_each_kind_of_pointer(source: str) -> None:
    assert offenders(source, "t.py", FORBIDDEN_OUTSIDE_SRC)


@pytest.mark.parametrize(
    "source",
    [
        "random.seed(1)  # the generator is re-seeded per run\n",
        "# Keys and picks from a seed the example draws, so a profile replays\n",
        "# Each example drew its own seed: no two examples minted the same keys.\n",
        "'''Where the services draw randomness: the OS's unless a test seeds one.'''\n",
        "# calls/s this bench seeds tasks for; seed enough for every round\n",
        "'''python -m benchkit.seed DB PROJECT N'''\n",
        "x = 1  # seeds = 3 seeds for the examples\n",
    ],
)
def test_the_scan_outside_src_leaves_random_seeds_alone(source: str) -> None:
    assert offenders(source, "t.py", FORBIDDEN_OUTSIDE_SRC) == []


def test_no_comment_in_src_names_an_issue_a_seed_or_a_design_file() -> None:
    found = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        for hit in offenders(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == [], "\n".join(found)


def test_no_comment_outside_src_names_an_issue_a_seed_or_a_design_file() -> None:
    found = [
        hit
        for path in modules_outside_src()
        for hit in offenders(path.read_text(), str(path.relative_to(ROOT)), FORBIDDEN_OUTSIDE_SRC)
    ]
    assert found == [], "\n".join(found)


def test_every_pointer_into_the_architecture_page_names_one_of_its_sections() -> None:
    headings = {
        line.lstrip("#").strip() for line in ARCHITECTURE.read_text().splitlines() if line.startswith("## ")
    }
    pointers = {
        (str(path.relative_to(ROOT)), section)
        for path in [*sorted(SRC.rglob("*.py")), *modules_outside_src()]
        for section in POINTER.findall(path.read_text())
    }
    assert pointers, "the code points into docs/architecture.md"
    missing = sorted((where, section) for where, section in pointers if section not in headings)
    assert missing == []
