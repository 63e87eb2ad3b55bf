"""Minting and hashing secrets (agent and verifier keys, claim tokens).

Secrets are 192 random bits, so a plain SHA-256 is the right hash: there is nothing to
brute-force, and the lookup by hash must be deterministic (a salted KDF would not be).
"""

from __future__ import annotations

import hashlib
import hmac
import re

from taskgate.domain.entropy import SYSTEM_ENTROPY, Entropy

AGENT_PREFIX = "tga_"
VERIFIER_PREFIX = "tgv_"
CLAIM_PREFIX = "tgc_"
ADMIN_PREFIX = "tgh_"


def mint(prefix: str, entropy: Entropy = SYSTEM_ENTROPY) -> str:
    return prefix + entropy.token_urlsafe(24)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(digest(secret), stored_hash)


_KEYED = re.compile(r"^(tg[av]_)([0-9a-f]{12})_([A-Za-z0-9_-]{32})$")


def mint_key(prefix: str, entropy: Entropy = SYSTEM_ENTROPY) -> tuple[str, str]:
    """A new key id and its secret. The secret names its id, so checking a key is one
    consistent read by id (then a constant-time hash compare), not an index query."""
    hex_id = entropy.token_hex(6)
    return f"key_{hex_id}", f"{prefix}{hex_id}_{entropy.token_urlsafe(24)}"


def key_id_of(secret: str) -> str | None:
    m = _KEYED.match(secret)
    return f"key_{m.group(2)}" if m else None
