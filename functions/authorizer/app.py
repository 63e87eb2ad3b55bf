"""Lambda entry point of the key authorizer (API Gateway REQUEST authorizer, simple responses)."""

from taskgate.cloud.authorizer import handler

__all__ = ["handler"]
