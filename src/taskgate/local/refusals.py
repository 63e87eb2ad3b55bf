"""The refusals `taskgate serve` writes at its own edge (a body too large or too slow, a method
the board's endpoints do not take, a path with no file): the REST API's shape {code, message,
hint}, with the status the error table gives the code (domain/errors.HTTP_STATUS) and counted
like every other refusal of the API."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from taskgate.api.errors import status_and_body
from taskgate.domain.errors import TaskgateError

Send = Callable[[dict[str, Any]], Awaitable[None]]


async def refuse(
    send: Send, exc: TaskgateError, *extra: tuple[bytes, bytes], hint: str | None = None
) -> None:
    """Answer the request with `exc`; `extra` headers go with it, `hint` replaces the code's."""
    status, body, named = status_and_body(exc)
    if hint is not None:
        body["hint"] = hint
    payload = json.dumps(body, separators=(",", ":")).encode()
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in named.items()]
    headers += [(b"content-length", str(len(payload)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
