"""The MCP function: `taskgate.mcp.handler` with logs, metrics and traces (SnapStart)."""

from __future__ import annotations

from aws_lambda_powertools.logging import correlation_paths

from taskgate.cloud import observe, requests, snapstart
from taskgate.mcp.handler import handler as _mcp

handler = observe.instrument(
    _mcp, correlation_id_path=correlation_paths.API_GATEWAY_HTTP, keys=requests.mcp_keys
)
snapstart.register()
observe.prime()
