"""An injectable source of randomness for ids, tokens and picks, like the clock: the services draw
from `Context.entropy`, never from a module. In use it is the OS's (`secrets`); a test or a
model run gives one started from a fixed number, so the same number makes the same keys, tokens,
run ids and picks, and a run can be repeated step for step."""

from __future__ import annotations

import base64
import random
import secrets
import threading
from collections.abc import Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")


class Entropy(Protocol):
    def token_hex(self, nbytes: int) -> str: ...

    def token_urlsafe(self, nbytes: int) -> str: ...

    def choice(self, options: Sequence[T]) -> T: ...


class SystemEntropy:
    """The OS's cryptographic randomness: what every key, claim token and id is made from in use."""

    def token_hex(self, nbytes: int) -> str:
        return secrets.token_hex(nbytes)

    def token_urlsafe(self, nbytes: int) -> str:
        return secrets.token_urlsafe(nbytes)

    def choice(self, options: Sequence[T]) -> T:
        return secrets.choice(options)


class SeededEntropy:
    """Repeatable draws from a fixed starting number, for tests and model runs only: anyone who
    knows the number knows every secret it made."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self._lock = threading.Lock()  # one sequence of draws, whichever thread asks

    def seed(self, seed: int) -> None:
        with self._lock:
            self._random.seed(seed)

    def token_hex(self, nbytes: int) -> str:
        with self._lock:
            return self._random.randbytes(nbytes).hex()

    def token_urlsafe(self, nbytes: int) -> str:
        # The same alphabet and length as secrets.token_urlsafe (base64url, no padding).
        with self._lock:
            raw = self._random.randbytes(nbytes)
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def choice(self, options: Sequence[T]) -> T:
        with self._lock:
            return self._random.choice(options)


SYSTEM_ENTROPY = SystemEntropy()
