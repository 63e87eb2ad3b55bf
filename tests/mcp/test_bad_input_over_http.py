"""Bad requests to /mcp on a real server: each gets a clear error, and nothing is written.

Every request below carries (or wraps) a create_task call, so a guard that let it through
would leave a task in the store; each test compares the whole store before and after.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp.events import LEGACY, MODERN, VERSIONS, initialize, mcp_headers, rpc
from tests.mcp.live import Live, agent, run

_n = itertools.count(1)


@pytest.fixture
def project(live: Live) -> str:
    return live.project(f"bad{next(_n)}")


@pytest.fixture
def key(live: Live, project: str) -> str:
    secret, _ = live.key(f"bad-agent{next(_n)}")
    return secret


def create_task(project: str, version: str, **extra: Any) -> dict[str, Any]:
    arguments = {"project": project, "title": "should not exist", "criteria": [{"text": "x"}], **extra}
    return rpc("tools/call", {"name": "create_task", "arguments": arguments}, version=version)


def post(
    live: Live, body: bytes | str | Any, key: str | None, version: str, headers: dict[str, str] | None = None
) -> httpx2.Response:
    raw = body if isinstance(body, bytes | str) else json.dumps(body)
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    h |= mcp_headers(key, version, body if isinstance(body, dict) else None)
    h |= headers or {}
    return httpx2.post(live.mcp_url, content=raw, headers=h, timeout=30)


@pytest.mark.parametrize("version", VERSIONS)
def test_malformed_json(live: Live, key: str, project: str, version: str) -> None:
    before = live.dump()
    r = post(live, '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {', key, version)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32700  # JSON-RPC parse error
    assert "Parse error" in r.json()["error"]["message"]
    assert live.dump() == before


@pytest.mark.parametrize("version", VERSIONS)
def test_a_json_rpc_batch_is_refused_whole(live: Live, key: str, project: str, version: str) -> None:
    before = live.dump()
    r = post(live, [create_task(project, version), create_task(project, version)], key, version)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] in (-32600, -32602)  # invalid request (2026) / invalid params (2025 SDK)
    assert r.json()["id"] is None
    assert live.dump() == before


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_tool(live: Live, key: str, project: str, version: str) -> None:
    async def go() -> None:
        async with agent(live.mcp_url, key, version) as a:
            with pytest.raises(MCPError) as caught:
                await a.call("delete_everything", project=project)
            assert caught.value.error.code == -32602
            assert "Unknown tool: delete_everything" in caught.value.error.message

    before = live.dump()
    run(go())
    assert live.dump() == before


@pytest.mark.parametrize("version", VERSIONS)
def test_wrong_argument_types(live: Live, key: str, project: str, version: str) -> None:
    cases: list[tuple[str, dict[str, Any], str]] = [
        (
            "create_task",
            {"project": project, "title": "t", "criteria": [{"text": "x"}], "priority": "high"},
            "priority",
        ),
        ("create_task", {"project": project, "title": "t", "criteria": "make it work"}, "criteria"),
        (
            "create_task",
            {"project": project, "title": "t", "criteria": [{"text": "x", "kind": "vibes"}]},
            "kind",
        ),
        ("create_task", {"project": 42, "title": "t", "criteria": [{"text": "x"}]}, "project"),
        ("create_task", {"title": "t", "criteria": [{"text": "x"}]}, "project"),
        (
            "create_task",
            {"project": project, "title": "t", "criteria": [{"text": "x"}], "owner": "me"},
            "owner",
        ),
        ("claim_task", {"project": project, "lease_minutes": "soon"}, "lease_minutes"),
        ("claim_task", {"project": project, "lease_minutes": 600}, "lease_minutes"),
        ("claim_task", {"project": "not-this-one", "task_id": f"{project}-1"}, "not not-this-one"),
        ("claim_task", {}, "a project"),
        ("get_task", {"task_id": "not a task id"}, "task_id"),
        (
            "create_task",
            {"project": project, "title": "t", "criteria": [{"text": "x", "verify_rfe": "a.b"}]},
            "criteria.0.verify_rfe: unknown key 'verify_rfe'; did you mean 'verify_ref'?",
        ),
    ]

    async def go() -> None:
        async with agent(live.mcp_url, key, version) as a:
            for tool, arguments, field in cases:
                body = await a.refused(tool, **arguments)
                assert body["code"] == "E_VALIDATION", (tool, arguments, body)
                assert field in body["message"], (field, body)

    before = live.dump()
    run(go())
    assert live.dump() == before


def test_oversized_body_is_413(live: Live, key: str, project: str) -> None:
    before = live.dump()
    big = create_task(project, LEGACY, description="x" * (1024 * 1024 + 1))
    r = post(live, big, key, LEGACY)
    assert r.status_code == 413
    assert live.dump() == before
    # Just under the limit is served (and refused by the tool's own length limit, not the transport).
    r = post(live, create_task(project, LEGACY, description="x" * 200_000), key, LEGACY)
    assert r.status_code == 200
    assert json.loads(r.json()["result"]["content"][0]["text"])["code"] == "E_VALIDATION"
    assert live.dump() == before


@pytest.mark.parametrize("version", VERSIONS)
def test_wrong_accept_is_406(live: Live, key: str, project: str, version: str) -> None:
    before = live.dump()
    for accept in ["text/html", "text/event-stream"]:
        r = post(live, create_task(project, version), key, version, {"accept": accept})
        assert r.status_code == 406, (accept, r.status_code, r.text)
    assert live.dump() == before


def test_wrong_content_type_is_refused(live: Live, key: str, project: str) -> None:
    before = live.dump()
    r = post(live, create_task(project, LEGACY), key, LEGACY, {"content-type": "text/plain"})
    assert r.status_code in (400, 415)
    assert live.dump() == before


@pytest.mark.parametrize("version", VERSIONS)
def test_missing_invalid_and_revoked_keys_are_401(live: Live, project: str, version: str) -> None:
    revoked, revoked_id = live.key(f"revoked{next(_n)}")
    live.ok("POST", f"/api/keys/{revoked_id}/revoke")
    before = live.dump()
    for key in [None, "tga_" + "A" * 32, "not-even-a-key", revoked]:
        r = post(live, create_task(project, version), key, version)
        assert r.status_code == 401, (key, r.status_code, r.text)
        assert r.headers["www-authenticate"].startswith("Bearer")
        body = r.json()
        assert body["code"] == "E_UNAUTHORIZED"
        assert body["message"] and body["hint"]
    assert live.dump() == before

    async def go() -> None:  # a real client learns it too, on its first request
        with pytest.raises(ExceptionGroup) as caught:
            async with agent(live.mcp_url, revoked, version) as a:
                await a.call("list_projects")
        assert caught.value.subgroup(lambda e: isinstance(e, MCPError)) is not None

    run(go())
    assert live.dump() == before


@pytest.mark.parametrize("version", VERSIONS)
def test_a_key_in_use_is_refused_from_the_moment_its_revoke_answers(
    live: Live, project: str, version: str
) -> None:
    """The served app remembers keys it authenticated (service/key_cache.py): a revoke must
    still end a busy key's access at once, not when the memory lapses."""
    secret, key_id = live.key(f"busy{next(_n)}")
    listed = rpc("tools/call", {"name": "list_projects", "arguments": {}}, version=version)
    for _ in range(3):
        r = post(live, listed, secret, version)
        assert r.status_code == 200 and r.json()["result"]["isError"] is False, r.text
    live.ok("POST", f"/api/keys/{key_id}/revoke")
    r = post(live, listed, secret, version)
    assert r.status_code == 401, r.text
    assert r.json()["code"] == "E_UNAUTHORIZED" and "revoked" in r.json()["message"]


@pytest.mark.parametrize("version", VERSIONS)
def test_host_not_allowed_is_421_and_origin_not_allowed_is_403(
    live: Live, key: str, project: str, version: str
) -> None:
    before = live.dump()
    r = post(live, create_task(project, version), key, version, {"host": "attacker.example:8765"})
    assert r.status_code == 421
    r = post(live, create_task(project, version), key, version, {"origin": "http://attacker.example"})
    assert r.status_code == 403
    assert live.dump() == before
    # A local page's Origin is allowed (the default allowed origins are the loopback ones).
    r = post(
        live,
        create_task(project, version, title="from a local page"),
        key,
        version,
        {"origin": "http://localhost:3000"},
    )
    assert r.status_code == 200
    assert live.dump() != before


def test_humans_and_verifiers_are_refused(live: Live, project: str) -> None:
    verifier, _ = live.key(f"ci{next(_n)}", kind="verifier", verifier_kind="local")
    before = live.dump()
    for token in [live.admin_token, verifier]:
        r = post(live, create_task(project, LEGACY), token, LEGACY)
        assert r.status_code == 403
        assert r.json()["code"] == "E_FORBIDDEN"
    assert live.dump() == before


def test_get_and_delete_are_405(live: Live, key: str) -> None:
    for method in ["GET", "DELETE"]:
        r = httpx2.request(
            method,
            live.mcp_url,
            headers={"authorization": f"Bearer {key}", "accept": "text/event-stream"},
            timeout=30,
        )
        assert r.status_code == 405
        assert r.headers["allow"] == "POST"


def test_unsupported_protocol_version(live: Live, key: str, project: str) -> None:
    before = live.dump()
    body = create_task(project, MODERN)
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
    r = post(live, body, key, MODERN, {"mcp-protocol-version": "2099-01-01"})
    assert r.status_code == 400
    assert "2026-07-28" in r.text  # the error names what the server supports
    assert live.dump() == before


def test_initialize_answers_with_the_servers_identity(live: Live, key: str) -> None:
    r = post(live, initialize(), key, LEGACY)
    assert r.status_code == 200
    result = r.json()["result"]
    assert result["protocolVersion"] == LEGACY
    assert result["serverInfo"]["name"] == "taskgate"
    assert "claim_task" in result["instructions"]
