"""The cloud attestation key: an AWS KMS asymmetric key, RSA_2048 signing RSASSA_PSS_SHA_256 (the
template's default: KMS prices RSA 2048 requests as symmetric ones, a fifth of other asymmetric
keys) or ECC_NIST_P256 signing ECDSA_SHA_256 (template parameter AttestationKeySpec).

One kms:Sign per statement; the public key is read once per process (kms:GetPublicKey), and the
algorithm follows from it. KMS signs a RAW message of up to 4096 bytes itself (hashing it with
SHA-256); a longer PAE is hashed here and sent as a DIGEST, which KMS signs as the same signature.
Short statements stay RAW because that path is checked end to end on moto, which (5.2.5) ignores
MessageType and hashes a DIGEST again (tests/attest/test_kms_signing.py)."""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any

from taskgate.signing.port import SigningError

if TYPE_CHECKING:
    from taskgate.signing.keys import PublicKey

RAW_MAX = 4096
RSA_ALGORITHM = "RSASSA_PSS_SHA_256"
EC_ALGORITHM = "ECDSA_SHA_256"


def algorithm_for(key: PublicKey) -> str:
    """The KMS signing algorithm for the attestation key (keys.PublicKey admits RSA and P-256)."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    return RSA_ALGORITHM if isinstance(key.key, rsa.RSAPublicKey) else EC_ALGORITHM


class KmsSigner:
    def __init__(self, key_id: str, *, region_name: str | None = None, client: Any = None) -> None:
        if client is None:
            import boto3  # the cloud only
            from botocore.config import Config

            from taskgate.aws import CLIENT_CONFIG

            client = boto3.client("kms", region_name=region_name, config=Config(**CLIENT_CONFIG))
        self._client = client
        self._key_id = key_id
        self._public: PublicKey | None = None
        self._lock = threading.Lock()

    def public_key(self) -> PublicKey:
        with self._lock:
            if self._public is None:
                from botocore.exceptions import BotoCoreError, ClientError

                try:
                    out = self._client.get_public_key(KeyId=self._key_id)
                except (BotoCoreError, ClientError) as exc:
                    raise SigningError(f"the attestation key's public half could not be read: {exc}") from exc
                from taskgate.signing.keys import PublicKey

                self._public = PublicKey.from_der(out["PublicKey"])
            return self._public

    def sign(self, data: bytes) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        algorithm = algorithm_for(self.public_key())
        if len(data) <= RAW_MAX:
            kwargs: dict[str, Any] = {"Message": data, "MessageType": "RAW"}
        else:
            kwargs = {"Message": hashlib.sha256(data).digest(), "MessageType": "DIGEST"}
        try:
            out = self._client.sign(KeyId=self._key_id, SigningAlgorithm=algorithm, **kwargs)
        except (BotoCoreError, ClientError) as exc:
            raise SigningError(f"the attestation key could not sign: {exc}") from exc
        return bytes(out["Signature"])
