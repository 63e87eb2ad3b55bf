"""The board as `taskgate serve` serves it: the static files of web/ under a strict
Content-Security-Policy, `/config.json` (local sign-in when the stack wrote none), and the local
sign-in endpoints (see signin.py). In the cloud the same files come from S3 behind CloudFront,
which sets its own policy (there, connect-src must also allow the Cognito domain).
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from taskgate.domain.errors import ErrorCode, TaskgateError, not_found
from taskgate.local.refusals import refuse
from taskgate.local.signin import CODE_TTL_S, SignIn

Send = Callable[[dict[str, Any]], Any]

# Everything from this origin, nothing inline, nothing from anywhere else; DOM writes that could
# run script are refused outright (the board builds its DOM with createElement/textContent).
CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    ]
)
NO_STORE = (b"cache-control", b"no-store")  # sign-in answers and refusals: never kept
_ALLOW_POST = (b"allow", b"POST")
STATIC_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-cache"),
]
LOCAL_CONFIG = b'{"auth": "local"}'
SIGN_IN = "/local/sign-in"
SIGN_IN_LINK = "/local/sign-in-link"
_TEXT = ("text/", "application/javascript", "application/json", "image/svg+xml")


def sign_in_url(base: str, code: str) -> str:
    return f"{base.rstrip('/')}/#sign-in={code}"


class Board:
    def __init__(self, web_root: Path, sign_in: SignIn | None = None) -> None:
        self.web_root = web_root
        self.sign_in = sign_in

    @staticmethod
    def handles(path: str) -> bool:
        return path.startswith("/local/")

    async def local(
        self, send: Send, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> None:
        if self.sign_in is None or path not in (SIGN_IN, SIGN_IN_LINK):
            await refuse(send, not_found(path), NO_STORE)
            return
        if method != "POST":
            await refuse(send, TaskgateError(ErrorCode.METHOD_NOT_ALLOWED, "use POST"), NO_STORE, _ALLOW_POST)
            return
        host = headers.get("host", "")
        origin = headers.get("origin")
        if origin is not None and origin != f"http://{host}":
            # A page of another origin has no business here (it could not read the answer
            # anyway, but it must not use up a code either).
            await refuse(send, TaskgateError(ErrorCode.FORBIDDEN, "cross-origin sign-in refused"), NO_STORE)
            return
        if path == SIGN_IN_LINK:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not self.sign_in.is_admin(token.strip()):
                refusal = TaskgateError(ErrorCode.UNAUTHORIZED, "send the admin token as a Bearer token")
                await refuse(send, refusal, NO_STORE)
                return
            url = sign_in_url(f"http://{host}", self.sign_in.mint())
            await _json(send, 201, {"url": url, "expires_in": CODE_TTL_S})
            return
        try:
            asked = json.loads(body or b"{}")
            code, pasted = asked.get("code"), asked.get("admin_token")
        except (ValueError, AttributeError):
            code = pasted = None
        if isinstance(pasted, str):
            granted = self.sign_in.exchange(pasted.strip())
            if granted is None:
                refusal = TaskgateError(ErrorCode.UNAUTHORIZED, "that is not the admin token")
                await refuse(send, refusal, NO_STORE)
                return
        else:
            granted = self.sign_in.redeem(code) if isinstance(code, str) else None
        if granted is None:
            await refuse(
                send,
                TaskgateError(ErrorCode.UNAUTHORIZED, self.sign_in.why_not(code)),
                NO_STORE,
                hint="Run `taskgate board` for a fresh link, or sign in with the admin token.",
            )
            return
        await _json(send, 200, {"token": granted})

    def board_request(self, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]] | None:
        """For a request with a board session token: its headers with the admin token in its
        place (the API authenticates the admin); None for any other request."""
        if self.sign_in is None:
            return None
        out: list[tuple[bytes, bytes]] = []
        board = False
        for name, value in headers:
            if name.lower() == b"authorization":
                scheme, _, token = value.decode("latin-1").strip().partition(" ")
                if scheme.lower() == "bearer" and self.sign_in.board_session(token.strip()):
                    board = True
                    value = f"Bearer {self.sign_in.admin_token}".encode("latin-1")
            out.append((name, value))
        return out if board else None

    async def static(self, send: Send, method: str, path: str) -> None:
        if method not in ("GET", "HEAD"):
            refusal = TaskgateError(ErrorCode.METHOD_NOT_ALLOWED, "method not allowed: use GET or HEAD")
            await refuse(send, refusal, NO_STORE, (b"allow", b"GET, HEAD"))
            return
        root = self.web_root.resolve()
        target = (root / path.lstrip("/")).resolve()
        if target.is_dir():
            target = target / "index.html"
        if path == "/config.json" and not target.is_file():
            # No stack wrote one: this is `taskgate serve`, so the board signs in locally.
            await _respond(send, 200, "application/json", LOCAL_CONFIG, method)
            return
        if not target.is_relative_to(root) or not target.is_file():
            await refuse(send, not_found(path), NO_STORE)
            return
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        await _respond(send, 200, ctype, target.read_bytes(), method)


async def _respond(send: Send, status: int, ctype: str, payload: bytes, method: str) -> None:
    if ctype.startswith(_TEXT):
        ctype += "; charset=utf-8"
    headers = [
        (b"content-type", ctype.encode()),
        (b"content-length", str(len(payload)).encode()),
        *STATIC_HEADERS,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload if method == "GET" else b""})


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        NO_STORE,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
