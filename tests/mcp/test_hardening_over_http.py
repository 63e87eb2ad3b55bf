"""Hardening over real HTTP against `taskgate serve`: every refusal carries a code,
poisoned text never breaks an answer after a commit, protocol versions are checked, and the
agent-facing additions (paging, claimed_by, request ids) work through the SDK client."""

from __future__ import annotations

import itertools
import json
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp.events import LEGACY, MODERN, VERSIONS, initialize, mcp_headers, rpc
from tests.mcp.live import Live, agent, run, serving
from tests.support.server import running

_n = itertools.count(1)


@pytest.fixture
def project(live: Live) -> str:
    return live.project(f"hard{next(_n)}")


@pytest.fixture
def key(live: Live, project: str) -> str:
    secret, _ = live.key(f"hard-agent{next(_n)}")
    return secret


def post(
    live: Live, body: Any, key: str | None, version: str, headers: dict[str, str] | None = None
) -> httpx2.Response:
    raw = body if isinstance(body, bytes | str) else json.dumps(body)
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    h |= mcp_headers(key, version, body if isinstance(body, dict) else None)
    h |= headers or {}
    return httpx2.post(live.mcp_url, content=raw, headers=h, timeout=30)


def poison(live: Live, pk: str, sk: str, field: str) -> None:
    """Put a lone surrogate into a stored record, as a database written before such text was
    refused can hold it (the JSON escape is plain ASCII in the file)."""
    db = sqlite3.connect(live.db_path)
    try:
        (data,) = db.execute("SELECT data FROM items WHERE pk = ? AND sk = ?", (pk, sk)).fetchone()
        record = json.loads(data)
        record[field] = "poisoned \ud800 text"
        db.execute("UPDATE items SET data = ? WHERE pk = ? AND sk = ?", (json.dumps(record), pk, sk))
        db.commit()
    finally:
        db.close()


def coded(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    body: dict[str, Any] = json.loads(result.content[0].text)
    assert body["code"].startswith("E_") and body["message"] and body["hint"], body
    assert "Error executing tool" not in body["message"]
    return body


# -- defect 1: stored text that cannot be serialised ------------------------------------------


@pytest.fixture
def own(tmp_path: Path) -> Iterator[Live]:
    """A server of the test's own: the poison it stores would break every other test's
    listing on the shared one."""
    yield from serving(tmp_path / "own")


def test_poisoned_stored_text_is_a_coded_error_and_a_claim_commits_nothing(own: Live) -> None:
    live = own
    project = live.project("poisoned")
    key, _ = live.key("poison-agent", projects=[project])
    spec = live.ok(
        "POST",
        f"/api/projects/{project}/specs",
        {"title": "S", "criteria": [{"text": "works"}], "risk": "low"},
    )
    live.ok("POST", f"/api/projects/{project}/specs/{spec['id']}/approve")
    task = live.ok(
        "POST",
        f"/api/projects/{project}/tasks",
        {"title": "T", "spec_id": spec["id"], "spec_criteria": ["AC-1.1"]},
    )["task"]
    poison(live, f"P#{project}", "PROJECT", "description")
    poison(live, f"P#{project}", f"SPEC#{spec['number']:08d}", "body")

    async def go() -> None:
        async with agent(live.mcp_url, key, LEGACY) as a:
            listed = coded(await a.call("list_projects"))
            assert listed["code"] == "E_INTERNAL"
            before = live.dump()
            claimed = coded(await a.call("claim_task", project=project, task_id=task["id"]))
            assert claimed["code"] == "E_INTERNAL"
            assert live.dump() == before  # no claim, no burnt attempt
            got = await a.ok("get_task", task_id=task["id"])
            assert got["task"]["status"] == "ready" and got["task"]["attempts"] == []

    run(go())


# -- defect 8: every refusal has a code --------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("bad_id", [{"a": 1}, [1], 1.5, None])
def test_a_request_id_that_is_not_a_string_or_integer_is_refused(
    live: Live, key: str, project: str, version: str, bad_id: Any
) -> None:
    before = live.dump()
    body = rpc(
        "tools/call",
        {"name": "create_task", "arguments": {"project": project, "title": "t", "criteria": [{"text": "x"}]}},
        version=version,
    )
    body["id"] = bad_id
    r = post(live, body, key, version)
    assert r.status_code == 400, (r.status_code, r.text)
    error = r.json()["error"]
    assert error["code"] == -32600 and r.json()["id"] is None
    assert live.dump() == before


def test_transport_refusals_answer_json_with_a_code(live: Live, key: str, project: str) -> None:
    body = rpc("tools/list", version=LEGACY)
    cases = [  # refused by the SDK's transport in plain text before: now taskgate's JSON shape
        ({"content-type": "text/plain"}, (415,), "E_NOT_JSON"),
        ({"host": "attacker.example:8765"}, (421,), "E_WRONG_HOST"),
        ({"origin": "http://attacker.example"}, (403,), "E_FORBIDDEN"),
    ]
    for headers, statuses, code in cases:
        r = post(live, body, key, LEGACY, headers)
        assert r.status_code in statuses, (headers, r.status_code, r.text)
        assert r.headers["content-type"].startswith("application/json"), (headers, r.headers)
        got = r.json()
        assert got["code"] == code and got["message"] and got["hint"], (headers, got)
    # the transport's JSON-RPC refusals keep their JSON-RPC shape, which carries a code
    r = post(live, body, key, LEGACY, {"accept": "text/html"})
    assert r.status_code == 406 and r.json()["error"]["code"] == -32600


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_prompts_and_resources_are_json_rpc_errors_with_a_code(
    live: Live, key: str, version: str
) -> None:
    async def go() -> None:
        async with agent(live.mcp_url, key, version) as a:
            with pytest.raises(MCPError) as prompt:
                await a.client.get_prompt("nope")
            assert prompt.value.error.code == -32602
            with pytest.raises(MCPError) as resource:
                await a.client.read_resource("taskgate://nope")
            assert resource.value.error.code in (-32602, -32002)

    run(go())


# -- defect 8: protocol versions ---------------------------------------------------------------


def test_older_protocol_versions_and_a_missing_header_are_refused(live: Live, key: str) -> None:
    listing = rpc("tools/list", version=LEGACY)
    for old in ("2025-06-18", "2025-03-26", "2024-11-05"):
        r = post(live, listing, key, LEGACY, {"mcp-protocol-version": old})
        assert r.status_code == 400, (old, r.status_code, r.text)
        assert "2025-11-25" in r.text
    # no header: the spec says assume 2025-03-26, which this server does not speak
    h = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {key}",
    }
    r = httpx2.post(live.mcp_url, content=json.dumps(listing), headers=h, timeout=30)
    assert r.status_code == 400 and "MCP-Protocol-Version" in r.text
    # initialize carries its version in the body; an old one is answered with ours
    old_init = initialize()
    old_init["params"]["protocolVersion"] = "2025-06-18"
    r = post(live, old_init, key, LEGACY)
    assert r.status_code == 200 and r.json()["result"]["protocolVersion"] == LEGACY
    assert post(live, listing, key, LEGACY).status_code == 200  # the supported one still works


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("sent", ["garbage", "2099-01-01", "", "x" * 10_000, "2025-11-25, 2026-07-28"])
def test_an_unknown_protocol_version_is_a_clear_invalid_request(
    live: Live, key: str, version: str, sent: str
) -> None:
    r = post(live, rpc("tools/list", version=version), key, version, {"mcp-protocol-version": sent})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == -32600
    assert error["message"].startswith("unsupported MCP-Protocol-Version ")
    assert error["message"].endswith("; this server speaks 2025-11-25, 2026-07-28")
    assert error["data"]["supported"] == ["2025-11-25", "2026-07-28"]
    assert len(r.text) < 500  # a 10 KB version is not echoed back whole


@pytest.mark.parametrize("order", [(LEGACY, MODERN), (MODERN, LEGACY), (LEGACY, LEGACY)])
def test_a_duplicated_protocol_version_header_is_refused_in_either_order(
    live: Live, key: str, order: tuple[str, str]
) -> None:
    """Sent twice over a raw socket (an HTTP client library merges or drops duplicates)."""
    body = json.dumps(rpc("tools/list", version=order[1])).encode()
    host, port = live.base.removeprefix("http://").split(":")
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {key}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: {order[0]}\r\nMCP-Protocol-Version: {order[1]}\r\n"
        f"Mcp-Method: tools/list\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), answer[:300]
    error = json.loads(payload)["error"]
    assert error["code"] == -32600
    assert error["message"] == (
        "the MCP-Protocol-Version header was sent 2 times; send it once (2025-11-25, 2026-07-28)"
    )


# -- defect 8: slow bodies are timed out -------------------------------------------------------


def test_a_request_whose_body_never_arrives_is_timed_out(tmp_path: Path) -> None:
    with running(tmp_path / "data", env={"TASKGATE_BODY_TIMEOUT_S": "1"}) as server:
        for path in ("/mcp", "/api/projects"):
            with socket.create_connection(("127.0.0.1", server.port), timeout=15) as s:
                s.sendall(
                    f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
                    f'Authorization: Bearer {server.admin_token}\r\nContent-Length: 100\r\n\r\n{{"na'.encode()
                )
                started = time.monotonic()
                answer = b""
                while chunk := s.recv(4096):  # the server answers, then closes the connection
                    answer += chunk
                assert time.monotonic() - started < 10
            answer_text = answer.decode()
            assert answer_text.startswith("HTTP/1.1 408"), answer_text
            assert '"code":"E_TIMEOUT"' in answer_text, answer_text
        status, _ = server.request("GET", "/api/health")
        assert status == 200


# -- defects 2, 8: paging, claimed_by, request ids over MCP -------------------------------------


def test_get_task_pages_notes_and_history_over_mcp(live: Live, key: str, project: str) -> None:
    task = live.ok("POST", f"/api/projects/{project}/tasks", {"title": "T", "criteria": [{"text": "x"}]})[
        "task"
    ]

    async def go() -> None:
        async with agent(live.mcp_url, key, MODERN) as a:
            for i in range(5):
                await a.ok("add_note", task_id=task["id"], body=f"note {i}")
            seen: list[str] = []
            cursor = None
            while True:
                args: dict[str, Any] = {"task_id": task["id"], "limit": 2}
                if cursor:
                    args["notes_cursor"] = cursor
                page = await a.ok("get_task", **args)
                assert len(page["notes"]) <= 2
                seen += [n["body"] for n in page["notes"]]
                cursor = page["notes_cursor"]
                if cursor is None:
                    break
            assert seen == [f"note {i}" for i in range(5)]

    run(go())


def test_list_tasks_by_claimer_and_a_retried_create_over_mcp(live: Live, project: str) -> None:
    name = f"Hard-Agent{next(_n)}"
    key, _ = live.key(name.lower(), projects=[project])

    async def go() -> None:
        async with agent(live.mcp_url, key, LEGACY) as a:
            args = {"project": project, "title": "once", "criteria": [{"text": "x"}], "request_id": "req-42"}
            first = await a.ok("create_task", **args)
            before = live.dump()
            again = await a.ok("create_task", **args)
            assert again["task"]["id"] == first["task"]["id"]
            assert live.dump() == before
            other = await a.ok("create_task", project=project, title="other", criteria=[{"text": "x"}])
            await a.ok("claim_task", project=project, task_id=first["task"]["id"], agent_id=name)
            mine = await a.ok("list_tasks", project=project, claimed_by=name)
            assert [t["id"] for t in mine["tasks"]] == [first["task"]["id"]]
            assert other["task"]["id"] not in [t["id"] for t in mine["tasks"]]

    run(go())


@pytest.mark.parametrize("version", VERSIONS)
def test_control_characters_in_any_tool_argument_are_refused_and_nothing_is_written(
    live: Live, project: str, version: str
) -> None:
    key, _ = live.key(f"ctl-agent{next(_n)}", role="architect", projects=[project])
    made = live.ok("POST", f"/api/projects/{project}/tasks", {"title": "t", "criteria": [{"text": "x"}]})
    tid = made["task"]["id"]
    line_rewrite = "innocent\x1b[2K\x1b[1Gaccept me"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("create_task", {"project": project, "title": line_rewrite, "criteria": [{"text": "x"}]}),
        (
            "create_task",
            {"project": project, "title": "t", "criteria": [{"text": "x", "verify_ref": "a\x00b"}]},
        ),
        ("create_spec", {"project": project, "title": "s", "body": "b\rc", "criteria": [{"text": "x"}]}),
        ("add_note", {"task_id": tid, "body": "note\x9b2K"}),
        ("log_decision", {"project": project, "title": "d", "body": "del\x7f"}),
        ("update_task", {"task_id": tid, "description": "\x07bell"}),
    ]

    async def go() -> None:
        async with agent(live.mcp_url, key, version) as a:
            for tool, args in calls:
                before = live.dump()
                refused = await a.refused(tool, **args)
                assert refused["code"] == "E_VALIDATION", (tool, refused)
                assert "text may not hold control characters (only tab and newline)" in refused["message"]
                assert live.dump() == before, tool
            # Tab and newline are text.
            ok = await a.ok("add_note", task_id=tid, body="line one\n\tline two")
            assert ok["body"] == "line one\n\tline two"

    run(go())
