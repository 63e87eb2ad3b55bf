"""`taskgate serve --store dynamodb` against a DynamoDB endpoint (moto's server, on loopback)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer

from taskgate.store.schema import dynamodb_table_definition
from tests.support.server import free_port, running

CREDS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture
def endpoint() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def test_serve_runs_on_a_dynamodb_table(tmp_path: Path, endpoint: str) -> None:
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_table(**dynamodb_table_definition("tg"))
    extra = ["--store", "dynamodb", "--table", "tg", "--endpoint-url", endpoint]
    with running(tmp_path / "d", extra=extra, env={**os.environ, **CREDS}) as server:
        assert not (tmp_path / "d" / "taskgate.db").exists()  # no SQLite file: the table holds the state
        status, created = server.request(
            "POST", "/api/projects", {"name": "demo", "repo": "/r"}, token=server.admin_token
        )
        assert status == 201, created
        status, listed = server.request("GET", "/api/projects", token=server.admin_token)
        assert status == 200 and [p["name"] for p in listed["items"]] == ["demo"]
    stored = client.get_item(TableName="tg", Key={"PK": {"S": "P#demo"}, "SK": {"S": "PROJECT"}})
    assert "Item" in stored
