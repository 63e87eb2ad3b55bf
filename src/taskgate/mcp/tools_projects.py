"""Project-level tools: projects, execution defaults, decisions, search."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from taskgate import runtime
from taskgate.domain.models import Decision
from taskgate.mcp import views
from taskgate.mcp.args import AgentId, DecisionId, Lines, OnBehalfOf, ProjectName, ShortText, SpecId, Text
from taskgate.mcp.identity import who
from taskgate.mcp.registry import tool
from taskgate.service import decisions, projects


@tool("List projects", read_only=True)
def list_projects() -> views.ProjectList:
    """List the projects your key may use, with their settings.

    Call this first when you do not know the project name. Returns each project's name, repo,
    lease and attempt settings, whether verification is on, and its execution defaults
    (verification commands and conventions). Next: claim_task(project) to start work.
    """
    ctx = runtime.context()
    return views.ProjectList(projects=[views.project(p) for p in projects.list_all(ctx, who())])


@tool("Get a project", read_only=True)
def get_project(project: ProjectName) -> views.ProjectView:
    """Read one project's settings: repo, max attempts, default lease in minutes, whether
    verification is on, the verifier's check names, and the execution defaults (verification
    commands and conventions every task brief includes)."""
    return views.project(projects.get(runtime.context(), who(), project))


@tool("Set execution defaults", idempotent=True)
def set_execution_defaults(
    project: ProjectName,
    verification_commands: Annotated[
        Lines | None,
        Field(
            description="Shell commands an agent runs to check its work, e.g. ['pytest -q']. "
            "Replaces the current list; omit to keep it."
        ),
    ] = None,
    conventions: Annotated[
        Lines | None,
        Field(
            description="House rules every brief repeats, e.g. ['type hints everywhere']. "
            "Replaces the current list; omit to keep it."
        ),
    ] = None,
    agent_id: AgentId = None,
    on_behalf_of: OnBehalfOf = None,
) -> views.ProjectView:
    """Set the project's execution defaults: the verification commands and conventions that
    every task brief carries (a task's own verification_commands override the commands).

    Call it when setting up a project's way of working. A list you pass replaces the current
    one; an omitted list is kept. Returns the project.
    """
    acting = who(agent_id, on_behalf_of)
    p = projects.set_execution_defaults(
        runtime.context(),
        acting,
        project,
        verification_commands=verification_commands,
        conventions=conventions,
    )
    return views.project(p)


@tool("Log a decision")
def log_decision(
    project: ProjectName,
    title: Annotated[
        ShortText, Field(description="The decision in one line, e.g. 'Use SQLite for the cache'.")
    ],
    body: Annotated[Text, Field(description="Why, what was rejected, and what follows from it.")] = "",
    spec_id: Annotated[
        SpecId | None,
        Field(description="Optional spec this decision belongs to; briefs of its tasks show it."),
    ] = None,
    supersedes: Annotated[
        DecisionId | None,
        Field(
            description="Optional id of an earlier decision this one replaces; the old one stops "
            "appearing in briefs."
        ),
    ] = None,
    agent_id: AgentId = None,
    on_behalf_of: OnBehalfOf = None,
) -> Decision:
    """Record a design decision so that later agents follow it.

    Decisions appear in task briefs (those linked to the task's spec, plus the most relevant
    by full-text search), so log one whenever you settle something other agents must not
    re-decide. Returns the decision with its id 'DEC-<n>'.
    """
    acting = who(agent_id, on_behalf_of)
    return decisions.log(
        runtime.context(), acting, project, title=title, body=body, spec_id=spec_id, supersedes=supersedes
    )


@tool("List decisions", read_only=True)
def list_decisions(
    project: ProjectName,
    include_superseded: Annotated[bool, Field(description="Also list decisions that were replaced.")] = False,
    spec_id: Annotated[SpecId | None, Field(description="Only decisions linked to this spec.")] = None,
) -> views.DecisionList:
    """List the project's design decisions (current ones unless include_superseded).
    Read them before making a choice that may already have been made."""
    found = decisions.list_decisions(
        runtime.context(), who(), project, include_superseded=include_superseded, spec_id=spec_id
    )
    return views.DecisionList(decisions=found)


@tool("Search a project", read_only=True)
def search(
    project: ProjectName,
    query: Annotated[str, Field(description="Words to look for.", min_length=1, max_length=500)],
    limit: Annotated[int, Field(description="At most this many results (1-50).", ge=1, le=50)] = 10,
) -> views.SearchResults:
    """Full-text search over the project's current decisions, specs and tasks, best match first.
    Use it to find earlier work or decisions on a topic. Returns kind, id, title, status, score;
    then read the hit with get_task, get_spec or list_decisions."""
    hits = decisions.search(runtime.context(), who(), project, query, limit=limit)
    return views.SearchResults(results=[views.SearchHit.model_validate(h) for h in hits])
