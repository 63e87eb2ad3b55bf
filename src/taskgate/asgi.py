"""Small ASGI pieces shared by the front doors (no SDK import, so any of them may use it)."""

from __future__ import annotations

from starlette.types import Message, Receive


def replaying(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then the client's own messages."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
