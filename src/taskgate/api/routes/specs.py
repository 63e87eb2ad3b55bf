"""Specs: list, create, read, approve (any risk: the caller is a human), revise, render."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from taskgate import runtime
from taskgate.api.access import Access, caller, route
from taskgate.api.schemas import SpecApproved, SpecCreate, SpecMarkdown, SpecPage, SpecRevise
from taskgate.domain.models import Spec
from taskgate.domain.specs import render_markdown
from taskgate.service import specs

H = Access.HUMAN
TAGS = ("specs",)
BASE = "/api/projects/<project>/specs"


@route("GET", BASE, H, summary="List specs", tags=TAGS)
def list_specs(
    project: str,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query()] = None,
) -> SpecPage:
    items, next_cursor = specs.list_specs(runtime.context(), caller(), project, limit=limit, cursor=cursor)
    return SpecPage(items=items, cursor=next_cursor)


@route("POST", BASE, H, summary="Create a spec (draft)", status=201, tags=TAGS, body=True)
def create_spec(project: str, body: SpecCreate) -> Spec:
    return specs.create(
        runtime.context(),
        caller(),
        project,
        title=body.title,
        body=body.body,
        risk=body.risk,
        criteria=body.criteria,
        request_id=body.request_id,
    )


@route("GET", f"{BASE}/<spec_id>", H, summary="Get a spec", tags=TAGS)
def get_spec(project: str, spec_id: str) -> Spec:
    return specs.get(runtime.context(), caller(), project, spec_id)


@route(
    "POST",
    f"{BASE}/<spec_id>/approve",
    H,
    summary="Approve a draft spec (any risk); its backlog tasks become ready",
    tags=TAGS,
)
def approve_spec(project: str, spec_id: str) -> SpecApproved:
    spec, moved = specs.approve(runtime.context(), caller(), project, spec_id)
    return SpecApproved(spec=spec, moved=moved)


@route(
    "POST",
    f"{BASE}/<spec_id>/revise",
    H,
    summary="Send a spec back to draft as a new revision, optionally with new content",
    tags=TAGS,
    body=True,
)
def revise_spec(project: str, spec_id: str, body: Annotated[SpecRevise | None, Body()] = None) -> Spec:
    change = body or SpecRevise()
    return specs.revise(
        runtime.context(),
        caller(),
        project,
        spec_id,
        title=change.title,
        body=change.body,
        risk=change.risk,
        criteria=change.criteria,
    )


@route(
    "GET",
    f"{BASE}/<spec_id>/markdown",
    H,
    summary="The spec rendered as specs/SPEC-<n>.md, for a human to commit",
    tags=TAGS,
)
def spec_markdown(project: str, spec_id: str) -> SpecMarkdown:
    spec = specs.get(runtime.context(), caller(), project, spec_id)
    return SpecMarkdown(path=f"specs/{spec.id}.md", markdown=render_markdown(spec))
