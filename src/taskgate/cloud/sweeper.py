"""The sweeper function (EventBridge Scheduler, every minute): lapsed leases back to the queue,
verification runs nobody finished ended as errors, half-done cascades settled.

The schedule sends {"execution_id": ..., "scheduled_time": ...}; the execution id is the
correlation id of the run's log lines. Each task it changes gets its own line with its task id.
"""

from __future__ import annotations

from typing import Any

from taskgate import telemetry
from taskgate.cloud import observe
from taskgate.scheduled import sweeper
from taskgate.telemetry import Metric

PRINCIPAL = "system:sweeper"


def _sweep(event: dict[str, Any], context: Any) -> dict[str, Any]:
    observe.bind(principal=PRINCIPAL, scheduled_time=str(event.get("scheduled_time") or "") or None)
    report = sweeper.handler(event, context)
    for task_id in report["expired"]:
        observe.logger.info("lease expired", task_id=task_id)
    for task_id in report["abandoned_runs"]:
        # A run's verdict, decided here instead of by a verifier: no answer in time is an error.
        telemetry.count(Metric.VERDICTS, outcome="error")
        observe.logger.info("verification run ended: no answer in time", task_id=task_id)
    for task_id in report["cascaded"]:
        observe.logger.info("moved by a reconciled cascade", task_id=task_id)
    if any(report.values()):  # an idle minute logs nothing but Lambda's own lines
        observe.logger.info(
            "sweep done",
            expired=len(report["expired"]),
            abandoned_runs=len(report["abandoned_runs"]),
            cascaded=len(report["cascaded"]),
        )
    return report


handler = observe.instrument(_sweep, correlation_id_path="execution_id")
