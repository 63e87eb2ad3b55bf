"""The Signer port: the attestation key, as the services use it. No cryptography imported here:
a function that never signs does not pay for loading it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from taskgate.signing.keys import PublicKey


class SigningError(Exception):
    """The key could not sign (KMS unreachable, key disabled): nothing is committed."""


class Signer(Protocol):
    def public_key(self) -> PublicKey: ...

    def sign(self, data: bytes) -> bytes:
        """The signature of `data` (Ed25519; RSASSA-PSS with SHA-256; or ECDSA P-256 over SHA-256 in DER)."""
        ...
