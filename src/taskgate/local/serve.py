"""`taskgate serve`: MCP + REST + board + lease sweeper in one process."""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import stat
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, cast

from taskgate.local import invocation
from taskgate.service import secrets
from taskgate.signing.local import KEY_FILE, ensure_key

if TYPE_CHECKING:
    from starlette.types import ASGIApp

log = logging.getLogger("taskgate.serve")

SWEEP_EVERY_S = 30.0


@dataclass(frozen=True)
class ServeOptions:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 8765
    store: str = "sqlite"
    table: str = ""
    endpoint_url: str | None = None
    admin_name: str = "admin"
    workers: int = 2
    # Where to write the port the server bound (useful with port 0: the system picks a free one).
    port_file: Path | None = None


def admin_token(data_dir: Path) -> tuple[str, Path]:
    """The admin token, created on first start, kept in <data-dir>/admin-token with mode 0600."""
    path = data_dir / "admin-token"
    if path.exists():
        token = path.read_text().strip()
        if token.startswith(secrets.ADMIN_PREFIX):
            os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
            return token, path
    token = secrets.mint(secrets.ADMIN_PREFIX)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    return token, path


def private_dir(path: Path) -> None:
    """The data dir: made 0700 (it holds the admin token and the database). One that exists
    already keeps its mode, with a warning when other users may read it: tightening a directory
    someone chose (`--data-dir /srv/shared`) is theirs to decide, and the token file is 0600 in
    any case."""
    if not path.is_dir():
        path.mkdir(parents=True, mode=0o700)
        os.chmod(path, stat.S_IRWXU)  # whatever the umask
        return
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(
            "data dir %s is open to other users (mode %o): `chmod 700 %s` keeps its database to you",
            path,
            mode,
            path,
        )


def configure(options: ServeOptions) -> tuple[str, Path]:
    """Set the environment the handlers read (runtime.Settings), as Lambda's would be.
    Returns the admin token and the file that holds it."""
    private_dir(options.data_dir)
    token, token_path = admin_token(options.data_dir)
    os.environ["TASKGATE_ADMIN_TOKEN_HASH"] = secrets.digest(token)
    os.environ["TASKGATE_ADMIN_NAME"] = options.admin_name
    os.environ["TASKGATE_STORE"] = options.store
    key_path = options.data_dir / KEY_FILE
    ensure_key(key_path)
    os.environ["TASKGATE_ATTESTATION_KEY"] = str(key_path)
    if not os.environ.get("TASKGATE_PUBLIC_URL"):
        host = f"[{options.host}]" if ":" in options.host else options.host
        os.environ["TASKGATE_PUBLIC_URL"] = f"http://{host}:{options.port}"
    os.environ["TASKGATE_WORKERS"] = str(options.workers)
    if options.store == "sqlite":
        os.environ["TASKGATE_DB"] = str(options.data_dir / "taskgate.db")
    else:
        os.environ["TASKGATE_TABLE"] = options.table
        if options.endpoint_url:
            os.environ["TASKGATE_DYNAMODB_ENDPOINT"] = options.endpoint_url
    if options.host not in ("127.0.0.1", "localhost", "::1"):
        hosts = os.environ.get("TASKGATE_ALLOWED_HOSTS", "127.0.0.1:*,localhost:*,[::1]:*")
        os.environ["TASKGATE_ALLOWED_HOSTS"] = f"{hosts},{options.host}:*"
    return token, token_path


class Sweeper(threading.Thread):
    """Runs the sweeper function's handler every SWEEP_EVERY_S until stopped."""

    def __init__(self, every_s: float = SWEEP_EVERY_S) -> None:
        super().__init__(name="taskgate-sweeper", daemon=True)
        self.every_s = every_s
        self.stopped = threading.Event()

    def run(self) -> None:
        from taskgate.scheduled.sweeper import handler

        while not self.stopped.wait(self.every_s):
            try:
                handler({}, None)
            except Exception:  # a failed sweep is retried next tick; expiry is enforced on access anyway
                log.exception("sweep failed")


def _body_timeout_s() -> float:
    """TASKGATE_BODY_TIMEOUT_S: how long a request body may take to arrive (default 30 s)."""
    from taskgate.local.deadline import DEFAULT_BODY_TIMEOUT_S

    raw = os.environ.get("TASKGATE_BODY_TIMEOUT_S", "")
    try:
        value = float(raw) if raw else DEFAULT_BODY_TIMEOUT_S
    except ValueError:
        raise SystemExit(f"TASKGATE_BODY_TIMEOUT_S must be a number of seconds, not {raw!r}") from None
    if not value > 0:
        raise SystemExit("TASKGATE_BODY_TIMEOUT_S must be more than 0")
    return value


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts: with port 0 the system picks a
    free port and this process holds it from then on, so no other process can take it between
    choosing and serving (as one that probes for a free port and lets it go would allow)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off only on accepted sockets whose
    # protocol says TCP, and with it on, a response written in two sends waits for the
    # client's delayed ACK (40 ms a request). The listener's own TCP_NODELAY is inherited by
    # what it accepts, whatever event loop serves them.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        # Listening at once: a client that read the port file is queued until uvicorn accepts.
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise SystemExit(f"taskgate serve: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def write_port_file(path: Path, port: int) -> None:
    """The bound port, written whole (a reader polling for the file never sees half of it)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(f"{port}\n")
    os.replace(partial, path)


def serve(options: ServeOptions) -> None:
    import uvicorn

    from taskgate import runtime
    from taskgate.local.board import sign_in_url
    from taskgate.local.deadline import BodyDeadline
    from taskgate.local.gateway import MAX_BODY, Gateway
    from taskgate.local.signin import CODE_TTL_S, SignIn
    from taskgate.mcp.app import build_app
    from taskgate.service import key_cache
    from taskgate.service.sweeper import sweep
    from taskgate.service.wakeups import Signal
    from taskgate.store.sqlite import SQLiteStore

    sock = bind(options.host, options.port)
    options = replace(options, port=int(sock.getsockname()[1]))
    token, token_path = configure(options)
    ctx = runtime.context()  # opens (and migrates) the store before the first request
    # Every write goes through this process: its commits wake the verifiers waiting for work.
    wakeups = ctx.wakeups = Signal()
    if isinstance(ctx.store, SQLiteStore):
        # Every revocation goes through this process (its REST API and board): a key cache can
        # be exact here (service/key_cache.py). Not with DynamoDB, which other processes share.
        key_cache.enable()
        ctx.store.checkpoint_in_background()
    # Finish what a crash of the last run left half-done (cascades, lapsed leases) before
    # serving; afterwards the sweeper thread keeps at it.
    swept = sweep(ctx)
    if swept.expired or swept.cascaded:
        log.warning("on start: %d leases expired, %d tasks repaired", len(swept.expired), len(swept.cascaded))
    sign_in = SignIn(token)
    gateway = Gateway(workers=options.workers, sign_in=sign_in, mcp_app=build_app(), wakeups=wakeups)
    gateway.warm()
    sweeper = Sweeper()
    sweeper.start()
    base = f"http://{'[' + options.host + ']' if ':' in options.host else options.host}:{options.port}"
    print(f"taskgate serving on {base}", flush=True)
    if (gateway.web_root / "index.html").is_file():
        print(f"  board:       {base}/", flush=True)
        print(
            f"  sign in:     {sign_in_url(base, sign_in.mint())}\n"
            f"               (one-time link, valid {CODE_TTL_S // 60} min; `{invocation.me()} board` prints a new one)",
            flush=True,
        )
    print(f"  MCP:         {base}/mcp", flush=True)
    print(f"  REST API:    {base}/api  (docs: {base}/api/docs)", flush=True)
    print(f"  admin token: {token_path}", flush=True)
    print(f"  store:       {options.store} {os.environ.get('TASKGATE_DB') or options.table}", flush=True)
    if options.port_file is not None:
        write_port_file(options.port_file, options.port)
    config = uvicorn.Config(
        BodyDeadline(cast("ASGIApp", gateway), seconds=_body_timeout_s(), max_bytes=MAX_BODY),
        host=options.host,
        port=options.port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=10,
    )
    # uvicorn traps SIGINT/SIGTERM, finishes in-flight requests, then re-raises the signal to
    # the handler that was installed before it: make that one a no-op so we close the store and
    # exit 0. Every acknowledged write was committed before its response was sent.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    # Everything imported and built so far (the SDK, pydantic's schemas, the tools) lives as long as the process: out of the collector's sight, the collections
    # that every request's garbage triggers no longer walk it again.
    gc.collect()
    gc.freeze()

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            wakeups.close()  # waiting work requests answer now, not when their wait ends
            super().handle_exit(sig, frame)

    try:
        Server(config).run(sockets=[sock])
    finally:
        sock.close()
        sweeper.stopped.set()
        sweeper.join(timeout=5)
        ctx.store.close()
        print("taskgate stopped", flush=True)
