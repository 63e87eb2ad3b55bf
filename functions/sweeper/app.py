"""Lambda entry point of the lease sweeper (EventBridge schedule)."""

from taskgate.scheduled.sweeper import handler

__all__ = ["handler"]
