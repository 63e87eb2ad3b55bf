"""One-time sign-in codes: how the board on this machine gets the admin token without anyone
copying the token file.

`taskgate serve` prints a link `http://host:port/#sign-in=<code>` (and `taskgate board` asks the
running server for a fresh one). The code sits in the URL fragment, which browsers never send to
a server and never put in a Referer; the page strips it from the address bar at once, posts it
to `/local/sign-in`, and keeps the token it gets back in sessionStorage (this tab only). A code
works once and for CODE_TTL_S: a link left in terminal scrollback or browser history is dead
once used or expired, which printing the admin token itself would never be. Only hashes of the
codes are kept, in memory: a restart invalidates every link.

A redeemed code (or the admin token pasted into the board's form) gives the page a board
session token, not the admin token: requests with it act as the admin, and the server knows
they came from the board (an acceptance made with it is recorded as made at the board, which a
script holding the admin token cannot claim). Sessions are kept by hash, in memory, for
SESSION_TTL_S.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable

CODE_TTL_S = 15 * 60
SESSION_TTL_S = 12 * 60 * 60
SESSION_PREFIX = "tgb_"
MAX_SESSIONS = 64  # board tabs signed in at once; the oldest is signed out first
MAX_LIVE_CODES = 32  # a burst of `taskgate board` calls cannot grow this without bound
# Codes that ended (used, expired, replaced), remembered by hash so the page can say which:
# at most this many, the oldest forgotten first (then they read as unknown).
MAX_ENDED_CODES = 256

USED = "this sign-in link was used already: each link signs in once"
EXPIRED = f"this sign-in link has expired: links last {CODE_TTL_S // 60} minutes"
REPLACED = "this sign-in link was replaced by newer ones before it was used"
UNKNOWN = (
    "this sign-in link is not one this server made: mistyped, cut short, or from before the server restarted"
)


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


class SignIn:
    def __init__(self, admin_token: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._token = admin_token
        self._clock = clock
        self._codes: dict[str, float] = {}  # sha256(code) -> expiry on the monotonic clock
        self._ended: dict[str, str] = {}  # sha256(code) -> why it no longer signs in (oldest first)
        self._sessions: dict[str, float] = {}  # sha256(board token) -> expiry on the monotonic clock
        self._lock = threading.Lock()

    def _end(self, digest: str, why: str) -> None:
        self._ended.pop(digest, None)
        self._ended[digest] = why
        while len(self._ended) > MAX_ENDED_CODES:
            del self._ended[next(iter(self._ended))]

    def mint(self) -> str:
        code = secrets.token_urlsafe(24)  # 192 bits
        now = self._clock()
        with self._lock:
            for h in [h for h, exp in self._codes.items() if exp <= now]:
                del self._codes[h]
                self._end(h, EXPIRED)
            while len(self._codes) >= MAX_LIVE_CODES:  # the oldest link goes first
                oldest = min(self._codes, key=self._codes.__getitem__)
                del self._codes[oldest]
                self._end(oldest, REPLACED)
            self._codes[_digest(code)] = now + CODE_TTL_S
        return code

    def redeem(self, code: str) -> str | None:
        """A board session token for a live code, which is used up; None for anything else."""
        if not code or len(code) > 256:
            return None
        digest = _digest(code)
        with self._lock:
            expiry = self._codes.pop(digest, None)
            if expiry is None:
                return None
            if expiry <= self._clock():
                self._end(digest, EXPIRED)
                return None
            self._end(digest, USED)
        return self._session()

    def exchange(self, admin_token: str) -> str | None:
        """A board session token for the admin token pasted into the board; None for anything else."""
        return self._session() if self.is_admin(admin_token) else None

    def _session(self) -> str:
        token = SESSION_PREFIX + secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            for h in [h for h, exp in self._sessions.items() if exp <= now]:
                del self._sessions[h]
            while len(self._sessions) >= MAX_SESSIONS:
                del self._sessions[min(self._sessions, key=self._sessions.__getitem__)]
            self._sessions[_digest(token)] = now + SESSION_TTL_S
        return token

    def board_session(self, token: str) -> bool:
        """Whether `token` is a live board session this server issued."""
        if not token.startswith(SESSION_PREFIX) or len(token) > 256:
            return False
        with self._lock:
            expiry = self._sessions.get(_digest(token))
        return expiry is not None and expiry > self._clock()

    @property
    def admin_token(self) -> str:
        return self._token

    def why_not(self, code: object) -> str:
        """Why `code` did not sign in, for the page to say: used, expired, replaced, unknown."""
        if not isinstance(code, str) or not code or len(code) > 256:
            return UNKNOWN
        with self._lock:
            return self._ended.get(_digest(code), UNKNOWN)

    def is_admin(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self._token.encode())
