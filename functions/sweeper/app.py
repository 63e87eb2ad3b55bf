"""Lambda entry point of the lease sweeper (EventBridge Scheduler, every minute)."""

from taskgate.cloud.sweeper import handler

__all__ = ["handler"]
