"""The local attestation key: Ed25519, generated in the data dir on first start, private file 0600.

Only the public half ever leaves this module (GET /api/attestations/key)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from taskgate.signing.keys import PublicKey

KEY_FILE = "attestation-key.pem"


def ensure_key(path: Path) -> None:
    """Create the key file (0600, whatever the umask) unless it exists; an existing one is kept
    and made 0600. O_EXCL: two processes starting at once cannot both write one."""
    if path.exists():
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        return
    pem = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


class LocalSigner:
    def __init__(self, path: Path) -> None:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(key, ed25519.Ed25519PrivateKey):
            raise ValueError(f"{path} does not hold an Ed25519 private key")
        self._key = key
        self._public = PublicKey(key.public_key())

    def public_key(self) -> PublicKey:
        return self._public

    def sign(self, data: bytes) -> bytes:
        return self._key.sign(data)
