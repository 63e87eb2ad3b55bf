"""Worlds that sign: SQLite with a local Ed25519 key, DynamoDB (moto) with a KMS RSA_2048 key;
and raw access to stored items, to tamper with them as someone holding the database would."""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
from securesystemslib.dsse import Envelope as SslibEnvelope
from securesystemslib.signer import SSlibKey

from taskgate.service.attestations import Attestor
from taskgate.signing.keys import PublicKey
from taskgate.signing.kms import KmsSigner
from taskgate.signing.local import LocalSigner, ensure_key
from taskgate.store import body
from taskgate.store.port import Store
from taskgate.store.sqlite import SQLiteStore
from tests.support.dynamo import REGION, dynamodb_store, sqlite_store
from tests.support.world import World

KEY_SPECS = ("RSA_2048", "ECC_NIST_P256")  # template.yaml's AttestationKeySpec, default first


def kms_key(spec: str = KEY_SPECS[0]) -> str:
    """A KMS signing key as template.yaml makes it (call inside moto's mock)."""
    kms = boto3.client("kms", region_name=REGION)
    meta = kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec=spec)["KeyMetadata"]
    return str(meta["KeyId"])


@contextmanager
def signing_world(kind: str, tmp_path: Path) -> Iterator[World]:
    if kind == "sqlite":
        store = sqlite_store(tmp_path)
        ensure_key(tmp_path / "attestation-key.pem")
        world = World(store)
        world.ctx.attestor = Attestor(
            LocalSigner(tmp_path / "attestation-key.pem"), public_url="http://board"
        )
        try:
            yield world
        finally:
            store.close()
    else:
        # "dynamodb": the template's default key spec; "dynamodb:<KeySpec>" another one
        spec = kind.partition(":")[2] or KEY_SPECS[0]
        with dynamodb_store() as dstore:
            world = World(dstore)
            world.ctx.attestor = Attestor(KmsSigner(kms_key(spec), region_name=REGION))
            yield world


def independent_verify(envelope: dict[str, Any], key: PublicKey) -> bytes:
    """securesystemslib's DSSE verification of one of our envelopes; the payload it vouches for."""
    ssl_key = SSlibKey.from_crypto(key.key, keyid=key.key_id)
    env = SslibEnvelope.from_dict(copy.deepcopy(envelope))  # from_dict consumes what it reads
    env.verify([ssl_key], 1)  # raises VerificationError unless the key's signature verifies
    return bytes(env.payload)


def statement_of(envelope: dict[str, Any]) -> dict[str, Any]:
    from taskgate.domain import dsse

    out: dict[str, Any] = json.loads(dsse.from_json(envelope).payload)
    return out


# -- raw items ---------------------------------------------------------------------------------


def raw_get(store: Store, pk: str, sk: str) -> dict[str, Any] | None:
    if isinstance(store, SQLiteStore):
        db = sqlite3.connect(store.path)
        try:
            row = db.execute("SELECT data FROM items WHERE pk=? AND sk=?", (pk, sk)).fetchone()
        finally:
            db.close()
        return None if row is None else dict(json.loads(row[0]))
    client: Any = store._client  # type: ignore[attr-defined]
    got = client.get_item(TableName=store.table_name, Key={"PK": {"S": pk}, "SK": {"S": sk}})  # type: ignore[attr-defined]
    return None if "Item" not in got else dict(body.decode(got["Item"]))


def raw_set(store: Store, pk: str, sk: str, data: dict[str, Any]) -> None:
    """Rewrite an item's body in place, keys, version and indexes untouched."""
    text = json.dumps(data)
    if isinstance(store, SQLiteStore):
        db = sqlite3.connect(store.path)
        try:
            with db:
                n = db.execute("UPDATE items SET data=? WHERE pk=? AND sk=?", (text, pk, sk)).rowcount
        finally:
            db.close()
        assert n == 1
        return
    client: Any = store._client  # type: ignore[attr-defined]
    key = {"PK": {"S": pk}, "SK": {"S": sk}}
    item = client.get_item(TableName=store.table_name, Key=key)["Item"]  # type: ignore[attr-defined]
    for attr in ("D", "Z"):
        item.pop(attr, None)
    name, value = body.encode(text)
    item[name] = value
    client.put_item(TableName=store.table_name, Item=item)  # type: ignore[attr-defined]


def raw_delete(store: Store, pk: str, sk: str) -> None:
    if isinstance(store, SQLiteStore):
        db = sqlite3.connect(store.path)
        try:
            with db:
                n = db.execute("DELETE FROM items WHERE pk=? AND sk=?", (pk, sk)).rowcount
        finally:
            db.close()
        assert n == 1
        return
    client: Any = store._client  # type: ignore[attr-defined]
    client.delete_item(TableName=store.table_name, Key={"PK": {"S": pk}, "SK": {"S": sk}})  # type: ignore[attr-defined]
