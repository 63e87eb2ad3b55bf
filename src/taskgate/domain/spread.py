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


def rank(caller: str, task_id: str) -> bytes:
    """The caller's stable rank of a task among its equals: lower goes first."""
    return hashlib.blake2b(f"{caller}\0{task_id}".encode(), digest_size=8).digest()


def spread(
    ranked: Sequence[T], caller: str, *, band: Callable[[T], Hashable], task_id: Callable[[T], str]
) -> list[T]:
    """`ranked` is best first with each band contiguous (the queue's order). The bands keep their
    order; inside each, the caller's own order."""
    out: list[T] = []
    for _, group in itertools.groupby(ranked, key=band):
        out += sorted(group, key=lambda t: rank(caller, task_id(t)))
    return out
