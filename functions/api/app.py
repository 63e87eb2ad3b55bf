"""Lambda entry point of the REST API (API Gateway HTTP API v2 events)."""

from taskgate.cloud.api import handler

__all__ = ["handler"]
