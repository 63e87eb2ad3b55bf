"""Comments in src/ stand on their own: none points at an issue number, a seed document or a
design file a clone does not have; what needs more than a comment is in docs/architecture.md,
and every pointer there names a section that exists."""

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
ARCHITECTURE = ROOT / "docs" / "architecture.md"

# An issue ("issue 18", "issues #7", "#12"), a seed ("seed 000", "the seeds'", "001_lifecycle.txt")
# or the design document the code was first written from (not in the repository).
FORBIDDEN = re.compile(
    r"\bissues?\s*#?\d+|(?<![\w/&])#\d{1,5}\b|\bseeds?\b|\b\d{3}_[\w*-]*\.txt\b|\bDESIGN\.md\b",
    re.IGNORECASE,
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


def offenders(source: str, name: str) -> list[str]:
    return [
        f"{name}:{line}: {found.group(0)!r} in {text.strip()[:100]}"
        for line, text in comments(source)
        for found in FORBIDDEN.finditer(text)
    ]


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


def test_no_comment_in_src_names_an_issue_a_seed_or_a_design_file() -> None:
    found = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        for hit in offenders(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == [], "\n".join(found)


def test_every_pointer_into_the_architecture_page_names_one_of_its_sections() -> None:
    headings = {
        line.lstrip("#").strip() for line in ARCHITECTURE.read_text().splitlines() if line.startswith("## ")
    }
    pointers = {
        (str(path.relative_to(ROOT)), section)
        for path in sorted(SRC.rglob("*.py"))
        for section in POINTER.findall(path.read_text())
    }
    assert pointers, "the code points into docs/architecture.md"
    missing = sorted((where, section) for where, section in pointers if section not in headings)
    assert missing == []
