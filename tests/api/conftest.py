"""Fixtures for the REST API tests: the handler on a SQLite file (or moto DynamoDB), chosen
through the same environment variables the Lambda and `taskgate serve` use."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from taskgate import runtime
from taskgate.signing.local import ensure_key
from taskgate.store.schema import dynamodb_table_definition
from tests.api.support import ADMIN_HASH, Env

REGION = "us-east-1"


def _reset_runtime() -> None:
    """Drop the process's Context so the next request builds it from the environment."""
    current = runtime._current
    if current is not None:
        current[1].store.close()
    runtime._current = None


def _sqlite_env(mp: pytest.MonkeyPatch, db: Path) -> None:
    mp.setenv("TASKGATE_STORE", "sqlite")
    mp.setenv("TASKGATE_DB", str(db))
    mp.setenv("TASKGATE_ADMIN_TOKEN_HASH", ADMIN_HASH)
    mp.setenv("TASKGATE_ADMIN_NAME", "admin")
    key = db.parent / "attestation-key.pem"  # as `taskgate serve` makes it in its data dir
    ensure_key(key)
    mp.setenv("TASKGATE_ATTESTATION_KEY", str(key))
    _reset_runtime()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    """The API over a fresh SQLite file, with a credential of every kind."""
    with pytest.MonkeyPatch.context() as mp:
        _sqlite_env(mp, tmp_path / "taskgate.db")
        yield Env.start()
        _reset_runtime()


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """One API world for a whole module (the authorization matrix): each cell prepares its own
    fresh objects, so cells do not depend on each other."""
    with pytest.MonkeyPatch.context() as mp:
        _sqlite_env(mp, tmp_path_factory.mktemp("api") / "taskgate.db")
        yield Env.start()
        _reset_runtime()


@pytest.fixture
def dynamo_env() -> Iterator[Env]:
    """The API over DynamoDB (moto), configured as on Lambda: TASKGATE_STORE=dynamodb."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
        }.items():
            mp.setenv(name, value)
        with mock_aws():
            table = f"taskgate-api-{uuid.uuid4().hex[:10]}"
            boto3.client("dynamodb", region_name=REGION).create_table(**dynamodb_table_definition(table))
            mp.setenv("TASKGATE_STORE", "dynamodb")
            mp.setenv("TASKGATE_TABLE", table)
            mp.delenv("TASKGATE_DYNAMODB_ENDPOINT", raising=False)
            mp.setenv("TASKGATE_ADMIN_TOKEN_HASH", ADMIN_HASH)
            _reset_runtime()
            assert runtime.Settings.from_env().store == "dynamodb" and os.environ["TASKGATE_TABLE"] == table
            yield Env.start()
            _reset_runtime()
