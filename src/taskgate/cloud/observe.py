"""Logs, metrics and traces of the Lambda functions (Powertools), wired at the edges only.

- Logger: JSON lines on stdout. It is the stdlib logger named "taskgate", so every
  `logging.getLogger("taskgate.<module>")` line of the package propagates into it and carries
  the same keys: the correlation id of the request, the principal and the task id. Events and
  responses are never logged (they carry keys, claim tokens and minted secrets).
- Metrics: CloudWatch embedded metric format. `taskgate.telemetry.count` calls from the
  services and the MCP/REST edges land here; plain counters are flushed once per invocation,
  counters with a dimension (verdict outcome, refusal code) are written as they happen.
- Tracer: X-Ray through Powertools, patching botocore only (its DynamoDB and ECS calls become
  subsegments; patching every library the X-Ray SDK knows would import them all). Responses
  are never captured, for the same reason events are never logged. It is built on first use:
  patching botocore imports it (~0.3 s here), which is most of a function's init. Outside
  Lambda the X-Ray SDK would also build a sampling client (~0.4 s more), which is why
  bench/cold_start.py measures in a Lambda-like environment.

`instrument` stacks the three around a handler. `prime` does the expensive part of init (the
tracer, the store's boto3 client, ~0.45 s here): the MCP and REST functions run it before their
SnapStart snapshot, so no restored environment pays it; the others (authorizer, sweeper,
dispatcher) let their first invocation do it, which costs the same as doing it in init and keeps
their module import light (bench/cold_start.py reports both).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer, single_metric
from aws_lambda_powertools.metrics import MetricUnit

from taskgate import runtime, telemetry
from taskgate.telemetry import Metric

SERVICE = "taskgate"
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "taskgate"

# "name": which of the package's loggers wrote the line (taskgate.api, taskgate.mcp, ...).
logger = Logger(service=SERVICE, name="%(name)s")
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
_tracer: Tracer | None = None

Handler = Callable[[dict[str, Any], Any], Any]
# What to put on every log line of an invocation (and on its trace), read from its event.
Keys = Callable[[Mapping[str, Any]], Mapping[str, str | None]]

_ANNOTATED = ("principal", "task_id", "tool")  # searchable in X-Ray; the rest is log context only
# Keys Powertools puts on every line that say nothing the line's log group (one per function)
# and Lambda's own metrics do not: ingestion is billed per byte (bench/cost.py). The request
# id, the correlation id and the request's own keys stay.
_SAID_ELSEWHERE = (
    "location",
    "service",
    "cold_start",
    "function_name",
    "function_memory_size",
    "function_arn",
)


def _emit(metric: Metric, value: int, dimensions: tuple[tuple[str, str], ...]) -> None:
    if not dimensions:
        metrics.add_metric(name=metric.value, unit=MetricUnit.Count, value=value)
        return
    # Powertools' Metrics share one dimension set per flush; a per-count dimension (which
    # outcome, which error code) needs its own EMF document.
    with single_metric(
        name=metric.value,
        unit=MetricUnit.Count,
        value=value,
        namespace=NAMESPACE,
        default_dimensions={"service": SERVICE, **dict(dimensions)},
    ):
        pass


telemetry.install(_emit)


def tracer() -> Tracer:
    global _tracer
    if _tracer is None:
        _tracer = Tracer(service=SERVICE, patch_modules=["botocore"])
    return _tracer


def prime() -> None:
    """Build the tracer and open the store (boto3 client, service model parsed)."""
    tracer()
    runtime.context()


def bind(**keys: str | None) -> None:
    """Add keys to every following log line of this invocation (and annotate the trace)."""
    present = {k: v for k, v in keys.items() if v}
    logger.append_keys(**present)
    for name in _ANNOTATED:
        if name in present:
            tracer().put_annotation(name, str(present[name]))


def instrument(
    handler: Handler,
    *,
    correlation_id_path: str | None = None,
    keys: Keys | None = None,
    summary: str | None = None,
) -> Handler:
    """The handler with Powertools logging, metrics and tracing around it. With `summary`, one
    INFO line per invocation with that message and the response's HTTP status (the request
    keys ride on it, like on every line)."""

    @functools.wraps(handler)
    def with_keys(event: dict[str, Any], context: Any) -> Any:
        logger.remove_keys(_SAID_ELSEWHERE)  # after inject_lambda_context put them back
        if keys is not None:
            bind(**keys(event))
        response = handler(event, context)
        if summary is not None:
            status = response.get("statusCode") if isinstance(response, dict) else None
            logger.info(summary, status=status)
        return response

    traced: list[Handler] = []  # the tracer is built on first use (see prime)

    @functools.wraps(handler)  # inspect.unwrap(instrumented) is the handler it wraps
    def invoke(event: dict[str, Any], context: Any) -> Any:
        if not traced:
            traced.append(tracer().capture_lambda_handler(with_keys, capture_response=False))
        return traced[0](event, context)

    measured = metrics.log_metrics(invoke, capture_cold_start_metric=True)
    return logger.inject_lambda_context(measured, correlation_id_path=correlation_id_path, clear_state=True)
