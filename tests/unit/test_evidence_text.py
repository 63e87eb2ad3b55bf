"""Evidence text as it is stored and shown: no terminal escapes or control characters, the end of
a check's output cut on a line boundary, a progress line cut after a whole word."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskgate.domain.text import clip_words, plain, tail_lines

ESC = "\x1b"


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        # vitest / chalk colours (CSI SGR), bold, reset
        (f"{ESC}[31m✗{ESC}[39m {ESC}[1mtruncate{ESC}[22m", "✗ truncate"),
        # 256-colour and truecolour SGR
        (f"{ESC}[38;5;196mred{ESC}[0m {ESC}[38;2;1;2;3mrgb{ESC}[m", "red rgb"),
        # cursor moves and erases that redraw a line (jest's, vitest's watch output)
        (f"{ESC}[2K{ESC}[1Gdone{ESC}[?25h", "done"),
        # an OSC 8 hyperlink ended by ST, a window title ended by BEL
        (f"{ESC}]8;;file:///x.py{ESC}\\x.py{ESC}]8;;{ESC}\\:3", "x.py:3"),
        (f"{ESC}]0;pytest{chr(7)}collected 3 items", "collected 3 items"),
        # an OSC that never ends takes only its own line
        (f"before{ESC}]0;title\nafter", "before\nafter"),
        # 8-bit CSI, charset selection, a lone ESC at the end
        ("\x9b1mbold\x9b0m", "bold"),
        (f"{ESC}(Bplain{ESC}", "plain"),
        # a progress bar redrawn with carriage returns keeps its last drawing; CRLF is a newline
        ("10%\r50%\r100%\r\nok\r\n", "100%\nok\n"),
        # other control characters go; newline and tab stay
        ("a\x00b\x07c\x08d\x7fe\tf\ng", "abcde\tf\ng"),
        # nothing to remove: the same text
        ("1 failed, 2 passed in 0.03s", "1 failed, 2 passed in 0.03s"),
        ("unicode stays: é ✓ 🎉", "unicode stays: é ✓ 🎉"),
    ],
)
def test_plain_removes_escapes_and_controls(raw: str, want: str) -> None:
    assert plain(raw) == want


@given(st.text())
def test_plain_leaves_no_escape_or_control_character(text: str) -> None:
    out = plain(text)
    assert not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in out)
    assert plain(out) == out  # nothing left to remove


def test_tail_lines_keeps_the_end_from_a_line_start() -> None:
    text = "".join(f"line {i}\n" for i in range(100)) + "2 failed, 1 passed"
    end = tail_lines(text, 60)
    assert end.endswith("line 99\n2 failed, 1 passed")
    assert end.startswith("…\nline ") and len(end) <= 60
    assert tail_lines("short\n", 60) == "short"
    # A single line longer than the limit keeps its end.
    long = "x" * 50 + "END"
    assert tail_lines(long, 10) == "…" + long[-9:] and len(tail_lines(long, 10)) == 10


@given(st.text(), st.integers(min_value=3, max_value=500))
def test_tail_lines_never_exceeds_its_limit_and_ends_where_the_text_ends(text: str, limit: int) -> None:
    end = tail_lines(text, limit)
    assert len(end) <= limit
    assert text.rstrip().endswith(end.removeprefix("…\n").removeprefix("…"))


def test_clip_words_cuts_after_a_whole_word() -> None:
    said = "AssertionError: assert [['A', 'B', 'C'], ['D', 'E', 'F']] != [['A', 'B', 'C']]"
    cut = clip_words(said, 40)
    assert cut == "AssertionError: assert [['A', 'B'…"
    assert len(cut) <= 40 and said.startswith(cut[:-1])
    assert clip_words("one\n  two\tthree", 100) == "one two three"
    assert clip_words("x" * 50, 10) == "x" * 9 + "…"  # one word longer than the room


@given(st.text(), st.integers(min_value=2, max_value=300))
def test_clip_words_stays_on_one_line_within_its_limit(text: str, limit: int) -> None:
    cut = clip_words(text, limit)
    assert len(cut) <= limit and "\n" not in cut
