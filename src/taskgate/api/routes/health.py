"""Liveness: the one route that needs no credential and touches no store."""

from __future__ import annotations

import taskgate
from taskgate.api.access import Access, route
from taskgate.api.schemas import Health


@route("GET", "/api/health", Access.PUBLIC, summary="Is the API up", tags=("health",))
def health() -> Health:
    return Health(status="ok", version=taskgate.__version__)
