"""Opaque page cursors: base64url JSON of the last position read. Clients never parse them."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from taskgate.domain.errors import invalid


def encode(position: dict[str, Any]) -> str:
    raw = json.dumps(position, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


MAX_CURSOR_CHARS = 2048  # ours are a few hundred; a longer one is not ours


def decode(cursor: str) -> dict[str, Any]:
    if len(cursor) > MAX_CURSOR_CHARS:
        raise invalid("cursor is not one this server returned")
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError) as exc:
        raise invalid("cursor is not one this server returned") from exc
    if not isinstance(value, dict):
        raise invalid("cursor is not one this server returned")
    return value
