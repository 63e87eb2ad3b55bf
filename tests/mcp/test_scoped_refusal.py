"""A key scoped to one project naming another (or one that does not exist) over MCP: one answer
for both, which names the project and sends the agent to its own projects, not to
"ask a human on the board"."""

from __future__ import annotations

from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run


def test_an_unknown_or_uncovered_project_says_so(live: Live) -> None:
    mine, other = live.project("scoped-mine"), live.project("scoped-other")
    key, _ = live.key("scoped-agent", projects=[mine])

    async def go() -> list[dict[str, object]]:
        async with agent(live.mcp_url, key, MODERN) as a:
            return [await a.refused("claim_task", project=p) for p in (other, "mitt")]

    uncovered, unknown = run(go())
    assert uncovered["code"] == unknown["code"] == "E_FORBIDDEN"
    assert uncovered["message"] == f"project {other} not found or not covered by this key"
    assert unknown["message"] == "project mitt not found or not covered by this key"
    assert uncovered["hint"] == unknown["hint"]
    assert "list_projects" in str(unknown["hint"]) and "board" not in str(unknown["hint"])
