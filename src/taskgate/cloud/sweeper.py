"""The sweeper function (EventBridge Scheduler, every minute): lapsed leases back to the queue.

The schedule sends {"execution_id": ..., "scheduled_time": ...}; the execution id is the
correlation id of the run's log lines. Each expired lease gets its own line with its task id.
"""

from __future__ import annotations

from typing import Any

from taskgate.cloud import observe
from taskgate.scheduled import sweeper

PRINCIPAL = "system:sweeper"


def _sweep(event: dict[str, Any], context: Any) -> dict[str, Any]:
    observe.bind(principal=PRINCIPAL, scheduled_time=str(event.get("scheduled_time") or "") or None)
    report = sweeper.handler(event, context)
    for task_id in report["expired"]:
        observe.logger.info("lease expired", task_id=task_id)
    for task_id in report["cascaded"]:
        observe.logger.info("moved by a reconciled cascade", task_id=task_id)
    if report["expired"] or report["cascaded"]:  # an idle minute logs nothing but Lambda's own lines
        observe.logger.info("sweep done", expired=len(report["expired"]), cascaded=len(report["cascaded"]))
    return report


handler = observe.instrument(_sweep, correlation_id_path="execution_id")
