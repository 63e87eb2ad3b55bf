"""The formats, against their specs and an independent implementation: DSSE's PAE (the spec's
own example, and securesystemslib's), the key id and JWK of both key types, base64 forms a
reader must accept, and RFC 8785 canonical hashing of history events."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from jwt.algorithms import RSAAlgorithm
from securesystemslib.dsse import Envelope as SslibEnvelope

from taskgate.domain import chain, dsse
from taskgate.signing.keys import PublicKey
from taskgate.signing.local import LocalSigner, ensure_key


def test_pae_is_the_specs_encoding() -> None:
    # DSSE v1.0.2 protocol.md's example
    assert (
        dsse.pae("http://example.com/HelloWorld", b"hello world")
        == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    payload = '{"a": "é"}'.encode()
    theirs = SslibEnvelope(payload=payload, payload_type=dsse.INTOTO_PAYLOAD_TYPE, signatures={}).pae()
    assert dsse.pae(dsse.INTOTO_PAYLOAD_TYPE, payload) == theirs


def test_envelopes_read_standard_and_url_safe_base64_padded_or_not() -> None:
    payload = bytes(range(250, 256)) * 3  # bytes whose base64 has + and / (- and _ url-safe)
    for enc in (base64.b64encode, base64.urlsafe_b64encode):
        text = enc(payload).decode()
        for form in (text, text.rstrip("=")):
            env = dsse.from_json(
                {"payload": form, "payloadType": "t", "signatures": [{"keyid": "k", "sig": form}]}
            )
            assert env.payload == payload and env.signatures[0].sig == payload
    with pytest.raises(dsse.BadEnvelope, match="signatures"):
        dsse.from_json({"payload": "", "payloadType": "t", "signatures": []})


def test_key_ids_and_jwks_of_every_key_type() -> None:
    ed = PublicKey(ed25519.Ed25519PrivateKey.generate().public_key())
    p256 = PublicKey.of(ec.generate_private_key(ec.SECP256R1()).public_key())
    rsa_private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa2048 = PublicKey.of(rsa_private.public_key())
    for key in (ed, p256, rsa2048):
        assert key.key_id == hashlib.sha256(key.der).hexdigest()
        assert PublicKey.from_pem(key.pem.encode()).key_id == key.key_id
        assert key.jwk()["kid"] == key.key_id
    raw = ed.key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert base64.urlsafe_b64decode(ed.jwk()["x"] + "=") == raw and ed.jwk()["crv"] == "Ed25519"
    numbers = p256.key.public_numbers()  # type: ignore[union-attr]
    assert int.from_bytes(base64.urlsafe_b64decode(p256.jwk()["y"] + "="), "big") == numbers.y
    assert p256.scheme == "ecdsa-sha2-nistp256" and ed.scheme == "ed25519"
    assert rsa2048.scheme == "rsassa-pss-sha256"
    # The RSA JWK read by another library (PyJWT) is the same key
    assert rsa2048.jwk()["alg"] == "PS256" and rsa2048.jwk()["kty"] == "RSA"
    theirs = RSAAlgorithm.from_jwk(json.dumps(rsa2048.jwk()))
    assert isinstance(theirs, rsa.RSAPublicKey)
    assert theirs.public_numbers() == rsa_private.public_key().public_numbers()
    with pytest.raises(ValueError, match="Ed25519, ECDSA P-256 or RSA of 2048 bits or more"):
        PublicKey.of(ec.generate_private_key(ec.SECP384R1()).public_key())
    with pytest.raises(ValueError, match="RSA of 2048 bits or more"):
        PublicKey.of(rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key())


def test_rsa_pss_signatures_verify_with_kms_and_moto_salts_and_nothing_else() -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key = PublicKey.of(private.public_key())
    data = b"DSSEv1 28 application/vnd.in-toto+json 2 {}"

    def pss(salt: int) -> padding.PSS:
        return padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=salt)

    kms = private.sign(data, pss(32), hashes.SHA256())  # AWS KMS: a salt as long as the digest
    moto = private.sign(data, pss(padding.PSS.MAX_LENGTH), hashes.SHA256())
    assert key.verifies(kms, data) and key.verifies(moto, data)
    assert not key.verifies(kms, data + b" ")
    assert not key.verifies(private.sign(data, padding.PKCS1v15(), hashes.SHA256()), data)
    other = pss(32)
    assert not key.verifies(private.sign(data, other, hashes.SHA384()), data)


def test_the_local_key_is_made_once_0600_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "attestation-key.pem"
    old = os.umask(0)
    try:
        ensure_key(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    first = LocalSigner(path).public_key().key_id
    os.chmod(path, 0o644)
    ensure_key(path)  # a second start keeps the key and tightens the file again
    assert LocalSigner(path).public_key().key_id == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_event_digests_are_rfc8785_and_ignore_key_order() -> None:
    event = {
        "seq": 2,
        "actor": "human:alice",
        "detail": {"b": 1, "a": 1.5},
        "at": "2026-01-01T00:00:00.000000Z",
    }
    text = b'{"actor":"human:alice","at":"2026-01-01T00:00:00.000000Z","detail":{"a":1.5,"b":1},"seq":2}'
    assert chain.canonical(event) == text
    assert chain.digest(dict(reversed(list(event.items())))) == hashlib.sha256(text).hexdigest()
