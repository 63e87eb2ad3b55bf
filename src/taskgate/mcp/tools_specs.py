"""Spec tools: write, approve and read specs (acceptance criteria that tasks hold)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from taskgate import runtime
from taskgate.domain import limits
from taskgate.domain.models import CriterionInput, Risk, Spec
from taskgate.mcp import views
from taskgate.mcp.args import AgentId, OnBehalfOf, ProjectName, RequestId, ShortText, SpecId, Text
from taskgate.mcp.identity import who
from taskgate.mcp.registry import tool
from taskgate.service import specs

Criteria = Annotated[
    list[CriterionInput],
    Field(
        description="Acceptance criteria, each {text, kind, verify_ref}. kind 'test': verify_ref names a "
        "test or test group in the verifier's report (e.g. 'tests.test_api.TestHealth' or "
        "'api > health > returns 200'); 'command': verify_ref is a shell command that must exit 0; "
        "'review' (default): judged by a reviewer from the text, no verify_ref.",
        min_length=1,
        max_length=limits.CRITERIA,
    ),
]
RiskArg = Annotated[
    Risk,
    Field(description="low: an architect agent may approve it; medium or high: only a human approves."),
]


@tool("Create a spec")
def create_spec(
    project: ProjectName,
    title: Annotated[ShortText, Field(description="What the spec delivers, in one line.")],
    criteria: Criteria,
    body: Annotated[
        Text, Field(description="The spec itself: context, behaviour, constraints (markdown).")
    ] = "",
    risk: RiskArg = Risk.LOW,
    request_id: RequestId = None,
    agent_id: AgentId = None,
    on_behalf_of: OnBehalfOf = None,
) -> Spec:
    """Write a new spec in draft: a body plus acceptance criteria that tasks will hold.

    Use it (usually as an architect) before creating the tasks that implement a feature; link
    the tasks with create_task(spec_id=...). Tasks of a draft spec wait in backlog until the
    spec is approved (approve_spec; a human for medium or high risk). Returns the spec with
    its id 'SPEC-<n>' and criterion ids 'AC-<n>.<m>'.
    """
    acting = who(agent_id, on_behalf_of)
    return specs.create(
        runtime.context(),
        acting,
        project,
        title=title,
        body=body,
        risk=risk,
        criteria=criteria,
        request_id=request_id,
    )


@tool("Update a draft spec")
def update_spec(
    project: ProjectName,
    spec_id: SpecId,
    title: Annotated[ShortText | None, Field(description="New title; omit to keep.")] = None,
    body: Annotated[Text | None, Field(description="New body; omit to keep.")] = None,
    risk: Annotated[
        Risk | None,
        Field(description="New risk; omit to keep. You may raise it; only a human may lower it."),
    ] = None,
    criteria: Annotated[
        list[CriterionInput] | None,
        Field(
            description="Replaces all criteria (renumbered AC-<n>.1...); omit to keep.",
            max_length=limits.CRITERIA,
        ),
    ] = None,
    agent_id: AgentId = None,
    on_behalf_of: OnBehalfOf = None,
) -> Spec:
    """Edit a spec while it is still a draft. An approved spec is refused (E_WRONG_STATE): a
    human revises it on the board first. Returns the updated spec."""
    acting = who(agent_id, on_behalf_of)
    return specs.update(
        runtime.context(), acting, project, spec_id, title=title, body=body, risk=risk, criteria=criteria
    )


@tool("Approve a spec")
def approve_spec(
    project: ProjectName, spec_id: SpecId, agent_id: AgentId = None, on_behalf_of: OnBehalfOf = None
) -> views.SpecApproved:
    """Approve a draft spec, so its tasks leave backlog and become ready (or blocked).

    Only an agent whose key has the architect role may approve, and only low-risk specs;
    medium and high risk are approved by a human on the board (E_FORBIDDEN here). Returns the
    approved spec and the ids of the tasks that moved.
    """
    acting = who(agent_id, on_behalf_of)
    spec, moved = specs.approve(runtime.context(), acting, project, spec_id)
    return views.SpecApproved(spec=spec, tasks_moved=moved)


@tool("Get a spec", read_only=True)
def get_spec(project: ProjectName, spec_id: SpecId) -> Spec:
    """Read one spec: title, body, risk, status (draft or approved) and its acceptance criteria."""
    return specs.get(runtime.context(), who(), project, spec_id)


@tool("List specs", read_only=True)
def list_specs(
    project: ProjectName,
    limit: Annotated[int, Field(description="Page size (1-200).", ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Field(description="The cursor a previous page returned.")] = None,
) -> views.SpecList:
    """List the project's specs, oldest first, one page at a time (pass the returned cursor on)."""
    found, next_cursor = specs.list_specs(runtime.context(), who(), project, limit=limit, cursor=cursor)
    return views.SpecList(specs=found, cursor=next_cursor)
