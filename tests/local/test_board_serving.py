"""How `taskgate serve` serves the board: static files under a strict CSP, config.json for the
local sign-in, and one-time sign-in codes (never the token in a URL or the terminal)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from taskgate.local import signin
from taskgate.local.signin import CODE_TTL_S, MAX_LIVE_CODES, SignIn
from tests.support.server import Server, start


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start(tmp_path_factory.mktemp("serve") / "data")
    try:
        yield s
    finally:
        s.stop()


def _code(server: Server) -> str:
    r = httpx2.post(
        f"{server.url}/local/sign-in-link", headers={"Authorization": f"Bearer {server.admin_token}"}
    )
    assert r.status_code == 201, r.text
    assert r.json()["expires_in"] == CODE_TTL_S
    url: str = r.json()["url"]
    assert url.startswith(f"{server.url}/#sign-in=")
    return url.split("#sign-in=", 1)[1]


def test_static_files_carry_a_strict_policy(server: Server) -> None:
    page = httpx2.get(f"{server.url}/")
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    csp = page.headers["content-security-policy"]
    for directive in (
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
    ):
        assert directive in csp
    assert "unsafe" not in csp and "http" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    script = httpx2.get(f"{server.url}/js/main.js")
    assert script.headers["content-type"].split(";")[0] in ("text/javascript", "application/javascript")
    assert script.headers["content-security-policy"] == csp
    assert httpx2.get(f"{server.url}/config.json").json() == {"auth": "local"}
    assert httpx2.get(f"{server.url}/nope.js").status_code == 404
    assert httpx2.get(f"{server.url}/%2e%2e/pyproject.toml").status_code == 404
    assert httpx2.post(f"{server.url}/").status_code == 405


def test_no_file_of_the_board_names_another_origin() -> None:
    web = Path(__file__).resolve().parents[2] / "web"
    files = [p for p in web.rglob("*") if p.is_file()]
    assert files
    for path in files:
        text = path.read_text()
        for needle in ("http://", "https://", "//cdn", "<script>", "style=", ".innerHTML", "HTML(", "eval("):
            allowed = needle == "http://" and "www.w3.org/2000/svg" in text  # the SVG namespace name
            assert needle not in text or allowed, f"{path.name} contains {needle!r}"


def test_a_code_signs_in_once(server: Server) -> None:
    code = _code(server)
    r = httpx2.post(f"{server.url}/local/sign-in", json={"code": code})
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    board = r.json()["token"]
    # A board session, not the admin token: the API takes it as the admin ...
    assert board.startswith(signin.SESSION_PREFIX) and board != server.admin_token
    me = httpx2.get(f"{server.url}/api/me", headers={"Authorization": f"Bearer {board}"})
    assert me.status_code == 200 and me.json()["actor"] == "human:admin", me.text
    # ... but it mints no sign-in links
    link = httpx2.post(f"{server.url}/local/sign-in-link", headers={"Authorization": f"Bearer {board}"})
    assert link.status_code == 401
    again = httpx2.post(f"{server.url}/local/sign-in", json={"code": code})
    assert again.status_code == 401 and again.json()["code"] == "E_UNAUTHORIZED"
    assert again.json()["message"] == signin.USED  # what the page shows
    assert "taskgate board" in again.json()["hint"]
    wrong = httpx2.post(f"{server.url}/local/sign-in", json={"code": "x" * 32})
    assert wrong.json()["message"] == signin.UNKNOWN
    for body in ({"code": "x" * 32}, {"code": 7}, {}, []):
        assert httpx2.post(f"{server.url}/local/sign-in", json=body).status_code == 401
    assert httpx2.post(f"{server.url}/local/sign-in", content=b"{not json").status_code == 401
    assert httpx2.get(f"{server.url}/local/sign-in").status_code == 405


def test_the_pasted_admin_token_becomes_a_board_session_and_nothing_else_does(server: Server) -> None:
    r = httpx2.post(f"{server.url}/local/sign-in", json={"admin_token": f" {server.admin_token}\n"})
    assert r.status_code == 200
    board = r.json()["token"]
    assert board.startswith(signin.SESSION_PREFIX)
    me = httpx2.get(f"{server.url}/api/me", headers={"Authorization": f"Bearer {board}"})
    assert me.status_code == 200, me.text
    for wrong in ("tgh_wrong", board, ""):
        refused = httpx2.post(f"{server.url}/local/sign-in", json={"admin_token": wrong})
        assert refused.status_code == 401 and "token" not in refused.json()
    # a board session the server never issued is no credential
    fake = signin.SESSION_PREFIX + "x" * 43
    assert httpx2.get(f"{server.url}/api/me", headers={"Authorization": f"Bearer {fake}"}).status_code == 401


def test_a_board_session_ends_after_its_time() -> None:
    now = [0.0]
    s = SignIn("tgh_admin", clock=lambda: now[0])
    board = s.exchange("tgh_admin")
    assert board is not None and s.board_session(board)
    now[0] = signin.SESSION_TTL_S - 1
    assert s.board_session(board)
    now[0] = signin.SESSION_TTL_S
    assert not s.board_session(board)
    assert s.exchange("tgh_other") is None and not s.board_session("tgh_admin")
    sessions = [s.exchange("tgh_admin") or "" for _ in range(signin.MAX_SESSIONS + 1)]
    assert not s.board_session(sessions[0])  # the oldest signed out: at most MAX_SESSIONS at once
    assert all(s.board_session(t) for t in sessions[1:])
    assert all(len(h) == 64 for h in s._sessions)  # only hashes are kept


def test_another_origin_can_neither_use_nor_burn_a_code(server: Server) -> None:
    code = _code(server)
    r = httpx2.post(
        f"{server.url}/local/sign-in", json={"code": code}, headers={"Origin": "https://evil.example"}
    )
    assert r.status_code == 403
    ok = httpx2.post(f"{server.url}/local/sign-in", json={"code": code}, headers={"Origin": server.url})
    assert ok.status_code == 200


def test_only_the_admin_token_mints_links(server: Server) -> None:
    for headers in ({}, {"Authorization": "Bearer tgh_wrong"}, {"Authorization": server.admin_token}):
        r = httpx2.post(f"{server.url}/local/sign-in-link", headers=headers)
        assert r.status_code == 401, headers


def test_codes_expire_and_the_oldest_make_room() -> None:
    now = [1000.0]
    s = SignIn("tgh_token", clock=lambda: now[0])
    code = s.mint()
    now[0] += CODE_TTL_S - 1
    board = s.redeem(code)
    assert board is not None and s.board_session(board)
    late = s.mint()
    now[0] += CODE_TTL_S
    assert s.redeem(late) is None
    codes = [s.mint() for _ in range(MAX_LIVE_CODES + 1)]
    assert s.redeem(codes[0]) is None  # evicted: at most MAX_LIVE_CODES live at once
    last = s.redeem(codes[-1])
    assert last is not None and s.board_session(last)
    assert len(s._codes) == MAX_LIVE_CODES - 1
    assert all(len(h) == 64 for h in s._codes)  # only hashes are kept
    assert signin.SignIn("tgh_token").is_admin("tgh_token") and not s.is_admin("tgh_other")


def test_a_link_that_does_not_sign_in_says_why() -> None:
    now = [1000.0]
    s = SignIn("tgh_token", clock=lambda: now[0])
    used, late, never = s.mint(), s.mint(), "x" * 32
    assert s.redeem(used) is not None
    assert s.redeem(used) is None and s.why_not(used) == signin.USED
    now[0] += CODE_TTL_S
    assert s.redeem(late) is None and s.why_not(late) == signin.EXPIRED
    assert s.redeem(never) is None and s.why_not(never) == signin.UNKNOWN
    replaced, *_ = [s.mint() for _ in range(MAX_LIVE_CODES + 1)]
    assert s.redeem(replaced) is None and s.why_not(replaced) == signin.REPLACED
    expired_unused = s.mint()
    now[0] += CODE_TTL_S + 1
    s.mint()  # prunes it
    assert s.why_not(expired_unused) == signin.EXPIRED
    assert s.why_not(None) == signin.UNKNOWN


def test_the_banner_names_a_board_command_that_runs_where_taskgate_is_not_on_the_path(
    tmp_path: Path,
) -> None:
    # Started by its path, as the README's first command does, before `taskgate` is on the PATH.
    bare_path = "/usr/bin:/bin"
    server = start(tmp_path / "data", env={"PATH": bare_path})
    out = server.stop()
    [line] = [line for line in out.splitlines() if "prints a new one" in line]
    command = re.search(r"`([^`]+) board`", line)
    assert command is not None, line
    ran = subprocess.run(
        f"{command.group(1)} board --help",
        shell=True,
        env={**os.environ, "PATH": bare_path},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, (line, ran.stderr)
    assert "sign-in link" in ran.stdout.lower() or "usage" in ran.stdout.lower(), ran.stdout
