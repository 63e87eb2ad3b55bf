"""Text that can be stored and sent: the one check every input of every interface goes through.

JSON can carry a lone UTF-16 surrogate as an escape ("\\ud800"). Python decodes it into a str
that has no UTF-8 form, so nothing can ever serialise it again: stored, it would break every
answer that includes it. `CheckedText` is the pydantic mixin all input models use (REST bodies,
MCP tool arguments, criteria); it refuses such text anywhere in the input, nested or as a key,
before any service runs. The store refuses it too (store.port.Unencodable), as a last net.

It refuses control characters too (NUL, C0 and C1 controls, DEL; tab and newline are text):
what an agent writes is shown on a human's terminal and board, where an escape sequence or a
carriage return could rewrite what the human reads (a title that erases its own line). Output
a check printed is the one input that holds them legitimately: the verifier sends it as is and
the service stores it made plain (`plain`), so its models opt out (`controls_allowed`).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import BaseModel, model_validator
from pydantic_core import PydanticCustomError, to_json

# Every C0 or C1 control character but newline and tab (DEL too).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The same characters in JSON as pydantic_core encodes it (see `control_character`).
_ENCODED_CONTROL = re.compile(rb"\\(?:u00[01]|[bfr])|\x7f|\xc2[\x80-\x9f]")

# Every code point in the surrogate block: a str holding one cannot be encoded as UTF-8
# (a well-formed pair in JSON decodes to one astral character, never to two surrogates).
_SURROGATE = re.compile("[\ud800-\udfff]")


class UnencodableText(ValueError):
    """Text with no UTF-8 form, found where a result was about to be serialised."""


def unencodable(value: Any, path: str = "") -> str | None:
    """The path of the first string (or key) in `value` that holds a lone surrogate, else None."""
    if not path:
        # Nearly always there is none: pydantic_core encodes the whole value in one native call,
        # and fails on any lone surrogate, in a key or in text,
        # however deep. Only a failure (or a value it cannot encode) walks it to say where.
        try:
            to_json(value)
        except ValueError:  # PydanticSerializationError is one
            pass
        else:
            return None
    return _first_match(value, _SURROGATE, path)


def encodable(value: Any) -> None:
    """Raise UnencodableText if `value` holds text that cannot be serialised."""
    where = unencodable(value)
    if where is not None:
        raise UnencodableText(f"{where}: text that is not valid Unicode (a lone UTF-16 surrogate)")


def control_character(value: Any, path: str = "") -> str | None:
    """The path of the first string (or key) in `value` holding a control character other than
    tab and newline, else None."""
    if not path:
        # Nearly always there is none: encoded as JSON in one native call, such a character is
        # either escaped (\u0000-\u001f but tab and newline; \b \f \r) or DEL or a C1 control
        # as they are. Only a match (or a value that cannot be encoded) walks it to say where;
        # an escaped backslash followed by one of those letters matches too, and the walk
        # finds nothing there.
        try:
            if _ENCODED_CONTROL.search(to_json(value)) is None:
                return None
        except ValueError:
            pass
    return _first_match(value, _CONTROLS, path)


def _first_match(value: Any, pattern: re.Pattern[str], path: str = "") -> str | None:
    """The path of the first string (or key) in `value` that `pattern` finds something in."""
    if isinstance(value, str):
        return path or "(text)" if pattern.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and pattern.search(key):
                return f"{path}.<key>" if path else "<key>"
            found = _first_match(item, pattern, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = _first_match(item, pattern, f"{path}[{i}]")
            if found is not None:
                return found
    return None


CONTROL_MESSAGE = "text may not hold control characters (only tab and newline)"


class CheckedText(BaseModel):
    """Mixin for input models: refuse text that is not valid Unicode, or that holds a control
    character other than tab and newline, anywhere in the input."""

    # True only for the models of a check's own output (see the module's note).
    controls_allowed: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        where = unencodable(data)
        if where is not None:
            raise PydanticCustomError(
                "unencodable_text",
                "{where}: text must be valid Unicode (it holds a lone UTF-16 surrogate)",
                {"where": where},
            )
        if not cls.controls_allowed:
            where = control_character(data)
            if where is not None:
                raise PydanticCustomError(
                    "control_character", "{where}: " + CONTROL_MESSAGE, {"where": where}
                )
        return data


# -- evidence text: what a check printed, made safe to store and show -------------------------

# ECMA-48 escape sequences, the way terminals read them. Hand-written (a few lines) rather than a
# dependency: the libraries that strip ANSI handle colours (CSI) but not OSC hyperlinks and
# titles, or the 8-bit forms, and each is one regex like this.
_ESCAPES = re.compile(
    r"""
      (?:\x1b\[|\x9b) [0-?]* [ -/]* [@-~]                   # CSI: colours, cursor moves, erases
    | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])             # OSC, DCS, SOS, PM, APC (titles, links)
      [^\x07\x1b\x9c\n]* (?:\x07|\x1b\\|\x9c)?             # up to BEL or ST (an unended one: its line)
    | \x1b [ -/]* [0-~]?                                   # any other escape (charsets, keypad modes)
    """,
    re.VERBOSE,
)
# A carriage return that is not a line end: a progress bar redrawing its line. Only what comes
# after the last one is what a terminal would show.
_REDRAWN = re.compile(r"[^\n\r]*\r(?=[^\r\n])")

# How much of a command's output travels and is kept: its end, this many characters. The verifier
# sends no more and the server stores no more, so both cut at the same place.
TAIL_CHARS = 4000


def plain(text: str) -> str:
    """`text` as a person should read it: ANSI escape sequences (colours, cursor moves, OSC
    titles and hyperlinks) and every control character except newline and tab removed; a line
    redrawn with carriage returns keeps its last drawing. Evidence is stored like this, whoever
    sent it, so no output can colour, move or hide anything where it is shown."""
    if text.isascii() and text.isprintable():
        return text  # the common case of a short detail: nothing to remove
    text = _ESCAPES.sub("", text).replace("\r\n", "\n")
    return _CONTROLS.sub("", _REDRAWN.sub("", text))


def tail_lines(text: str, limit: int) -> str:
    """The end of `text` in at most `limit` characters, starting at the start of a line: where
    every test runner prints its summary and its last error. "…\\n" marks the lines left out (a
    single line longer than `limit` keeps its end, after "…")."""
    text = text.rstrip()
    if len(text) <= limit:
        return text
    end = text[-max(1, limit - 2) :]
    newline = end.find("\n")
    if 0 <= newline < len(end) - 1:
        return "…\n" + end[newline + 1 :]
    return "…" + text[-max(1, limit - 1) :]


def clip_words(text: str, limit: int) -> str:
    """`text` on one line in at most `limit` characters, cut after a whole word, "…" marking the
    cut (a single word longer than the room left is cut where the room ends)."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    room = line[: max(0, limit - 1)]
    space = room.rfind(" ")
    if space > 0:
        room = room[:space]
    return room.rstrip(" ,;:") + "…"


def plural(n: int, one: str, many: str | None = None) -> str:
    """`n` and the noun for it: "1 task", "2 tasks", "0 tasks" (`many` for an irregular plural:
    "1 criterion", "3 criteria")."""
    return f"{n} {one if n == 1 else many or one + 's'}"
