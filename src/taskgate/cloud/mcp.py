"""The MCP function: `taskgate.mcp.handler` with logs, metrics and traces (SnapStart)."""

from __future__ import annotations

from aws_lambda_powertools.logging import correlation_paths

from taskgate.cloud import observe, requests, snapstart
from taskgate.mcp.handler import handler as _mcp
from taskgate.mcp.server import get_server


def prime() -> None:
    observe.prime()
    get_server()  # the tool schemas


handler = observe.instrument(
    _mcp,
    correlation_id_path=correlation_paths.API_GATEWAY_HTTP,
    keys=requests.mcp_keys,
    summary="request",
)
snapstart.register(before_snapshot=prime)
