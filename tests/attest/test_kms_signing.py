"""The KMS attestation key signs statements of any size. KMS Sign takes a RAW message of at most
4096 bytes (hashing it itself); a longer DSSE PAE is hashed here with SHA-256 and sent as a
DIGEST, which real KMS signs with the same algorithm (RSASSA_PSS_SHA_256 for the RSA_2048 key,
ECDSA_SHA_256 for ECC_NIST_P256: both of template.yaml's AttestationKeySpec), verifiable over
the PAE itself.

What moto (5.2.5, installed) does: Sign and Verify read MessageType and ignore it, always hashing
Message as if it were RAW (moto/kms/models.py: "The MessageType-parameter DIGEST is not yet
implemented"; getmoto/moto#10202, which implements it, is open); nor does it enforce the 4096-byte
limit on RAW. So on moto: the RAW path is checked end to end (KMS's signature, verified with
`cryptography` against GetPublicKey over the PAE); for the DIGEST path we check what is sent to
KMS (observed on the real botocore client through its event hooks, answered by moto). The end to
end check of a DIGEST signature over the PAE cannot be made on moto 5.2.5, which ignores
MessageType and hashes the digest again (getmoto/moto#10202): it is not written as a test that
would pass on that failure. No mock stands in for KMS."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from taskgate.domain import dsse
from taskgate.domain.models import CriterionInput, CriterionKind, Status
from taskgate.domain.run_report import Evidence
from taskgate.service import claims, tasks
from taskgate.service.attestations import Attestor
from taskgate.signing.kms import RAW_MAX, KmsSigner
from tests.attest.support import KEY_SPECS, kms_key, signing_world
from tests.service.scenarios import new_scene, reach
from tests.support.dynamo import REGION
from tests.support.evidence import run_verifier
from tests.support.world import SHA, World


class Kms:
    """A KMS key on moto, the signer over it, and every Sign request the real client sent."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.algorithm = "RSASSA_PSS_SHA_256" if spec == "RSA_2048" else "ECDSA_SHA_256"
        self.client = boto3.client("kms", region_name=REGION)
        self.key_id = kms_key(spec)
        self.signer = KmsSigner(self.key_id, client=self.client)
        self.sent: list[dict[str, Any]] = []
        self.client.meta.events.register("provide-client-params.kms.Sign", self._saw)

    def _saw(self, params: dict[str, Any], **_: Any) -> None:
        self.sent.append(dict(params))

    def verify(self, sig: bytes, data: bytes) -> None:
        """Raises InvalidSignature unless `sig` verifies over `data` with the key as GetPublicKey
        gives it, read here with `cryptography`, not through our code."""
        from cryptography.hazmat.primitives.serialization import load_der_public_key

        key = load_der_public_key(self.client.get_public_key(KeyId=self.key_id)["PublicKey"])
        if self.spec == "RSA_2048":
            assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 2048
            # KMS salts PSS with the digest's length, moto with the most the key allows
            pss = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.AUTO)
            key.verify(sig, data, pss, hashes.SHA256())
        else:
            assert isinstance(key, ec.EllipticCurvePublicKey)
            key.verify(sig, data, ec.ECDSA(hashes.SHA256()))


@pytest.fixture(params=KEY_SPECS)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[World, Kms]]:
    with signing_world("dynamodb", tmp_path) as w:
        kms = Kms(request.param)
        w.ctx.attestor = Attestor(kms.signer)
        yield w, kms


def _decided(world: World, criteria: int) -> dict[str, Any]:
    """A run passed on a task with this many criteria: its signed envelope."""
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.READY)
    if criteria > 1:
        many = [
            CriterionInput(
                text=f"the slug of title {i} keeps its digits",
                kind=CriterionKind.TEST,
                verify_ref=f"tests/test_slugify.py::test_keeps_digits_{i}",
            )
            for i in range(criteria)
        ]
        tasks.update(world.ctx, world.human, scene.task_id, criteria=many)
    token = claims.claim(world.ctx, scene.agent, "demo", task_id=scene.task_id).token
    claims.submit(world.ctx, scene.agent, scene.task_id, token, commit_sha=SHA, evidence="done")
    run, _ = run_verifier(world.ctx, scene.verifier, scene.task_id, Evidence.PASS)
    [stored] = tasks.runs(world.ctx, world.human, scene.task_id)
    assert stored.id == run.id and stored.attestation is not None
    return stored.attestation


def _pae_and_sig(envelope: dict[str, Any]) -> tuple[bytes, bytes]:
    env = dsse.from_json(envelope)
    [sig] = env.signatures
    return dsse.pae(env.payload_type, env.payload), sig.sig


def test_a_statement_of_up_to_4096_bytes_is_signed_raw_and_verifies_over_the_pae(
    world: tuple[World, Kms],
) -> None:
    w, kms = world
    envelope = _decided(w, criteria=1)
    pae, sig = _pae_and_sig(envelope)
    assert len(pae) <= RAW_MAX
    [sent] = kms.sent
    assert sent["MessageType"] == "RAW" and sent["Message"] == pae
    assert sent["SigningAlgorithm"] == kms.algorithm
    kms.verify(sig, pae)
    assert w.ctx.attestor is not None and w.ctx.attestor.public_key().verifies(sig, pae)
    assert not w.ctx.attestor.public_key().verifies(sig, pae[:-1] + b"!")


def test_a_statement_over_4096_bytes_is_sent_to_kms_as_its_sha256_digest(world: tuple[World, Kms]) -> None:
    w, kms = world
    envelope = _decided(w, criteria=60)
    pae, sig = _pae_and_sig(envelope)
    statement = json.loads(dsse.from_json(envelope).payload)
    assert len(statement["predicate"]["passedTests"]) == 60 and len(pae) > RAW_MAX
    [sent] = kms.sent
    assert sent["MessageType"] == "DIGEST" and sent["SigningAlgorithm"] == kms.algorithm
    assert sent["Message"] == hashlib.sha256(pae).digest()
    assert sig  # KMS (moto) answered with a signature, stored in the envelope


def test_the_boundary_is_4096_bytes(world: tuple[World, Kms]) -> None:
    _, kms = world
    kms.signer.sign(b"x" * RAW_MAX)
    kms.signer.sign(b"x" * (RAW_MAX + 1))
    assert [s["MessageType"] for s in kms.sent] == ["RAW", "DIGEST"]
    assert kms.sent[1]["Message"] == hashlib.sha256(b"x" * (RAW_MAX + 1)).digest()
