"""Projects: create, list, read, settings, execution defaults, history."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from taskgate import runtime
from taskgate.api.access import Access, caller, route
from taskgate.api.schemas import ExecutionDefaultsIn, HistoryPage, ProjectCreate, ProjectList, ProjectPatch
from taskgate.domain.models import Project
from taskgate.service import projects

H = Access.HUMAN
TAGS = ("projects",)


@route("GET", "/api/projects", H, summary="List projects", tags=TAGS)
def list_projects() -> ProjectList:
    return ProjectList(items=projects.list_all(runtime.context(), caller()))


@route("POST", "/api/projects", H, summary="Create a project", status=201, tags=TAGS, body=True)
def create_project(body: ProjectCreate) -> Project:
    return projects.create(
        runtime.context(), caller(), body.name, repo=body.repo, description=body.description
    )


@route("GET", "/api/projects/<project>", H, summary="Get a project", tags=TAGS)
def get_project(project: str) -> Project:
    return projects.get(runtime.context(), caller(), project)


@route(
    "PATCH",
    "/api/projects/<project>",
    H,
    summary="Change settings (max_attempts, lease_minutes, description, repo)",
    tags=TAGS,
    body=True,
)
def patch_project(project: str, body: ProjectPatch) -> Project:
    return projects.update_settings(
        runtime.context(),
        caller(),
        project,
        max_attempts=body.max_attempts,
        lease_minutes=body.lease_minutes,
        description=body.description,
        repo=body.repo,
    )


@route(
    "PUT",
    "/api/projects/<project>/execution-defaults",
    H,
    summary="Set verification commands and conventions for agents' briefs",
    tags=TAGS,
    body=True,
)
def put_execution_defaults(project: str, body: ExecutionDefaultsIn) -> Project:
    return projects.set_execution_defaults(
        runtime.context(),
        caller(),
        project,
        verification_commands=body.verification_commands,
        conventions=body.conventions,
    )


@route(
    "GET",
    "/api/projects/<project>/history",
    H,
    summary="Project history: every switch, key and config change, with who and when (newest first)",
    tags=TAGS,
)
def project_history(
    project: str,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query()] = None,
) -> HistoryPage:
    items, next_cursor = projects.history(runtime.context(), caller(), project, limit=limit, cursor=cursor)
    return HistoryPage(items=items, cursor=next_cursor)
