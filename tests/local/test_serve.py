"""`taskgate serve` as a user runs it: a real subprocess, real HTTP, a real SQLite file."""

from __future__ import annotations

import http.client
import signal
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.server import TASKGATE, port_file, running


def test_serve_starts_answers_health_and_writes_the_admin_token_0600(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(data) as server:
        status, body = server.request("GET", "/api/health")
        assert status == 200 and body["status"] == "ok"
        token_file = data / "admin-token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert server.admin_token.startswith("tgh_")
        assert (data / "taskgate.db").is_file()
        out = server.stop()
    assert f"{server.url}/mcp" in out and str(token_file) in out and "taskgate stopped" in out


def test_unauthenticated_requests_get_401(tmp_path: Path) -> None:
    with running(tmp_path / "d") as server:
        status, body = server.request("GET", "/api/projects")
        assert status == 401 and body["code"] == "E_UNAUTHORIZED"
        status, body = server.request("GET", "/api/projects", token="tgh_not-the-token")
        assert status == 401


def test_sigterm_loses_no_acknowledged_write(tmp_path: Path) -> None:
    """Writers hammer the server; SIGTERM arrives mid-stream; every write that got a 2xx is
    there after a restart on the same data dir."""
    data = tmp_path / "d"
    acknowledged: list[str] = []
    lock = threading.Lock()
    with running(data) as server:
        token = server.admin_token
        stop = threading.Event()

        def writer(n: int) -> None:
            i = 0
            while not stop.is_set() and i < 200:
                name = f"p{n}-{i}"
                try:
                    status, _ = server.request(
                        "POST", "/api/projects", {"name": name, "repo": "/r"}, token=token
                    )
                except OSError:
                    return
                if status in (200, 201):
                    with lock:
                        acknowledged.append(name)
                i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        while len(acknowledged) < 20:
            threading.Event().wait(0.02)
        server.proc.send_signal(signal.SIGTERM)
        server.proc.communicate(timeout=30)
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert server.proc.returncode == 0
    with running(data) as again:
        status, body = again.request("GET", "/api/projects", token=again.admin_token)
        assert status == 200
        names = {p["name"] for p in (body["items"] if isinstance(body, dict) else body)}
        missing = sorted(set(acknowledged) - names)
        assert missing == [], f"{len(missing)} acknowledged writes lost"


def test_the_admin_token_survives_restarts(tmp_path: Path) -> None:
    data = tmp_path / "d"
    with running(data) as server:
        first = server.admin_token
    with running(data) as server:
        assert server.admin_token == first
        status, _ = server.request("GET", "/api/projects", token=first)
        assert status == 200


def test_cli_creates_a_project_and_keys_against_the_server(tmp_path: Path) -> None:
    import json

    with running(tmp_path / "d") as server:
        r = server.script("project", "create", "demo", "--repo", "https://example.com/repo.git", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["name"] == "demo"
        r = server.script(
            "key", "create", "agent", "bob", "--role", "architect", "--project", "demo", "--json"
        )
        assert r.returncode == 0, r.stderr
        minted = json.loads(r.stdout)
        assert minted["key"].startswith("tga_") and minted["credential"]["role"] == "architect"
        r = server.cli("key", "list", "--json")
        listed = json.loads(r.stdout)
        items = listed["items"] if isinstance(listed, dict) else listed
        assert [k["id"] for k in items] == [minted["credential"]["id"]]
        assert minted["key"] not in r.stdout  # never shown again
        r = server.script("key", "revoke", minted["credential"]["id"], "--json")
        assert r.returncode == 0, r.stderr
        r = server.script("project", "create", "Bad Name", "--repo", "https://example.com/r.git", "--json")
        # refused by the CLI's check before anything is sent (exit 2), with the server's code
        assert r.returncode == 2 and json.loads(r.stdout)["error"]["code"] == "E_VALIDATION"
        r = server.cli("mcp-config", "--key", minted["key"], "--json")
        cfg = json.loads(r.stdout)
        assert cfg["claude"].startswith(f"claude mcp add --transport http taskgate {server.url}/mcp")


def test_port_0_binds_a_free_port_prints_it_and_writes_it_to_the_port_file(tmp_path: Path) -> None:
    """`--port 0 --port-file F`: the server binds a port the system picks, says it on its first
    line, serves on it (the admin's own token works there) and writes it to F."""
    data = tmp_path / "data"
    with running(data) as server:  # tests.support.server starts every server this way
        assert int(port_file(data).read_text()) == server.port > 0
        status, _ = server.request("GET", "/api/projects", token=server.admin_token)
        assert status == 200
        out = server.stop()
    assert out.splitlines()[0] == f"taskgate serving on http://127.0.0.1:{server.port}"


def test_a_port_already_taken_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [TASKGATE, "serve", "--data-dir", str(tmp_path / "d"), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert done.stderr.strip() == f"taskgate serve: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert "Traceback" not in done.stdout + done.stderr


def test_the_connections_serve_accepts_have_nagle_off() -> None:
    """The listening socket `taskgate serve` binds, served by uvicorn as serve serves it: the
    connection it accepts has TCP_NODELAY set, so an answer written in two sends (headers, then
    body) goes out at once instead of waiting for the client to acknowledge the first."""
    import uvicorn

    from taskgate.local.serve import bind

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]})
    thread.start()
    try:
        with socket.create_connection(sock.getsockname()[:2], timeout=30) as client:
            client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = b""
            while not answer.endswith(b"ok"):
                answer += client.recv(4096)
            assert answer.startswith(b"HTTP/1.1 200")
            [accepted] = [
                c.transport.get_extra_info("socket")
                for c in list(server.server_state.connections)
                if c.transport.get_extra_info("peername") == client.getsockname()
            ]
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def test_a_keep_alive_connection_is_answered_without_waiting_for_the_delayed_ack(tmp_path: Path) -> None:
    """With Nagle's algorithm on, every answer on a keep-alive connection waits for the client's
    delayed ACK of its first send: Linux holds that ACK 40 ms at the least, so no request can
    come back sooner. With it off, /api/health takes a millisecond or two; the fastest of 20
    must be under the floor (it fails only if all 20 are slower than 40 ms)."""
    with running(tmp_path / "d") as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        seconds: list[float] = []
        for i in range(25):  # the first 5: the kernel acknowledges a new connection at once
            started = time.perf_counter()
            conn.request("GET", "/api/health")
            response = conn.getresponse()
            assert response.status == 200 and b'"ok"' in response.read()
            if i >= 5:
                seconds.append(time.perf_counter() - started)
        conn.close()
    assert min(seconds) < 0.040, f"every answer took 40 ms or more: {[round(s * 1000, 1) for s in seconds]}"
