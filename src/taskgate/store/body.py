"""How the DynamoDB adapter stores an item's JSON body: as text (attribute D), or compressed.

DynamoDB charges a write unit per KB of the item written, and each index holding the item
(the queue index projects whole items) as much again, on every write. A task carries its
description, criteria, attempts and evidence: typically 1.5-3 KB of JSON, which zlib brings
to about 40% of that, and to about a third from a preset dictionary of the field names and
stock values every body repeats (store/zdict.py). So a body from COMPRESS_FROM bytes on is stored
zlib-compressed, as the binary attribute Z (DynamoDB counts a binary value by its raw bytes);
smaller ones (history events, markers, counters) stay readable text in D, where compressing would
save no unit. A Z written before the dictionary existed names none and reads as it always did.

The stream hands the same images to the dispatcher, with binary values in base64: `decode`
reads both forms, and the plain text of items written before compression existed.

To read a compressed body by hand (AWS CLI output is base64), with taskgate installed:
    base64 -d <<< "$Z" | python3 -m taskgate.store.body
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Mapping
from typing import Any

from taskgate.store.schema import COMPRESSED, DATA
from taskgate.store.zdict import CURRENT, DICTIONARIES

COMPRESS_FROM = 512  # bytes of JSON; below, compressing saves no write unit
LEVEL = 9  # the bodies are small: the best ratio costs little


def encode(body: str) -> tuple[str, dict[str, Any]]:
    """The attribute name and value a body is stored as."""
    raw = body.encode("utf-8")
    if len(raw) < COMPRESS_FROM:
        return DATA, {"S": body}
    packer = zlib.compressobj(LEVEL, zlib.DEFLATED, zlib.MAX_WBITS, 9, zlib.Z_DEFAULT_STRATEGY, CURRENT)
    return COMPRESSED, {"B": packer.compress(raw) + packer.flush()}


def inflate(data: bytes) -> bytes:
    """A Z value's JSON bytes. The zlib header says whether a preset dictionary was used, and
    which (its adler32: RFC 1950's FDICT and DICTID)."""
    if len(data) >= 6 and data[1] & 0x20:
        dict_id = int.from_bytes(data[2:6], "big")
        zdict = DICTIONARIES.get(dict_id)
        if zdict is None:
            raise ValueError(f"compressed body names an unknown dictionary {dict_id:#010x}")
        unpacker = zlib.decompressobj(zlib.MAX_WBITS, zdict)
        out = unpacker.decompress(data) + unpacker.flush()
        if not unpacker.eof:
            raise ValueError("compressed body unreadable: it ends early")
        return out
    return zlib.decompress(data)


def decode(image: Mapping[str, Any]) -> Any:
    """The JSON body of a stored item (from the API, bytes) or of a stream image (base64 text).
    Raises ValueError (or KeyError without a body) if it cannot be read."""
    if COMPRESSED in image:
        value = image[COMPRESSED]["B"]
        data = base64.b64decode(value, validate=True) if isinstance(value, str) else bytes(value)
        try:
            return json.loads(inflate(data))
        except zlib.error as exc:
            raise ValueError(f"compressed body unreadable: {exc}") from exc
    return json.loads(image[DATA]["S"])


if __name__ == "__main__":  # python -m taskgate.store.body < raw-Z-bytes: the body's JSON
    import sys

    try:
        sys.stdout.write(inflate(sys.stdin.buffer.read()).decode("utf-8") + "\n")
    except (ValueError, zlib.error) as exc:
        sys.exit(f"not a compressed taskgate body: {exc}")
