"""Lambda entry point for /mcp (API Gateway HTTP API v2 events)."""

from taskgate.cloud.mcp import handler

__all__ = ["handler"]
