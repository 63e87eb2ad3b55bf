"""One front door, two paths: the same requests through `taskgate serve` (the MCP app served
directly, over real HTTP) and through the Lambda handler (an API Gateway v2 event, in this
process), on the same SQLite file, so the same keys exist on both. Every case must come back
with the same status, error code and challenge on both, and with the status and code we expect.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from taskgate import runtime
from taskgate.mcp.handler import handler
from taskgate.service import secrets
from tests.mcp.events import LEGACY, MODERN, VERSIONS, mcp_headers, rpc, v2_event
from tests.mcp.live import Live

_n = itertools.count(1)


@dataclass(frozen=True)
class Outcome:
    status: int
    code: str | int | None  # taskgate's error code, a JSON-RPC error code, or None on success
    challenge: str | None = None
    allow: str | None = None
    author: str | None = None  # who the server says made the note, on a served add_note


def _outcome(status: int, headers: dict[str, str], raw: bytes) -> Outcome:
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    code: str | int | None = None
    author = None
    if isinstance(body, dict):
        if "code" in body:
            code = body["code"]
        elif "error" in body:
            code = body["error"]["code"]
        elif body.get("result", {}).get("isError"):
            code = json.loads(body["result"]["content"][0]["text"])["code"]
        elif "structuredContent" in body.get("result", {}):
            author = body["result"]["structuredContent"].get("author")
    elif status >= 400:
        code = raw.decode("utf-8", "replace")[:80]  # an uncoded refusal: shows up in the comparison
    return Outcome(status, code, headers.get("www-authenticate"), headers.get("allow"), author)


Send = Callable[[str, bytes, dict[str, str]], Outcome]


@pytest.fixture
def paths(live: Live, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Send]]:
    """`direct`: HTTP to the served app. `lambda`: the Lambda handler with the environment a
    deployed function would have, pointed at the live server's SQLite file."""
    monkeypatch.setenv("TASKGATE_STORE", "sqlite")
    monkeypatch.setenv("TASKGATE_DB", str(live.db_path))
    monkeypatch.setenv("TASKGATE_ADMIN_TOKEN_HASH", secrets.digest(live.admin_token))
    for name in ("TASKGATE_ALLOWED_HOSTS", "TASKGATE_ALLOWED_ORIGINS", "TASKGATE_TABLE"):
        monkeypatch.delenv(name, raising=False)
    runtime.reset()
    host = live.base.removeprefix("http://")

    def direct(method: str, body: bytes, headers: dict[str, str]) -> Outcome:
        r = httpx2.request(method, live.mcp_url, content=body or None, headers=headers, timeout=30)
        return _outcome(r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.content)

    def via_lambda(method: str, body: bytes, headers: dict[str, str]) -> Outcome:
        event = v2_event(body or None, method=method, headers={"host": host, **headers})
        r = handler(event, None)
        raw = r.get("body") or ""
        payload = base64.b64decode(raw) if r.get("isBase64Encoded") else raw.encode()
        return _outcome(r["statusCode"], {k.lower(): v for k, v in r["headers"].items()}, payload)

    try:
        yield {"direct": direct, "lambda": via_lambda}
    finally:
        runtime.reset()


def _same(paths: dict[str, Send], method: str, body: Any, headers: dict[str, str]) -> Outcome:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else b""
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    got = {name: send(method, raw, {**base, **headers}) for name, send in paths.items()}
    assert got["direct"] == got["lambda"], got
    return got["direct"]


def _note(project_task: str, version: str, text: str = "hello") -> dict[str, Any]:
    return rpc(
        "tools/call",
        {"name": "add_note", "arguments": {"task_id": project_task, "body": text}},
        version=version,
    )


@pytest.fixture
def task_id(live: Live) -> str:
    project = live.project(f"door{next(_n)}")
    out = live.ok("POST", f"/api/projects/{project}/tasks", {"title": "t", "criteria": [{"text": "x"}]})
    return str(out["task"]["id"])


@pytest.mark.parametrize("version", VERSIONS)
def test_a_served_call_names_the_same_caller_on_both_paths(
    live: Live, paths: dict[str, Send], task_id: str, version: str
) -> None:
    key, _ = live.key(f"door-agent{next(_n)}")
    body = _note(task_id, version)
    out = _same(paths, "POST", body, mcp_headers(key, version, body))
    assert out.status == 200 and out.code is None
    assert out.author is not None and out.author.startswith("agent:door-agent")


@pytest.mark.parametrize("version", VERSIONS)
def test_bad_credentials_are_refused_alike(
    live: Live, paths: dict[str, Send], task_id: str, version: str
) -> None:
    revoked, revoked_id = live.key(f"door-gone{next(_n)}")
    live.ok("POST", f"/api/keys/{revoked_id}/revoke")
    verifier, _ = live.key(f"door-ci{next(_n)}", kind="verifier", verifier_kind="local")
    body = _note(task_id, version)
    before = live.dump()
    cases: list[tuple[str | None, int, str, str | None]] = [
        (None, 401, "E_UNAUTHORIZED", "Bearer"),
        ("tga_" + "A" * 32, 401, "E_UNAUTHORIZED", 'Bearer error="invalid_token"'),
        ("tga_0123456789ab_" + "B" * 32, 401, "E_UNAUTHORIZED", 'Bearer error="invalid_token"'),
        (revoked, 401, "E_UNAUTHORIZED", 'Bearer error="invalid_token"'),
        ("tgh_not-the-admin-token", 401, "E_UNAUTHORIZED", 'Bearer error="invalid_token"'),
        (live.admin_token, 403, "E_FORBIDDEN", None),
        (verifier, 403, "E_FORBIDDEN", None),
    ]
    for key, status, code, challenge in cases:
        out = _same(paths, "POST", body, mcp_headers(key, version, body))
        assert (out.status, out.code, out.challenge) == (status, code, challenge), key
    assert live.dump() == before


@pytest.mark.parametrize("version", VERSIONS)
def test_an_oversized_body_is_refused_alike(
    live: Live, paths: dict[str, Send], task_id: str, version: str
) -> None:
    key, _ = live.key(f"door-big{next(_n)}")
    big = _note(task_id, version, "x" * (1024 * 1024))
    before = live.dump()
    out = _same(paths, "POST", big, mcp_headers(key, version, big))
    assert (out.status, out.code) == (413, "E_TOO_LARGE")
    assert live.dump() == before


def test_the_limit_counts_the_bytes_that_arrive(live: Live, task_id: str) -> None:
    """A chunked body (no Content-Length to go by) over the limit is refused as it streams in.
    (Only the served path: on Lambda, API Gateway hands over whole bodies.)"""
    key, _ = live.key(f"door-chunked{next(_n)}")
    big = json.dumps(_note(task_id, LEGACY, "x" * (1024 * 1024))).encode()

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(big), 64 * 1024):
            yield big[i : i + 64 * 1024]

    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    before = live.dump()
    r = httpx2.post(
        live.mcp_url, content=chunks(), headers={**headers, **mcp_headers(key, LEGACY)}, timeout=30
    )
    assert "content-length" not in r.request.headers
    assert (r.status_code, r.json()["code"]) == (413, "E_TOO_LARGE")
    assert live.dump() == before


def test_a_wrong_protocol_version_is_refused_alike(live: Live, paths: dict[str, Send], task_id: str) -> None:
    key, _ = live.key(f"door-version{next(_n)}")
    before = live.dump()
    for version in ["2099-01-01", "not-a-version"]:
        body = _note(task_id, MODERN)
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = version
        out = _same(paths, "POST", body, {**mcp_headers(key, MODERN, body), "mcp-protocol-version": version})
        assert out.status == 400 and isinstance(out.code, int), (version, out)
    assert live.dump() == before


@pytest.mark.parametrize("version", VERSIONS)
def test_transport_refusals_are_alike(live: Live, paths: dict[str, Send], task_id: str, version: str) -> None:
    key, _ = live.key(f"door-transport{next(_n)}")
    body = _note(task_id, version)
    headers = mcp_headers(key, version, body)
    before = live.dump()
    for method in ["GET", "DELETE"]:
        out = _same(paths, method, None, {"authorization": f"Bearer {key}"})
        assert (out.status, out.code, out.allow) == (405, "E_METHOD_NOT_ALLOWED", "POST")
    assert _same(paths, "POST", body, {**headers, "host": "attacker.example:80"}).status == 421
    assert _same(paths, "POST", body, {**headers, "origin": "http://attacker.example"}).status == 403
    assert _same(paths, "POST", body, {**headers, "accept": "text/html"}).status == 406
    out = _same(paths, "POST", b'{"jsonrpc": "2.0", "id": 1,', headers)
    assert (out.status, out.code) == (400, -32700)
    assert live.dump() == before
    assert LEGACY in VERSIONS
