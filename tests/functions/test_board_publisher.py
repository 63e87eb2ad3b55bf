"""The board publisher (CloudFormation custom resource) on moto's S3 and CloudFront, answering
CloudFormation over real HTTP: a local server stands in for the pre-signed response URL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskgate.cloud import board
from tests.functions.stack import Stack, resource, stack
from tests.support.board_publisher import CONFIG, CloudFormation
from tests.support.board_publisher import board_files as _web
from tests.support.board_publisher import bucket_and_distribution as _setup
from tests.support.board_publisher import custom_resource_request as _request


@pytest.fixture
def cfn() -> Iterator[CloudFormation]:
    server = CloudFormation()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    monkeypatch.setenv("LAMBDA_TASK_ROOT", str(tmp_path))  # the function's package: app.py and web/
    with stack({"LAMBDA_TASK_ROOT": str(tmp_path)}) as s:
        yield s


def _objects(s3: Any, bucket: str) -> dict[str, dict[str, Any]]:
    out = {}
    for obj in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        got = s3.get_object(Bucket=bucket, Key=obj["Key"])
        out[obj["Key"]] = {
            "body": got["Body"].read().decode(),
            "type": got["ContentType"],
            "cache": got.get("CacheControl"),
        }
    return out


def test_create_update_and_delete_publish_the_board_and_its_config(
    cloud: Stack, cfn: CloudFormation, tmp_path: Path
) -> None:
    s3, cloudfront, bucket, distribution = _setup(cloud)
    _web(
        tmp_path,
        {
            "index.html": "<!doctype html><title>taskgate</title>",
            "app.js": "export const x = 1;",
            "css/board.css": "body{}",
            "config.json": '{"auth": "local"}',  # a local default in the repository: the stack's wins
            ".DS_Store": "junk",
        },
    )
    cloud.invoke(board.handler, _request("Create", cfn, bucket, distribution))
    assert [a["Status"] for a in cfn.answers] == ["SUCCESS"]
    assert cfn.answers[0]["PhysicalResourceId"] == f"board:{bucket}"
    assert cfn.answers[0]["RequestId"] == "req-create" and cfn.answers[0]["LogicalResourceId"] == "BoardFiles"
    objects = _objects(s3, bucket)
    assert set(objects) == {"index.html", "app.js", "css/board.css", "config.json"}
    assert json.loads(objects["config.json"]["body"]) == CONFIG
    assert objects["index.html"]["type"] == "text/html; charset=utf-8"
    assert objects["app.js"]["type"] == "text/javascript; charset=utf-8"
    assert objects["css/board.css"]["type"] == "text/css; charset=utf-8"
    assert objects["config.json"]["type"] == "application/json; charset=utf-8"
    assert {o["cache"] for o in objects.values()} == {"no-cache"}
    assert (
        cloudfront.list_invalidations(DistributionId=distribution)["InvalidationList"].get("Quantity", 0) == 0
    )

    # A new version of the board: one file gone, one changed; the cache is invalidated.
    (tmp_path / "web" / "css" / "board.css").unlink()
    _web(tmp_path, {"app.js": "export const x = 2;"})
    cloud.invoke(
        board.handler,
        _request(
            "Update",
            cfn,
            bucket,
            distribution,
            PhysicalResourceId=f"board:{bucket}",
            OldResourceProperties={},
        ),
    )
    assert cfn.answers[-1]["Status"] == "SUCCESS"
    objects = _objects(s3, bucket)
    assert set(objects) == {"index.html", "app.js", "config.json"}
    assert objects["app.js"]["body"] == "export const x = 2;"
    invalidations = cloudfront.list_invalidations(DistributionId=distribution)["InvalidationList"]
    assert invalidations["Quantity"] == 1

    cloud.invoke(
        board.handler, _request("Delete", cfn, bucket, distribution, PhysicalResourceId=f"board:{bucket}")
    )
    assert cfn.answers[-1]["Status"] == "SUCCESS"
    assert _objects(s3, bucket) == {}
    s3.delete_bucket(Bucket=bucket)  # what CloudFormation does next: it succeeds on the emptied bucket

    # Deleting again (a bucket already gone) still succeeds, so a teardown never hangs on it.
    cloud.invoke(
        board.handler, _request("Delete", cfn, bucket, distribution, PhysicalResourceId=f"board:{bucket}")
    )
    assert cfn.answers[-1]["Status"] == "SUCCESS"


def test_a_failure_is_reported_to_cloudformation_not_left_hanging(cloud: Stack, cfn: CloudFormation) -> None:
    cloud.invoke(board.handler, _request("Create", cfn, "no-such-bucket-here", "E000000000"))
    [answer] = cfn.answers
    assert answer["Status"] == "FAILED"
    assert "NoSuchBucket" in answer["Reason"]
    errors = [line for line in cloud.output.logs() if line["level"] == "ERROR"]
    assert errors and errors[0]["correlation_id"] == "req-create"


def test_the_template_passes_the_board_the_contract_it_expects() -> None:
    """config.json's keys and values, as template.yaml builds them for the board (web/)."""
    props = resource("BoardFiles")["Properties"]
    config = props["Config"]
    assert set(config) == set(CONFIG)
    assert (
        config["auth"] == "cognito"
        and config["api_base"] == ""
        and config["scopes"] == "openid email profile"
    )
    assert config["client_id"] == {"Ref": "UserPoolClient"}
    assert config["cognito_domain"] == {
        "Fn::Sub": "https://${UserPoolDomain}.auth.${AWS::Region}.amazoncognito.com"
    }
    client = resource("UserPoolClient")["Properties"]
    assert client["GenerateSecret"] is False  # a public client: the board uses PKCE
    assert client["AllowedOAuthFlows"] == ["code"]
    assert (
        client["CallbackURLs"] == client["LogoutURLs"] == [{"Fn::Sub": "https://${Distribution.DomainName}/"}]
    )
    assert sorted(client["AllowedOAuthScopes"]) == sorted(CONFIG["scopes"].split())
