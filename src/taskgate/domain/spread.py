"""Spreading agents over equal work: each caller sees tasks of equal standing in its own order.

Agents that list the next tasks and claim the first would all chase the same task if they saw
the same list. Within a priority band the order is a stable hash of (caller, task), so two
callers rarely share a first choice, while the bands stay in priority order. Stable rather than
shuffled per call: a caller that asks twice sees the same list, and a test can pin the order.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")


def spread(
    ranked: Sequence[T], caller: str, *, band: Callable[[T], Hashable], task_id: Callable[[T], str]
) -> list[T]:
    """`ranked` is best first with each band contiguous (the queue's order). The bands keep their
    order; inside each, the caller's own: a stable hash of (caller, task), lower first."""
    salt = caller.encode() + b"\0"

    def rank(t: T) -> bytes:
        return hashlib.blake2b(salt + task_id(t).encode(), digest_size=8).digest()

    out: list[T] = []
    for _, group in itertools.groupby(ranked, key=band):
        out += sorted(group, key=rank)
    return out
