"""Decisions (list, log, supersede) and full-text search over a project's records."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from taskgate import runtime
from taskgate.api.access import Access, caller, route
from taskgate.api.schemas import DecisionIn, DecisionList, SearchResults
from taskgate.domain.models import Decision
from taskgate.service import decisions

H = Access.HUMAN
TAGS = ("decisions",)


@route(
    "GET",
    "/api/projects/<project>/decisions",
    H,
    summary="List decisions, oldest first (superseded ones only when asked for)",
    tags=TAGS,
)
def list_decisions(
    project: str,
    include_superseded: Annotated[bool, Query()] = False,
    spec_id: Annotated[str | None, Query()] = None,
) -> DecisionList:
    items = decisions.list_decisions(
        runtime.context(), caller(), project, include_superseded=include_superseded, spec_id=spec_id
    )
    return DecisionList(items=items)


@route(
    "POST",
    "/api/projects/<project>/decisions",
    H,
    summary="Log a decision, or supersede one (the old one is marked, in the same commit)",
    status=201,
    tags=TAGS,
    body=True,
)
def log_decision(project: str, body: DecisionIn) -> Decision:
    return decisions.log(
        runtime.context(),
        caller(),
        project,
        title=body.title,
        body=body.body,
        spec_id=body.spec_id,
        supersedes=body.supersedes,
    )


@route(
    "GET",
    "/api/projects/<project>/search",
    H,
    summary="Search the project's live decisions, specs and tasks (ranked)",
    tags=TAGS,
)
def search(
    project: str,
    q: Annotated[str, Query(min_length=1, max_length=500)],
    limit: Annotated[int, Query(ge=1, le=50)] = 10,
) -> SearchResults:
    hits = decisions.search(runtime.context(), caller(), project, q, limit=limit)
    return SearchResults.model_validate({"items": hits})
