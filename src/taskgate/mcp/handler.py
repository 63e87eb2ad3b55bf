"""Lambda entry: an API Gateway HTTP API v2 event -> the MCP ASGI app, through Mangum.

`taskgate serve` calls this same function (in a worker thread) for every local /mcp request.
"""

from __future__ import annotations

import logging
from typing import Any

from mangum import Mangum

from taskgate.mcp.app import build_app

# The lifespan runs on every invocation (see below): at INFO these would log five lines of
# startup/shutdown per request.
for _name in ("mangum", "mcp.server.streamable_http_manager", "mcp.server.streamable_http"):
    logging.getLogger(_name).setLevel(logging.WARNING)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # A fresh app per invocation: Mangum runs the ASGI lifespan each time, and the SDK's
    # session manager inside the app can run only once. The MCPServer itself is built once per process.
    response: dict[str, Any] = Mangum(build_app(), lifespan="auto")(event, context)
    return response
