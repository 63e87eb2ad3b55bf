"""`taskgate serve`'s own edge (the body deadline and size limit in front of every path, the
board's endpoints, the MCP front door) answers each refusal with the error table's status for
its code (domain/errors.HTTP_STATUS) and a hint, in the REST API's shape, and changes nothing."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx2
import pytest

from taskgate.api.errors import HINTS
from taskgate.domain.errors import HTTP_STATUS, ErrorCode
from taskgate.local.gateway import MAX_BODY
from tests.support.server import Server, start

PATHS = ("/api/projects", "/mcp", "/local/sign-in", "/")  # REST, MCP, the board's sign-in, a file


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start(tmp_path_factory.mktemp("edge") / "data", env={"TASKGATE_BODY_TIMEOUT_S": "1"})
    try:
        yield s
    finally:
        s.stop()


def _as_table_says(status: int, body: dict[str, str], code: ErrorCode) -> None:
    assert body["code"] == code.value, body
    assert status == HTTP_STATUS[code], (status, body)
    assert body["message"] and body["hint"] == HINTS[code], body


def _projects(server: Server) -> object:
    status, listed = server.request("GET", "/api/projects", token=server.admin_token)
    assert status == 200
    return listed


def test_a_body_over_the_limit_is_too_large_everywhere(server: Server) -> None:
    before = _projects(server)
    headers = {"authorization": f"Bearer {server.admin_token}", "content-type": "application/json"}
    for path in PATHS:
        r = httpx2.post(f"{server.url}{path}", content=b"x" * (MAX_BODY + 1), headers=headers, timeout=30)
        _as_table_says(r.status_code, r.json(), ErrorCode.TOO_LARGE)
        assert r.json()["message"] == f"request body over {MAX_BODY} bytes"
    assert _projects(server) == before


def test_a_body_that_never_arrives_times_out_everywhere(server: Server) -> None:
    before = _projects(server)
    sockets = []
    for path in PATHS:  # all at once: each waits out the same one-second deadline
        s = socket.create_connection(("127.0.0.1", server.port), timeout=15)
        s.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
            f'Authorization: Bearer {server.admin_token}\r\nContent-Length: 100\r\n\r\n{{"na'.encode()
        )
        sockets.append(s)
    for path, s in zip(PATHS, sockets, strict=True):
        with s:
            answer = b""
            while chunk := s.recv(4096):  # the server answers, then closes the connection
                answer += chunk
        head, _, payload = answer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        assert b"\r\nconnection: close" in head.lower(), (path, head)
        _as_table_says(status, json.loads(payload), ErrorCode.TIMEOUT)
        assert json.loads(payload)["message"] == "the request body did not arrive within 1 s", path
    assert _projects(server) == before


def test_the_boards_own_refusals_follow_the_table(server: Server) -> None:
    cases = [
        ("GET", "/local/sign-in", ErrorCode.METHOD_NOT_ALLOWED, "POST"),
        ("POST", "/", ErrorCode.METHOD_NOT_ALLOWED, "GET, HEAD"),
        ("GET", "/mcp", ErrorCode.METHOD_NOT_ALLOWED, "POST"),
        ("GET", "/nope.js", ErrorCode.NOT_FOUND, None),
        ("POST", "/local/nothing-here", ErrorCode.NOT_FOUND, None),
        ("POST", "/local/sign-in-link", ErrorCode.UNAUTHORIZED, None),
    ]
    for method, path, code, allow in cases:
        headers = {"authorization": f"Bearer {server.admin_token}"} if path == "/mcp" else {}
        r = httpx2.request(method, f"{server.url}{path}", headers=headers, timeout=30)
        body = r.json()
        if path == "/mcp":  # the agents' front door gives the agents' hint
            assert (r.status_code, body["code"]) == (HTTP_STATUS[code], code.value), body
        else:
            _as_table_says(r.status_code, body, code)
        assert r.headers.get("allow") == allow, (method, path, r.headers)
    refused = httpx2.post(f"{server.url}/local/sign-in", json={"code": "x" * 32}, timeout=30)
    assert (refused.status_code, refused.json()["code"]) == (401, "E_UNAUTHORIZED")
    assert "taskgate board" in refused.json()["hint"]  # the sign-in page's own advice
