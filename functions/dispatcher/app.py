"""Lambda entry point of the dispatcher (the table's stream -> one Fargate verifier per submission)."""

from taskgate.cloud.dispatcher import handler

__all__ = ["handler"]
