"""The REST function: `taskgate.api.handler` with logs, metrics and traces (SnapStart)."""

from __future__ import annotations

from aws_lambda_powertools.logging import correlation_paths

from taskgate.api.handler import handler as _api
from taskgate.cloud import observe, requests, snapstart

handler = observe.instrument(
    _api,
    correlation_id_path=correlation_paths.API_GATEWAY_HTTP,
    keys=requests.rest_keys,
    summary="request",
)
snapstart.register(before_snapshot=observe.prime)
