"""A small REST client for the CLI: the CLI talks to the API, so it works against local and cloud.

Stdlib urllib on purpose: the CLI makes a handful of JSON calls and should start fast.
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from taskgate.domain.principals import PRESENCE_HEADER, Via

DEFAULT_SERVER = "http://127.0.0.1:8765"
DEFAULT_DATA_DIR = Path.home() / ".taskgate"


class ApiError(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        super().__init__(f"{body.get('code', status)}: {body.get('message', '')}")


def resolve_token(explicit: str | None, data_dir: Path | None) -> str | None:
    if explicit:
        return explicit
    if os.environ.get("TASKGATE_TOKEN"):
        return os.environ["TASKGATE_TOKEN"]
    path = (data_dir or Path(os.environ.get("TASKGATE_DATA_DIR", DEFAULT_DATA_DIR))) / "admin-token"
    try:
        return path.read_text().strip() if path.is_file() else None
    except OSError as exc:  # the data dir (0700) or the token (0600) is another user's
        raise ApiError(
            0,
            {
                "code": "E_NO_TOKEN",
                "message": f"cannot read the admin token {path}: {exc.strerror or exc}",
                "hint": "the data dir belongs to the user who runs `taskgate serve`: run the CLI as that "
                "user, or give a token with --token or TASKGATE_TOKEN",
            },
        ) from None


class Client:
    def __init__(
        self, server: str, token: str | None, *, timeout: float = 30.0, via: Via | None = None
    ) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.via = via  # sent as PRESENCE_HEADER: a person confirmed at the terminal, or a script

    @staticmethod
    def path(*segments: str) -> str:
        """An API path from its segments, each percent-encoded whole: an id holding '?', '#',
        '/', a space or non-ASCII letters stays one segment and names what it names."""
        return "".join("/" + urllib.parse.quote(s, safe="") for s in segments)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        *,
        as_text: bool = False,
    ) -> Any:
        """The JSON answer (`as_text`: the body as text, for answers that are not one JSON value)."""
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if self.via is not None:
            req.add_header(PRESENCE_HEADER, self.via.value)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body_bytes = resp.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = {"code": f"HTTP_{exc.code}", "message": raw.decode("utf-8", "replace")[:500]}
            raise ApiError(
                exc.code, payload if isinstance(payload, dict) else {"message": str(payload)}
            ) from exc
        except urllib.error.URLError as exc:
            if data is not None and isinstance(exc.reason, (ConnectionResetError, BrokenPipeError)):
                raise _cut_off(self.server, len(data)) from None
            raise ApiError(
                0, {"code": "E_UNREACHABLE", "message": f"cannot reach {self.server}: {exc.reason}"}
            ) from None
        except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as exc:
            if data is not None:
                raise _cut_off(self.server, len(data)) from None
            raise ApiError(
                0, {"code": "E_UNREACHABLE", "message": f"{self.server} closed the connection: {exc}"}
            ) from None
        except (TimeoutError, OSError) as exc:
            raise ApiError(
                0, {"code": "E_UNREACHABLE", "message": f"no answer from {self.server}: {exc}"}
            ) from None
        if as_text:
            return body_bytes.decode("utf-8", "replace")
        try:
            return json.loads(body_bytes) if body_bytes else None
        except (ValueError, RecursionError):
            raise ApiError(
                0, {"code": "E_BAD_ANSWER", "message": f"{self.server} answered {method} {path} with no JSON"}
            ) from None


def _cut_off(server: str, size: int) -> ApiError:
    """The server closed the connection while the request body was still going out: what a
    server does to a body over its limit, before the client could read why."""
    return ApiError(
        0,
        {
            "code": "E_CONNECTION_CLOSED",
            "message": f"{server} closed the connection while the CLI sent a {size}-byte request body",
            "hint": "a body that large is likely over the server's request size limit: make the file smaller",
        },
    )
