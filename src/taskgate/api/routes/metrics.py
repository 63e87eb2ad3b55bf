"""Metrics per project, computed from the stored records."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from taskgate import runtime
from taskgate.api.access import Access, caller, route
from taskgate.service import metrics


@route(
    "GET",
    "/api/projects/<project>/metrics",
    Access.HUMAN,
    summary="Throughput, cycle time, first-pass rate, attempts, verifier errors, self-report mismatches",
    tags=("metrics",),
)
def project_metrics(
    project: str, days: Annotated[int, Query(ge=1, le=metrics.MAX_DAYS)] = metrics.DEFAULT_DAYS
) -> metrics.ProjectMetrics:
    return metrics.project_metrics(runtime.context(), caller(), project, days=days)
