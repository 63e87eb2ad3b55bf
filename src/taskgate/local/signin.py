"""One-time sign-in codes: how the board on this machine gets the admin token without anyone
copying the token file.

`taskgate serve` prints a link `http://host:port/#sign-in=<code>` (and `taskgate board` asks the
running server for a fresh one). The code sits in the URL fragment, which browsers never send to
a server and never put in a Referer; the page strips it from the address bar at once, posts it
to `/local/sign-in`, and keeps the token it gets back in sessionStorage (this tab only). A code
works once and for CODE_TTL_S: a link left in terminal scrollback or browser history is dead
once used or expired, which printing the admin token itself would never be. Only hashes of the
codes are kept, in memory: a restart invalidates every link.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable

CODE_TTL_S = 15 * 60
MAX_LIVE_CODES = 32  # a burst of `taskgate board` calls cannot grow this without bound


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


class SignIn:
    def __init__(self, admin_token: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._token = admin_token
        self._clock = clock
        self._codes: dict[str, float] = {}  # sha256(code) -> expiry on the monotonic clock
        self._lock = threading.Lock()

    def mint(self) -> str:
        code = secrets.token_urlsafe(24)  # 192 bits
        now = self._clock()
        with self._lock:
            self._codes = {h: exp for h, exp in self._codes.items() if exp > now}
            while len(self._codes) >= MAX_LIVE_CODES:  # the oldest link goes first
                del self._codes[min(self._codes, key=self._codes.__getitem__)]
            self._codes[_digest(code)] = now + CODE_TTL_S
        return code

    def redeem(self, code: str) -> str | None:
        """The admin token for a live code, which is used up; None for anything else."""
        if not code or len(code) > 256:
            return None
        with self._lock:
            expiry = self._codes.pop(_digest(code), None)
        if expiry is None or expiry <= self._clock():
            return None
        return self._token

    def is_admin(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self._token.encode())
