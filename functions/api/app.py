"""Lambda entry point of the REST API (API Gateway HTTP API v2 events)."""

from taskgate.api.handler import handler

__all__ = ["handler"]
