"""A deadline on reading request bodies, for `taskgate serve`.

uvicorn times out idle keep-alive connections but not a request whose body trickles in or never
arrives: each such request would hold a connection (and a task) forever. API Gateway ends them
for the cloud; locally this middleware does. Hand-written because it is ours to decide: the body
is read whole within `seconds` (and at most `max_bytes`), then handed to the app as if it had
just arrived; too slow answers E_TIMEOUT, too large E_TOO_LARGE (refusals.py: the error table's
408 and 413).
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send

from taskgate.asgi import replaying
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.local.refusals import refuse

DEFAULT_BODY_TIMEOUT_S = 30.0


_CLOSE = (b"connection", b"close")  # what the client sent after its request cannot be read
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
                        # closes gets a connection reset, never the refusal that says why.
                        while not done and size <= self.max_bytes * DRAIN_FACTOR:
                            message = await receive()
                            size += len(message.get("body", b""))
                            done = message["type"] != "http.request" or not message.get("more_body", False)
                        too_large = f"request body over {self.max_bytes} bytes"
                        await refuse(send, TaskgateError(ErrorCode.TOO_LARGE, too_large), _CLOSE)
                        return
                    chunks.append(chunk)
        except TimeoutError:
            too_slow = f"the request body did not arrive within {self.seconds:g} s"
            await refuse(send, TaskgateError(ErrorCode.TIMEOUT, too_slow), _CLOSE)
            return
        await self.app(scope, replaying(b"".join(chunks), receive), send)
