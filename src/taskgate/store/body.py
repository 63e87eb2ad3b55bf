"""How the DynamoDB adapter stores an item's JSON body: as text (attribute D), or compressed.

DynamoDB charges a write unit per KB of the item written, and each index holding the item
(the queue index projects whole items) as much again, on every write. A task carries its
description, criteria, attempts and evidence: typically 1.5-3 KB of JSON, which zlib brings
to about 40% of that. So a body from COMPRESS_FROM bytes on is stored zlib-compressed, as the
binary attribute Z (DynamoDB counts a binary value by its raw bytes); smaller ones (history
events, markers, counters) stay readable text in D, where compressing would save no unit.

The stream hands the same images to the dispatcher, with binary values in base64: `decode`
reads both forms, and the plain text of items written before compression existed.

To read a compressed body by hand (AWS CLI output is base64):
    base64 -d <<< "$Z" | python3 -c 'import sys, zlib; print(zlib.decompress(sys.stdin.buffer.read()).decode())'
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Mapping
from typing import Any

from taskgate.store.schema import COMPRESSED, DATA

COMPRESS_FROM = 512  # bytes of JSON; below, compressing saves no write unit
LEVEL = 9  # the bodies are small: the best ratio costs microseconds


def encode(body: str) -> tuple[str, dict[str, Any]]:
    """The attribute name and value a body is stored as."""
    raw = body.encode("utf-8")
    if len(raw) < COMPRESS_FROM:
        return DATA, {"S": body}
    return COMPRESSED, {"B": zlib.compress(raw, LEVEL)}


def decode(image: Mapping[str, Any]) -> Any:
    """The JSON body of a stored item (from the API, bytes) or of a stream image (base64 text).
    Raises ValueError (or KeyError without a body) if it cannot be read."""
    if COMPRESSED in image:
        value = image[COMPRESSED]["B"]
        data = base64.b64decode(value, validate=True) if isinstance(value, str) else bytes(value)
        try:
            return json.loads(zlib.decompress(data))
        except zlib.error as exc:
            raise ValueError(f"compressed body unreadable: {exc}") from exc
    return json.loads(image[DATA]["S"])
