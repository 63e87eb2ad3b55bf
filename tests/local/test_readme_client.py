"""The README's Python MCP client, as written, against a real `taskgate serve`: it claims,
heartbeats and releases over Streamable HTTP with the SDK's Client; and its table of tool
arguments is the tools' real input schema, read with tools/list."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run, serving

README = Path(__file__).resolve().parents[2] / "README.md"
PYTHON_BLOCK = re.compile(r"```python\n(?P<body>.*?)```", re.DOTALL)
ROW = re.compile(r"^\| `(?P<tool>[a-z_]+)` \| (?P<args>.+) \|$", re.MULTILINE)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-data"))


def _example() -> str:
    [block] = [m.group("body") for m in PYTHON_BLOCK.finditer(README.read_text())]
    return block


def test_the_readmes_python_client_claims_heartbeats_and_releases(live: Live, tmp_path: Path) -> None:
    live.ok("POST", "/api/projects", {"name": "my-app", "repo": "https://example.com/my-app.git"})
    created = live.ok(
        "POST", "/api/projects/my-app/tasks", {"title": "Add slugify", "criteria": [{"text": "it works"}]}
    )
    tid = created["task"]["id"]
    key, _ = live.key("readme-client", projects=["my-app"])
    script = tmp_path / "client.py"
    script.write_text(_example())
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": live.base, "TASKGATE_AGENT_KEY": key}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"claimed {tid} - Add slugify"
    detail = live.ok("GET", f"/api/tasks/{tid}")
    assert detail["task"]["status"] == "ready"  # released: no attempt used
    actions = [e["action"] for e in detail["history"]]
    assert {"claim", "release"} <= set(actions), actions
    [attempt] = detail["task"]["attempts"]
    assert (attempt["ending"], attempt["used"]) == ("released", False), attempt

    # A refusal ends the script with the refusal's JSON: a wrong key is no key.
    env["TASKGATE_AGENT_KEY"] = "tga_not-a-key"
    refused = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert refused.returncode != 0
    assert "claimed" not in refused.stdout


def test_the_readmes_tool_table_names_each_tools_real_arguments(live: Live) -> None:
    text = README.read_text()
    table = text[text.index("The tools an executor uses") :]
    table = table[: table.index("\n\n", table.index("| tool |"))]
    rows = {m["tool"]: m["args"] for m in ROW.finditer(table)}
    assert len(rows) >= 8, rows
    key, _ = live.key("readme-table", projects=[])

    async def schemas() -> dict[str, dict[str, Any]]:
        async with agent(live.mcp_url, key, MODERN) as a:
            listed = await a.client.list_tools()
            return {t.name: t.input_schema for t in listed.tools}

    tools = run(schemas())
    for tool, args in rows.items():
        assert tool in tools, tool
        schema = tools[tool]
        required = set(schema.get("required", []))
        properties = set(schema["properties"]) - {"agent_id"}  # identity comes from the key
        named = set(re.findall(r"`([a-z_]+)`", args.split(";")[0] if ";" in args else args))
        optional = set(re.findall(r"`([a-z_]+)`", args.split(";")[1])) if ";" in args else set()
        named -= {"other", "dependency", "spec_gap", "design_conflict", "pass", "fail"}  # values
        optional -= {"pass", "fail"}
        assert named | optional == properties, (tool, named | optional, properties)
        if tool != "claim_task":  # `project`, or `task_id`: one of the two
            assert required == named, (tool, required, named)
