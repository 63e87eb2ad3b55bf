"""DSSE v1.0.2 envelopes (github.com/secure-systems-lab/dsse): the signature covers the
Pre-Authentication Encoding of (payloadType, payload), never the JSON around it.

Hand-written: the PAE is one line of the protocol, and the libraries that hold it
(securesystemslib) bring a key-management framework the server does not need; the tests check
our envelopes with securesystemslib's own DSSE verification.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, LEN in ASCII decimal
    bytes (type as UTF-8)."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


@dataclass(frozen=True)
class Signature:
    keyid: str
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[Signature, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "payload": base64.b64encode(self.payload).decode("ascii"),
            "payloadType": self.payload_type,
            "signatures": [
                {"keyid": s.keyid, "sig": base64.b64encode(s.sig).decode("ascii")} for s in self.signatures
            ],
        }


class BadEnvelope(ValueError):
    pass


def _b64(value: Any, what: str) -> bytes:
    """Standard or URL-safe base64, padded or not: DSSE says a reader accepts either."""
    if not isinstance(value, str):
        raise BadEnvelope(f"{what} is not a base64 string")
    text = value.replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadEnvelope(f"{what} is not valid base64: {exc}") from exc


def from_json(data: Any) -> Envelope:
    if not isinstance(data, dict):
        raise BadEnvelope("an envelope is a JSON object")
    payload_type = data.get("payloadType")
    if not isinstance(payload_type, str):
        raise BadEnvelope("payloadType is missing")
    sigs = data.get("signatures")
    if not isinstance(sigs, list) or not sigs:
        raise BadEnvelope("signatures is missing or empty")
    out = []
    for n, s in enumerate(sigs):
        if not isinstance(s, dict):
            raise BadEnvelope(f"signature {n} is not an object")
        keyid = s.get("keyid", "")
        if not isinstance(keyid, str):
            raise BadEnvelope(f"signature {n}: keyid is not a string")
        out.append(Signature(keyid, _b64(s.get("sig"), f"signature {n}")))
    return Envelope(payload_type, _b64(data.get("payload"), "payload"), tuple(out))
