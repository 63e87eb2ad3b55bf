"""Text that can be stored and sent: the one check every input of every interface goes through.

JSON can carry a lone UTF-16 surrogate as an escape ("\\ud800"). Python decodes it into a str
that has no UTF-8 form, so nothing can ever serialise it again: stored, it would break every
answer that includes it. `CheckedText` is the pydantic mixin all input models use (REST bodies,
MCP tool arguments, criteria); it refuses such text anywhere in the input, nested or as a key,
before any service runs. The store refuses it too (store.port.Unencodable), as a last net.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, model_validator
from pydantic_core import PydanticCustomError, to_json

# Every code point in the surrogate block: a str holding one cannot be encoded as UTF-8
# (a well-formed pair in JSON decodes to one astral character, never to two surrogates).
_SURROGATE = re.compile("[\ud800-\udfff]")


class UnencodableText(ValueError):
    """Text with no UTF-8 form, found where a result was about to be serialised."""


def unencodable(value: Any, path: str = "") -> str | None:
    """The path of the first string (or key) in `value` that holds a lone surrogate, else None."""
    if not path:
        # Nearly always there is none: pydantic_core encodes the whole value in one native call
        # (~1 us for a tool's arguments), and fails on any lone surrogate, in a key or in text,
        # however deep. Only a failure (or a value it cannot encode) walks it to say where.
        try:
            to_json(value)
        except ValueError:  # PydanticSerializationError is one
            pass
        else:
            return None
    if isinstance(value, str):
        return path or "(text)" if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _SURROGATE.search(key):
                return f"{path}.<key>" if path else "<key>"
            found = unencodable(item, where)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = unencodable(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def encodable(value: Any) -> None:
    """Raise UnencodableText if `value` holds text that cannot be serialised."""
    where = unencodable(value)
    if where is not None:
        raise UnencodableText(f"{where}: text that is not valid Unicode (a lone UTF-16 surrogate)")


class CheckedText(BaseModel):
    """Mixin for input models: refuse text that is not valid Unicode anywhere in the input."""

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
        return data
