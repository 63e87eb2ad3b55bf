"""The sweeper function (EventBridge, every minute in the cloud; a thread under `taskgate serve`)."""

from __future__ import annotations

from typing import Any

from taskgate import runtime
from taskgate.service.sweeper import sweep


def handler(event: dict[str, Any] | None = None, context: Any = None) -> dict[str, Any]:
    report = sweep(runtime.context())
    return {"expired": report.expired, "cascaded": report.cascaded, "abandoned_runs": report.abandoned_runs}
