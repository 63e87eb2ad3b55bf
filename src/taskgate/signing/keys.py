"""What is derived from a public attestation key: its id, PEM, JWK, and signature checks."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

# securesystemslib's scheme names
ED25519 = "ed25519"
ECDSA_P256 = "ecdsa-sha2-nistp256"  # ECDSA P-256 with SHA-256
RSA_PSS = "rsassa-pss-sha256"  # RSASSA-PSS, SHA-256 and MGF1-SHA-256

RSA_MIN_BITS = 2048

# The verifier reads the salt length from the signature (RFC 8017 EMSA-PSS-VERIFY recovers it):
# AWS KMS's RSASSA_PSS_SHA_256 salts with 32 bytes, moto with the most the key allows, and PSS's
# security does not rest on the verifier fixing the length.
_PSS = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.AUTO)


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class PublicKey:
    """A public attestation key. Its id is the sha256 (lowercase hex) of its DER
    SubjectPublicKeyInfo: anyone holding the key computes the same id."""

    key: ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey

    @classmethod
    def from_pem(cls, pem: bytes) -> PublicKey:
        try:
            key = serialization.load_pem_public_key(pem)
        except ValueError as exc:
            raise ValueError(f"not a PEM public key: {exc}") from exc
        return cls.of(key)

    @classmethod
    def from_der(cls, der: bytes) -> PublicKey:
        return cls.of(serialization.load_der_public_key(der))

    @classmethod
    def of(cls, key: Any) -> PublicKey:
        if isinstance(key, ed25519.Ed25519PublicKey):
            return cls(key)
        if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
            return cls(key)
        if isinstance(key, rsa.RSAPublicKey) and key.key_size >= RSA_MIN_BITS:
            return cls(key)
        raise ValueError(f"attestation keys are Ed25519, ECDSA P-256 or RSA of {RSA_MIN_BITS} bits or more")

    @property
    def scheme(self) -> str:
        if isinstance(self.key, ed25519.Ed25519PublicKey):
            return ED25519
        return RSA_PSS if isinstance(self.key, rsa.RSAPublicKey) else ECDSA_P256

    @property
    def der(self) -> bytes:
        return self.key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    @property
    def pem(self) -> str:
        return self.key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode("ascii")

    @property
    def key_id(self) -> str:
        return hashlib.sha256(self.der).hexdigest()

    def jwk(self) -> dict[str, str]:
        """RFC 7517/7518/8037 JWK. Hand-written: `cryptography` has no JWK export, and it is three fields."""
        if isinstance(self.key, ed25519.Ed25519PublicKey):
            raw = self.key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            return {"kty": "OKP", "crv": "Ed25519", "x": _b64url(raw), "kid": self.key_id, "alg": "EdDSA"}
        if isinstance(self.key, rsa.RSAPublicKey):
            nums = self.key.public_numbers()
            return {
                "kty": "RSA",
                "n": _b64url(nums.n.to_bytes((nums.n.bit_length() + 7) // 8, "big")),
                "e": _b64url(nums.e.to_bytes((nums.e.bit_length() + 7) // 8, "big")),
                "kid": self.key_id,
                "alg": "PS256",
            }
        numbers = self.key.public_numbers()
        return {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64url(numbers.x.to_bytes(32, "big")),
            "y": _b64url(numbers.y.to_bytes(32, "big")),
            "kid": self.key_id,
            "alg": "ES256",
        }

    def verifies(self, signature: bytes, data: bytes) -> bool:
        try:
            if isinstance(self.key, ed25519.Ed25519PublicKey):
                self.key.verify(signature, data)
            elif isinstance(self.key, rsa.RSAPublicKey):
                self.key.verify(signature, data, _PSS, hashes.SHA256())
            else:
                self.key.verify(signature, data, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return False
        return True

    def describe(self) -> dict[str, Any]:
        """What GET /api/attestations/key serves."""
        return {"keyid": self.key_id, "scheme": self.scheme, "pem": self.pem, "jwk": self.jwk()}
