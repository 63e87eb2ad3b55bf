"""A fresh `taskgate serve` in a subprocess, started as a user starts it, and the admin's REST
access to it.

The server binds a port the system picks (`--port 0 --port-file`), so no other process can take
it between choosing and serving. `src` serves another checkout's code (its src/ on PYTHONPATH:
a before/after in one run); a checkout whose `serve` predates --port-file gets a port probed
free a moment before.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskgate.cli.client import Client


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    data_dir: Path
    port: int
    owned: Path | None = None  # a temp dir of ours, removed on stop
    admin_token: str = field(init=False)

    def __post_init__(self) -> None:
        self.admin_token = (self.data_dir / "admin-token").read_text().strip()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def db_path(self) -> Path:
        return self.data_dir / "taskgate.db"

    def rest(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> Any:
        """One REST call, as the admin unless `token`; raises ApiError for an answer >= 400."""
        return Client(self.base, token or self.admin_token, timeout=60).call(method, path, body)

    def agent_key(self, name: str, *, projects: list[str] | None = None, role: str = "executor") -> str:
        body = {"kind": "agent", "name": name, "role": role, "projects": projects or []}
        key: str = self.rest("POST", "/api/keys", body)["key"]
        return key

    def stop(self) -> None:
        """SIGINT, as Ctrl-C: the server finishes what it is doing and closes its store."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.owned is not None:
            shutil.rmtree(self.owned, ignore_errors=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _has_port_file(python: str, env: dict[str, str]) -> bool:
    done = subprocess.run(
        [python, "-m", "taskgate.cli", "serve", "--help"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return "--port-file" in done.stdout


def start(
    data_dir: Path | None = None,
    *,
    src: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> Served:
    """`taskgate serve` on `data_dir` (by default a temp dir removed on stop), answering
    /api/health before this returns."""
    owned = None
    if data_dir is None:
        owned = Path(tempfile.mkdtemp(prefix="taskgate-bench-"))
        data_dir = owned / "data"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")} | (env or {})
    if src is not None:
        environ["PYTHONPATH"] = str(src / "src")
    python = sys.executable
    port_file = data_dir.with_name(data_dir.name + ".port")
    port_file.unlink(missing_ok=True)
    if src is None or _has_port_file(python, environ):
        port, where = 0, ["--port", "0", "--port-file", str(port_file)]
    else:
        port = _free_port()
        where = ["--port", str(port)]
    proc = subprocess.Popen(
        [python, "-m", "taskgate.cli", "serve", "--data-dir", str(data_dir), *where],
        env=environ,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    try:
        while port == 0:
            if port_file.is_file():
                port = int(port_file.read_text())
            else:
                _still_starting(proc, deadline)
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                _still_starting(proc, deadline)
    except BaseException:
        proc.kill()
        proc.wait()
        if owned is not None:
            shutil.rmtree(owned, ignore_errors=True)
        raise
    return Served(proc, data_dir, port, owned)


def _still_starting(proc: subprocess.Popen[bytes], deadline: float) -> None:
    if proc.poll() is not None:
        raise RuntimeError(f"taskgate serve exited with {proc.returncode} before it answered")
    if time.monotonic() > deadline:
        raise RuntimeError("taskgate serve did not answer /api/health in time")
    time.sleep(0.05)


@contextmanager
def serving(data_dir: Path | None = None, **kw: Any) -> Iterator[Served]:
    server = start(data_dir, **kw)
    try:
        yield server
    finally:
        server.stop()
