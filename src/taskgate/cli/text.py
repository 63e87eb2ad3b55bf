"""Text the server stored, printed on a person's terminal: an agent wrote much of it (titles,
criteria, notes, findings, evidence), and a control character in it could move the cursor,
erase the line the person reads or retitle their terminal. Every control character but tab and
newline is printed as its escape instead (`\\x1b`, `\\x9b`, `\\u202e`), whatever the server let in."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls; the bidirectional overrides and isolates,
# which reorder what the person reads; line and paragraph separators; lone surrogates.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character (but tab and newline) made visible as its escape."""
    return _CONTROL.sub(_escape, text)
