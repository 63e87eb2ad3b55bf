"""The key authorizer function: `taskgate.auth.authorizer` with logs, metrics and traces.

One log line per decision, with the route and (when accepted) the principal; never the key.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from taskgate import telemetry
from taskgate.auth import authorizer
from taskgate.cloud import observe
from taskgate.domain.errors import ErrorCode
from taskgate.telemetry import Metric


def _authorize(event: dict[str, Any], context: Any) -> dict[str, Any]:
    answer = authorizer.handler(event, context)
    route = str(event.get("routeKey") or "")
    if answer["isAuthorized"]:
        who = answer["context"]
        observe.bind(principal=who["actor"], credential_id=who["credential_id"])
        observe.logger.info("key accepted", route=route)
    else:
        telemetry.count(Metric.REFUSALS, code=ErrorCode.UNAUTHORIZED.value)
        observe.logger.info("key refused", route=route)
    return answer


handler = observe.instrument(_authorize, correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
