"""The README's Python MCP client, `python -m taskgate.examples.mcp_agent`, against a real
`taskgate serve`: its dry run reads and leaves no trace in any task's history; it claims,
heartbeats, submits and releases over Streamable HTTP with the SDK's Client; every refusal is
the server's own code, message and hint in a line or two, never a traceback. And the README's
table of tool arguments is the tools' real input schema, read with tools/list."""

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
ROW = re.compile(r"^\| `(?P<tool>[a-z_]+)` \| (?P<args>.+) \|$", re.MULTILINE)
SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-data"))


def client(live: Live, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The example as the README runs it, from anywhere, with the venv's Python."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": live.base, "TASKGATE_AGENT_KEY": key}
    return subprocess.run(
        [sys.executable, "-m", "taskgate.examples.mcp_agent", *args],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _history(live: Live, tid: str) -> list[dict[str, Any]]:
    return list(live.ok("GET", f"/api/tasks/{tid}")["history"])


def test_the_readme_runs_the_example_it_ships() -> None:
    text = README.read_text()
    assert "python -m taskgate.examples.mcp_agent look my-app" in text
    assert "src/taskgate/examples/mcp_agent.py" in text
    assert "```python" not in text  # no copy of the client to drift from the one that runs


def test_the_dry_run_reads_and_leaves_no_trace(live: Live) -> None:
    live.ok("POST", "/api/projects", {"name": "dry-app", "repo": "https://example.com/dry-app.git"})
    body = {
        "title": "Add slugify",
        "criteria": [{"text": "digits are kept", "kind": "test", "verify_ref": "t.a"}],
    }
    tid = live.ok("POST", "/api/projects/dry-app/tasks", body)["task"]["id"]
    key, _ = live.key("dry-run", projects=["dry-app"])
    before = _history(live, tid)
    done = client(live, key, "look", "dry-app")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"would claim {tid} (of 1 ready); nothing was claimed",
        f"{tid}: Add slugify",
        f"  AC-{tid}.1 (test) digits are kept  `t.a`",
    ]
    assert _history(live, tid) == before
    task = live.ok("GET", f"/api/tasks/{tid}")["task"]
    assert task["status"] == "ready" and task["attempts"] == []


def test_the_example_claims_heartbeats_submits_and_releases(live: Live) -> None:
    live.ok("POST", "/api/projects", {"name": "my-app", "repo": "https://example.com/my-app.git"})
    body = {"title": "Add slugify", "criteria": [{"text": "it works"}]}
    first = live.ok("POST", "/api/projects/my-app/tasks", body)["task"]["id"]
    second = live.ok("POST", "/api/projects/my-app/tasks", body)["task"]["id"]
    key, _ = live.key("readme-client", projects=["my-app"])
    claimed = client(live, key, "claim", "my-app", "--task", first)
    assert claimed.returncode == 0, claimed.stdout + claimed.stderr
    head = claimed.stdout.splitlines()[0]
    token = re.fullmatch(rf"claimed {first}; claim token (\S+)", head)
    assert token, head
    released = client(live, key, "release", first, "--token", token.group(1), "--reason", "not mine")
    assert released.returncode == 0 and released.stdout.strip() == f"released {first}"
    [attempt] = live.ok("GET", f"/api/tasks/{first}")["task"]["attempts"]
    assert (attempt["ending"], attempt["used"]) == ("released", False), attempt
    actions = [e["action"] for e in _history(live, first)]
    assert {"claim", "release"} <= set(actions), actions

    again = client(live, key, "claim", "my-app", "--task", second)
    token2 = again.stdout.split("claim token ", 1)[1].split()[0]
    sent = client(
        live, key, "submit", second, "--token", token2, "--commit", SHA, "--evidence", "its tests pass"
    )
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert sent.stdout.strip().startswith(f"submitted {second}: it is ")
    assert live.ok("GET", f"/api/tasks/{second}")["task"]["status"] != "in_progress"


def test_every_refusal_is_the_servers_own_words(live: Live) -> None:
    key, _ = live.key("refusals", projects=["my-app"])
    wrong = client(live, "tga_not-a-key", "look", "my-app")
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert wrong.stderr.splitlines() == [
        "error E_UNAUTHORIZED: unknown key",
        "hint: Send a valid key as 'Authorization: Bearer <key>'.",
    ]
    elsewhere = client(live, key, "claim", "not-mine")
    assert elsewhere.returncode == 1
    assert elsewhere.stderr.startswith(
        "error E_FORBIDDEN: project not-mine not found or not covered by this key\nhint: "
    )
    stale = client(live, key, "release", "my-app-1", "--token", "tgc_nope")
    assert stale.returncode == 1 and stale.stderr.startswith("error E_STALE_CLAIM: ")
    for done in (wrong, elsewhere, stale):
        assert "Traceback" not in done.stderr and "ExceptionGroup" not in done.stderr
        assert len(done.stderr.splitlines()) == 2


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
