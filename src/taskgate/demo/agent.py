"""The demo's agent: a real MCP client (the `mcp` SDK's Client over Streamable HTTP) with its
own executor key, doing what any agent does: claim, work, submit. The work itself is a git
commit on a branch of the demo repository, made by the callback the tour passes in."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

PROTOCOL = "2026-07-28"


class AgentError(Exception):
    pass


async def _attempt(
    url: str, key: str, project: str, work: Callable[[str, dict[str, Any]], str]
) -> dict[str, Any]:
    # Imported here: the MCP client is slow to import and only the demo needs it.
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http), mode=PROTOCOL) as client:

        async def call(tool: str, **arguments: Any) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            if result.is_error or result.structured_content is None:
                text = result.content[0].text if result.content and result.content[0].type == "text" else ""
                raise AgentError(f"{tool}: {text}")
            return dict(result.structured_content)

        claimed = await call("claim_task", project=project)
        brief = claimed["brief"]
        task_id = str(claimed["task_id"])
        sha = work(task_id, brief)
        submitted = await call(
            "submit_task",
            task_id=task_id,
            claim_token=claimed["claim_token"],
            commit_sha=sha,
            evidence="implemented on branch " + task_id + "; tests written for it",
        )
        return {"task_id": task_id, "brief": brief, "commit_sha": sha, "submitted": submitted}


def attempt(url: str, key: str, project: str, work: Callable[[str, dict[str, Any]], str]) -> dict[str, Any]:
    """Claim the project's best ready task, run `work(task_id, brief)` (it returns the commit),
    submit that commit. Returns what the agent saw."""
    return asyncio.run(_attempt(url, key, project, work))
