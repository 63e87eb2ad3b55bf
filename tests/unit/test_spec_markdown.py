"""The spec's Markdown as a person types it back from a terminal, where an em dash shows as a
hyphen: each dash before the ref reads the same, and prose dashes stay in the text."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import TaskgateError
from taskgate.domain.spec_markdown import parse_criteria, parse_spec_markdown


@pytest.mark.parametrize("dash", ["—", "\u2013", "--", "-"])
def test_each_dash_before_the_ref_reads_the_same(dash: str) -> None:
    [c] = parse_criteria([f"- (test) digits are kept {dash} `slugify > keeps digits`"])
    assert (c.text, c.verify_ref) == ("digits are kept", "slugify > keeps digits")


def test_only_the_dash_right_before_the_ref_separates_it() -> None:
    spec = parse_spec_markdown(
        "# T\n\n## Acceptance criteria\n"
        "- (test) a - b stays - `test_x.test_y`\n"
        "- (review) tidy - really\n"
        "- (command) compiles — `python3 -m py_compile a-b.py`\n"
    )
    assert [(c.text, c.verify_ref) for c in spec.criteria] == [
        ("a - b stays", "test_x.test_y"),
        ("tidy - really", None),
        ("compiles", "python3 -m py_compile a-b.py"),
    ]


def test_a_ref_without_a_dash_is_refused_naming_both_dashes() -> None:
    with pytest.raises(TaskgateError, match=r"line 1: .*after ' — ' or ' - '"):
        parse_criteria(["- (test) digits are kept `a.b`"])
