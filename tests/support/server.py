"""Run `taskgate serve` as a real subprocess on a temp data dir and a port it picks itself."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TASKGATE = str(Path(sys.executable).with_name("taskgate"))


def free_port() -> int:
    """A port free a moment ago, for a server of someone else's (git daemon) that cannot bind 0
    and say which port it got: another process may take it first. `taskgate serve` is started
    on port 0 instead (`await_port`)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_args(data_dir: Path, port: int | None = None) -> list[str]:
    """`taskgate serve` on `port`, or by default on a port the server binds itself (port 0),
    writing the port it got to a file beside its data dir (`await_port` reads it)."""
    args = [TASKGATE, "serve", "--data-dir", str(data_dir), "--port", str(port or 0)]
    return args if port else [*args, "--port-file", str(port_file(data_dir))]


def port_file(data_dir: Path) -> Path:
    """Beside the data dir, not in it: what the server keeps there is the server's."""
    return data_dir.with_name(data_dir.name + ".port")


def await_port(proc: subprocess.Popen[Any], data_dir: Path, port: int | None, deadline: float) -> int:
    """The port the server listens on: `port` when it was given one, else what it wrote to its
    port file (removed first by `serve_args`' caller, so a file from an earlier run is never
    read). The process must still be running: the port is its own, held from before the file
    was written, so no other server can answer on it."""
    path = port_file(data_dir)
    while port is None:
        if proc.poll() is not None:
            raise RuntimeError(f"taskgate serve exited {proc.returncode} before it wrote {path}")
        if path.is_file():
            return int(path.read_text())
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"taskgate serve wrote no {path} in time")
        time.sleep(0.02)
    return port


@dataclass
class Server:
    proc: subprocess.Popen[str]
    data_dir: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def admin_token(self) -> str:
        return (self.data_dir / "admin-token").read_text().strip()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw)
            except ValueError:
                return exc.code, raw.decode("utf-8", "replace")

    def cli(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        """The CLI as an agent's shell runs it: no controlling terminal (a session of its own)
        and nothing on stdin, so a human-only command is refused here, however pytest was run."""
        env = {**os.environ, "TASKGATE_SERVER": self.url}
        env.pop("TASKGATE_TOKEN", None)
        if token:
            env["TASKGATE_TOKEN"] = token
        return subprocess.run(
            [TASKGATE, *args, "--data-dir", str(self.data_dir)],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            start_new_session=True,
        )

    def script(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A human-only command as a script of the human's own runs it: the admin token given
        explicitly (TASKGATE_TOKEN) and --yes (src/taskgate/cli/presence.py), no terminal."""
        return self.cli(*args, "--yes", token=self.admin_token)

    def stop(self, sig: int = signal.SIGTERM) -> str:
        self.proc.send_signal(sig)
        out, _ = self.proc.communicate(timeout=30)
        return out


def start(
    data_dir: Path,
    *,
    port: int | None = None,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> Server:
    port_file(data_dir).unlink(missing_ok=True)
    proc = subprocess.Popen(
        [*serve_args(data_dir, port), *(extra or [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    deadline = time.monotonic() + timeout
    server = Server(proc, data_dir, await_port(proc, data_dir, port, deadline))
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"taskgate serve exited {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}"
            )
        try:
            status, _ = server.request("GET", "/api/health")
            if status == 200:
                return server
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("taskgate serve did not answer /api/health in time")


@contextmanager
def running(data_dir: Path, **kw: Any) -> Iterator[Server]:
    server = start(data_dir, **kw)
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.communicate(timeout=30)
