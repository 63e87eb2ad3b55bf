"""The cloud attestation key: an AWS KMS asymmetric key (ECC_NIST_P256, ECDSA_SHA_256).

One kms:Sign per statement; the public key is read once per process (kms:GetPublicKey).
KMS signs a RAW message of up to 4096 bytes itself (hashing it with SHA-256); a longer PAE is
hashed here and sent as a DIGEST, which KMS signs as the same ECDSA-SHA-256 signature.
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
ALGORITHM = "ECDSA_SHA_256"


class KmsSigner:
    def __init__(self, key_id: str, *, region_name: str | None = None, client: Any = None) -> None:
        if client is None:
            import boto3  # the cloud only

            client = boto3.client("kms", region_name=region_name)
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

        if len(data) <= RAW_MAX:
            kwargs: dict[str, Any] = {"Message": data, "MessageType": "RAW"}
        else:
            kwargs = {"Message": hashlib.sha256(data).digest(), "MessageType": "DIGEST"}
        try:
            out = self._client.sign(KeyId=self._key_id, SigningAlgorithm=ALGORITHM, **kwargs)
        except (BotoCoreError, ClientError) as exc:
            raise SigningError(f"the attestation key could not sign: {exc}") from exc
        return bytes(out["Signature"])
