"""Lambda entry point of the board publisher (CloudFormation custom resource; web/ beside it)."""

from taskgate.cloud.board import handler

__all__ = ["handler"]
