"""The tool catalog an agent sees (tools/list): every tool an agent is given, each with a
description a model can act on and exact, described schemas."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp_types import Tool

from taskgate.mcp.server import server

DESIGN_TOOLS = {
    "list_projects", "get_project", "create_spec", "update_spec", "approve_spec", "get_spec", "list_specs",
    "create_task", "update_task", "get_task", "list_tasks", "get_next_tasks", "claim_task", "heartbeat",
    "release_task", "report_failure", "escalate", "submit_task", "get_task_brief", "log_decision",
    "list_decisions", "search", "add_note", "set_execution_defaults", "accept_tasks",
}  # fmt: skip
READ_ONLY = {
    "list_projects", "get_project", "get_spec", "list_specs", "get_task", "list_tasks", "get_next_tasks",
    "get_task_brief", "list_decisions", "search",
}  # fmt: skip


@pytest.fixture(scope="module")
def tools() -> dict[str, Tool]:
    return {t.name: t for t in asyncio.run(server.list_tools())}


def test_exactly_the_designed_tools(tools: dict[str, Tool]) -> None:
    assert set(tools) == DESIGN_TOOLS


def _undescribed(schema: dict[str, Any]) -> list[str]:
    """Properties of an input schema that carry no description."""
    return [name for name, prop in schema.get("properties", {}).items() if not prop.get("description")]


@pytest.mark.parametrize("name", sorted(DESIGN_TOOLS))
def test_each_tool_is_described_for_a_newcomer(tools: dict[str, Tool], name: str) -> None:
    tool = tools[name]
    assert tool.description and len(tool.description) > 80, name
    assert tool.title
    assert _undescribed(tool.input_schema) == []
    assert tool.output_schema is not None and tool.output_schema["type"] == "object"
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is (name in READ_ONLY)
    assert tool.annotations.destructive_hint is False


def test_the_run_tools_say_what_to_do_next(tools: dict[str, Tool]) -> None:
    claim = tools["claim_task"].description or ""
    assert "claim_token" in claim and "heartbeat" in claim.lower() and "lease" in claim
    assert "STOP" in (tools["submit_task"].description or "")
    for name in ["heartbeat", "release_task", "report_failure", "escalate", "submit_task"]:
        assert "claim_token" in tools[name].input_schema["required"]
    assert "E_IDENTITY_MISMATCH" in tools["claim_task"].input_schema["properties"]["agent_id"]["description"]


def test_the_catalog_says_claim_task_without_a_task_id_is_how_work_starts(tools: dict[str, Tool]) -> None:
    """Agents that list tasks and claim the first collide; the tools steer them to claim_task."""
    claim = tools["claim_task"]
    assert (claim.description or "").startswith("Start work: claim_task(project)")
    assert "required" not in claim.input_schema  # project or task_id: either names the project
    assert "claim_task(project)" in (tools["get_next_tasks"].description or "")
    assert "claim_task(project)" in (tools["list_projects"].description or "")
    assert "claim_task(project)" in (server.instructions or "")
    assert "get_next_tasks(project) -> claim_task" not in (server.instructions or "")


def test_enumerations_are_exact_in_the_schema(tools: dict[str, Tool]) -> None:
    schema = tools["report_failure"].input_schema
    kind = schema["properties"]["kind"]
    target = schema["$defs"][kind["$ref"].split("/")[-1]] if "$ref" in kind else kind
    assert set(target["enum"]) == {"dependency", "spec_gap", "design_conflict", "other"}
    lease = tools["claim_task"].input_schema["properties"]["lease_minutes"]["anyOf"][0]
    assert (lease["minimum"], lease["maximum"]) == (1, 120)
    assert tools["get_task"].input_schema["properties"]["task_id"]["pattern"]


def test_no_output_schema_exposes_claim_secrets(tools: dict[str, Tool]) -> None:
    for tool in tools.values():
        assert "token_hash" not in str(tool.output_schema), tool.name
        assert "key_hash" not in str(tool.output_schema), tool.name


def test_update_task_status_offers_every_place_a_human_move_goes(tools: dict[str, Tool]) -> None:
    """The status a delegated update_task may ask for: exactly the targets of the lifecycle
    table's human rows, each explained to a model that has never seen taskgate."""
    from taskgate.domain.lifecycle import TABLE, Who

    targets = {m.target.value for m in TABLE if m.who is Who.HUMAN}
    prop = tools["update_task"].input_schema["properties"]["status"]
    enum = next(o for o in prop["anyOf"] if "enum" in o)["enum"]
    assert set(enum) == targets
    for target in targets:
        assert f"'{target}'" in prop["description"], target
    description = tools["update_task"].description or ""
    for needed in ("on_behalf_of", "E_SELF_ACCEPT", "E_FORBIDDEN", "report_failure(kind='spec_gap')"):
        assert needed in description, needed
    for name in ("criteria", "spec_criteria"):
        assert (
            "fixed once work can start"
            in tools["update_task"].input_schema["properties"][name]["description"]
        )
