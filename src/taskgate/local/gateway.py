"""The local stand-in for API Gateway: an ASGI app that routes each REST request, as a v2 event,
to the same Lambda handler function the cloud runs (in a worker thread), serves /mcp, and serves
the board.

/mcp is served by the MCP ASGI app itself, built once and kept for the process (`mcp_app`):
the same front door (auth, limits, Host/Origin checks) the Lambda handler wraps in Mangum,
without turning every request into an event and back, which costs more than taskgate's own
work. Without `mcp_app`, /mcp goes through the Lambda handler like /api (bench/mcp_rate.py
measures a bare server that way)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.local.board import Board
from taskgate.local.events import from_response, to_event
from taskgate.local.refusals import refuse
from taskgate.local.signin import SignIn
from taskgate.service.wakeups import Signal

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

MAX_BODY = 1024 * 1024
# Handler invocations running at once. Each is a Lambda-style call holding the GIL for most of
# its time; more threads only queue on the GIL and the SQLite write lock and lower throughput
# (bench/mcp_rate.py compares worker counts). Two keep one slow call from blocking all.
DEFAULT_WORKERS = 2  # the MCP and REST handlers enforce the same bound; this keeps memory flat
WEB_ROOT = Path(__file__).resolve().parents[3] / "web"
WORK_PATH = "/api/verifier/work"
# Requests whose work grows with a project (an audit reads every task's history and statements,
# ~0.6 ms a task: seconds for a large project) run in a lane of their own, one at a time, so
# they never take the workers every other request waits for.
LONG_REQUESTS = re.compile(r"/api/projects/[^/]+/audit")
LONG_WORKERS = 1


class LambdaContext:
    """The bits of the Lambda context object handlers may read."""

    function_name = "taskgate-local"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:taskgate-local"
    memory_limit_in_mb = 1024
    aws_request_id = "local"
    log_group_name = "local"
    log_stream_name = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def _is_mcp(path: str) -> bool:
    return path == "/mcp" or path.startswith("/mcp/")


def _wait_asked(query: bytes) -> float:
    """The `wait` of a work request, when it is a number (the handler refuses any other, and
    one out of range)."""
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if name == "wait":
            try:
                wait = float(value)
            except ValueError:
                return 0.0
            return wait if 0 < wait < float("inf") else 0.0
    return 0.0


def _no_work(response: dict[str, Any]) -> bool:
    if response.get("statusCode") != 200 or response.get("isBase64Encoded"):
        return False
    try:
        body = json.loads(response.get("body") or "")
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("items") == [] and not body.get("batches")


def _mcp_handler() -> Handler:
    from taskgate.mcp.handler import handler  # imported on first use: the MCP SDK is slow to import

    return handler


def _api_handler() -> Handler:
    from taskgate.api.handler import handler

    return handler


class Gateway:
    def __init__(
        self,
        web_root: Path = WEB_ROOT,
        *,
        max_body: int = MAX_BODY,
        handlers: dict[str, Handler] | None = None,
        workers: int = DEFAULT_WORKERS,
        sign_in: SignIn | None = None,
        mcp_app: ASGIApp | None = None,
        wakeups: Signal | None = None,
    ) -> None:
        self.workers = workers
        self.web_root = web_root
        self.board = Board(web_root, sign_in)
        self.max_body = max_body
        self._handlers: dict[str, Handler] = dict(handlers or {})  # "mcp"/"api" -> handler; else imported
        self._context = LambdaContext()
        self._capacity: anyio.CapacityLimiter | None = None
        self._long_capacity: anyio.CapacityLimiter | None = None
        self.mcp_app = mcp_app
        # The signal the store's commits raise (serve.py): a verifier's work request that asks to
        # wait is answered by the handler at once, and waits here, between two answers, holding
        # neither a worker nor the REST handler's lock (one request at a time, api/handler.py).
        self.wakeups = wakeups

    def _limiter(self, path: str) -> anyio.CapacityLimiter:
        # Created lazily: a limiter belongs to the event loop that first uses it.
        if LONG_REQUESTS.fullmatch(path):
            if self._long_capacity is None:
                self._long_capacity = anyio.CapacityLimiter(LONG_WORKERS)
            return self._long_capacity
        if self._capacity is None:
            self._capacity = anyio.CapacityLimiter(self.workers)
        return self._capacity

    def warm(self) -> None:
        """Import the handlers before the first request, as a provisioned Lambda would be."""
        if self.mcp_app is None:
            self.handler_for("/mcp")
        self.handler_for("/api")

    def handler_for(self, path: str) -> Handler | None:
        if _is_mcp(path):
            key, load = "mcp", _mcp_handler
        elif path == "/api" or path.startswith("/api/"):
            key, load = "api", _api_handler
        else:
            return None
        if key not in self._handlers:
            self._handlers[key] = load()
        return self._handlers[key]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.mcp_app is not None and (
            scope["type"] == "lifespan" or (scope["type"] == "http" and _is_mcp(scope["path"]))
        ):
            # The MCP app's lifespan runs the SDK's session manager for the process's lifetime.
            await self.mcp_app(scope, receive, send)
            return
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body:
                too_large = TaskgateError(ErrorCode.TOO_LARGE, f"request body over {self.max_body} bytes")
                await refuse(send, too_large)
                return
        path: str = scope["path"]
        if Board.handles(path):
            named = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            await self.board.local(send, scope["method"], path, named, body)
            return
        handler = self.handler_for(path)
        if handler is None:
            await self.board.static(send, scope["method"], path)
            return
        headers = scope.get("headers", [])
        board = self.board.board_request(headers) if not _is_mcp(path) else None
        event = to_event(
            method=scope["method"],
            path=path,
            query=scope.get("query_string", b""),
            headers=board if board is not None else headers,
            body=body,
            client=scope.get("client"),
        )
        if board is not None:  # api/handler.py: the request came from the board's sign-in
            event["requestContext"]["authorizer"] = {"local": {"board": True}}
        wait_s = _wait_asked(scope.get("query_string", b"")) if path == WORK_PATH else 0.0
        if self.wakeups is not None and wait_s > 0:
            response = await self._work_when_ready(handler, event, self.wakeups, wait_s)
        else:
            response = await anyio.to_thread.run_sync(
                handler, event, self._context, limiter=self._limiter(path)
            )
        status, headers, payload = from_response(response)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _work_when_ready(
        self, handler: Handler, event: dict[str, Any], wakeups: Signal, wait_s: float
    ) -> dict[str, Any]:
        """Ask the handler; while it has nothing to start and the wait lasts, wait for a commit
        that may bring some and ask again. A refusal (a bad `wait` included) is the answer."""
        deadline = anyio.current_time() + wait_s
        while True:
            seen = wakeups.generation()
            response = await anyio.to_thread.run_sync(
                handler, event, self._context, limiter=self._limiter(WORK_PATH)
            )
            left = deadline - anyio.current_time()
            if left <= 0 or not _no_work(response) or wakeups.closed:
                return response
            await wakeups.wait_async(seen, left)
