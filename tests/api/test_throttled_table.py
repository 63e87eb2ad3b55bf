"""A throttled DynamoDB table, on the API as Lambda runs it (moto, TASKGATE_STORE=dynamodb): the
request ends with a clear 503 E_UNAVAILABLE well inside the function's timeout, after botocore's
standard-mode attempts (taskgate.aws) and no retries of ours nested around them.

DynamoDB's throttling answer is made where DynamoDB would send it: an HTTP 400 with
ProvisionedThroughputExceededException, from a handler first on the store client's
`before-send` event, so botocore's retry logic, the store and the handler all run as they are."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml
from botocore.awsrequest import AWSResponse
from moto.core.botocore_stubber import MockRawResponse

from taskgate import runtime
from taskgate.aws import MAX_ATTEMPTS, READ_TIMEOUT_S
from taskgate.store.dynamodb import DynamoDBStore
from tests.api.support import Env

ROOT = Path(__file__).resolve().parents[2]
THROTTLED = {
    "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
    "message": "The level of configured provisioned throughput for the table was exceeded.",
}


class _CfnLoader(yaml.SafeLoader):
    """Reads template.yaml's short-form intrinsics (!Ref, !Sub ...) as plain values."""


_CfnLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _function_timeout_s() -> float:
    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=_CfnLoader)
    return float(template["Globals"]["Function"]["Timeout"])


def test_a_throttled_table_is_a_clear_503_within_the_functions_time(dynamo_env: Env) -> None:
    store = runtime.context().store
    assert isinstance(store, DynamoDBStore)
    sent: list[str] = []

    def throttle(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.headers["X-Amz-Target"].decode())
        body = json.dumps(THROTTLED).encode()
        return AWSResponse(
            request.url, 400, {"Content-Type": "application/x-amz-json-1.0"}, MockRawResponse(body)
        )

    store._client.meta.events.register_first("before-send.dynamodb", throttle)
    start = time.monotonic()
    r = dynamo_env.call("GET", "/api/projects/anything")
    took = time.monotonic() - start
    assert r.status == 503, r
    assert r.json["code"] == "E_UNAVAILABLE"
    assert r.json["message"] == "the table is busy (throttled); try again in a moment"
    # One read of the project, tried botocore's attempts and no more: no retry of ours around it.
    assert sent == ["DynamoDB_20120810.GetItem"] * MAX_ATTEMPTS
    # Within the function's time with room to spare (a read could not even time out once).
    timeout = _function_timeout_s()
    assert timeout == 29 and timeout > READ_TIMEOUT_S * 2
    assert took < timeout / 2, took
