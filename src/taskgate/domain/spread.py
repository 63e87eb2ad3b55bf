"""Spreading agents over equal work: each caller sees tasks of equal standing in its own order.

Agents that list the next tasks and claim the first would all chase the same task if they saw
the same list. Within a priority band the order is a stable hash of (caller, task), so two
callers rarely share a first choice, while the bands stay in priority order. Stable rather than
shuffled per call: a caller that asks twice sees the same list, and a test can pin the order.

A hash alone still collides (16 callers over 64 equal tasks share ~2 first choices, and nearly
all once fewer tasks than callers are left): a task just shown first to another caller, who is
about to claim it (`offered`), goes to the back of its band. It stays listed and claimable:
the order is advice, the claim's condition decides.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Collection, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")


def spread(
    ranked: Sequence[T],
    caller: str,
    *,
    band: Callable[[T], Hashable],
    task_id: Callable[[T], str],
    offered: Collection[str] = (),
) -> list[T]:
    """`ranked` is best first with each band contiguous (the queue's order). The bands keep their
    order; inside each, the tasks not in `offered` (ids shown first to another caller) before
    those that are, each part in the caller's own order: a stable hash of (caller, task)."""
    salt = caller.encode() + b"\0"

    def rank(t: T) -> tuple[bool, bytes]:
        tid = task_id(t)
        return tid in offered, hashlib.blake2b(salt + tid.encode(), digest_size=8).digest()

    out: list[T] = []
    for _, group in itertools.groupby(ranked, key=band):
        out += sorted(group, key=rank)
    return out
