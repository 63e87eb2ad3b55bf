"""Per-project sequence numbers for friendly ids, taken in the same commit as the record."""

from __future__ import annotations

from typing import Literal

from taskgate.domain.errors import not_found
from taskgate.service import records
from taskgate.service.context import Context
from taskgate.store.port import Item, Put


def current(ctx: Context, project: str) -> Item:
    """The project's counter as stored; E_NOT_FOUND if there is no such project (every project
    has one from its creation on, so this read is also the check that the project exists)."""
    item = ctx.store.get(*records.counter_key(project))
    if item is None:
        raise not_found(f"project {project}")
    return item


def next_number(
    ctx: Context, project: str, kind: Literal["task", "spec", "decision"], read: Item | None = None
) -> tuple[Put, int]:
    """The counter's conditional write and the number it hands out; commit both or neither.
    `read`: the counter as just read in this call (`current`), to spare a second read."""
    item = read or current(ctx, project)
    number = int(item.data[kind]) + 1
    data = {**item.data, kind: number}
    return Put(Item(item.pk, item.sk, data, item.version + 1), item.version), number
