"""A deadline on reading request bodies, for `taskgate serve`.

uvicorn times out idle keep-alive connections but not a request whose body trickles in or never
arrives: each such request would hold a connection (and a task) forever. API Gateway ends them
for the cloud; locally this middleware does. Hand-written because it is ours to decide: the body
is read whole within `seconds` (and at most `max_bytes`), then handed to the app as if it had
just arrived; too slow answers 408, too large 413, both in taskgate's JSON error shape.
"""

from __future__ import annotations

import asyncio
import json

from starlette.types import ASGIApp, Receive, Scope, Send

from taskgate.asgi import replaying

DEFAULT_BODY_TIMEOUT_S = 30.0


DRAIN_FACTOR = 64  # how much of a body over the limit is read (and dropped) to answer its sender


class BodyDeadline:
    def __init__(self, app: ASGIApp, *, seconds: float = DEFAULT_BODY_TIMEOUT_S, max_bytes: int) -> None:
        self.app = app
        self.seconds = seconds
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        done = False
        # asyncio's own timeout, not anyio's cancel scope: uvicorn serves this on asyncio, and
        # every request passes here, so the cheaper of the two.
        try:
            async with asyncio.timeout(self.seconds):
                while not done:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # the client left before sending its body: nobody to answer
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    done = not message.get("more_body", False)
                    if size > self.max_bytes:
                        # Read the rest (up to DRAIN_FACTOR times the limit, within the same
                        # deadline) before answering: a client still sending when the server
                        # closes gets a connection reset, never the 413 that says why.
                        while not done and size <= self.max_bytes * DRAIN_FACTOR:
                            message = await receive()
                            size += len(message.get("body", b""))
                            done = message["type"] != "http.request" or not message.get("more_body", False)
                        await _refuse(send, 413, f"request body over {self.max_bytes} bytes")
                        return
                    chunks.append(chunk)
        except TimeoutError:
            await _refuse(send, 408, f"the request body did not arrive within {self.seconds:g} s")
            return
        await self.app(scope, replaying(b"".join(chunks), receive), send)


async def _refuse(send: Send, status: int, message: str) -> None:
    payload = json.dumps({"code": "E_VALIDATION", "message": message}, separators=(",", ":")).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
