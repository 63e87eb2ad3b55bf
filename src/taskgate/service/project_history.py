"""A project's history as a human reads it: its own events merged, at read time, with those of
project "*" (changes to keys that cover every project, this one among them).

Merged when read rather than written into every project when a key changes: a key for every
project also covers projects created after it, which a write at minting time cannot reach, and
one commit holds at most 100 items (DynamoDB's transaction limit), which a write per project
would outgrow. So minting or revoking a key stays one atomic commit (the key and one event under
"*"), and every project's history shows it, whenever the project was made.

The page cursor is ours: one position per partition, each an adapter cursor (opaque), "" for
"from the start" or null for "read to the end".
"""

from __future__ import annotations

from collections import Counter

from taskgate.domain.errors import invalid
from taskgate.service import records
from taskgate.service.context import Context
from taskgate.store import cursor as cursors
from taskgate.store.port import Item, Page

ALL_PROJECTS = "*"  # the history of keys that cover every project
_CURSOR_KIND = "project+all"
# Re-reads allowed when events land above a page's split point while it is being read (below).
_RACE_SLACK = 16


def partition(project: str) -> str:
    return records.project_history_pk(project)


def page(ctx: Context, project: str, *, limit: int, cursor: str | None) -> tuple[list[Item], str | None]:
    """Events of `project` and of "*", newest first, `limit` at a time."""
    parts = [partition(project), partition(ALL_PROJECTS)]
    starts = _decode(cursor) if cursor else ["", ""]
    pages = [
        Page([], None)
        if start is None
        else ctx.store.query(pk, limit=limit, cursor=start or None, descending=True)
        for pk, start in zip(parts, starts, strict=True)
    ]
    # Sort keys of history events are timestamps first (records.stamp), so they order events
    # across partitions too; a tie (never seen: the stamps end in a counter and random bits)
    # goes to the project's own event.
    tagged = sorted(
        ((item.sk, -i, item) for i, p in enumerate(pages) for item in p.items),
        key=lambda t: (t[0], t[1]),
        reverse=True,
    )[:limit]
    used = Counter(-neg for _, neg, _ in tagged)
    after: list[str | None] = []
    for i, (pk, start, p) in enumerate(zip(parts, starts, pages, strict=True)):
        n = used[i]
        if start is None or n == len(p.items):
            after.append(
                None if start is None else p.cursor
            )  # a page read to its end goes on from its cursor
        elif n == 0:
            after.append(start)
        else:
            after.append(_cursor_after(ctx, pk, start, p.items[n - 1].sk, n))
    items = [item for _, _, item in tagged]
    if all(a is None for a in after):
        return items, None
    return items, cursors.encode({"kind": _CURSOR_KIND, "after": after})


def _cursor_after(ctx: Context, pk: str, start: str, last_sk: str, n: int) -> str | None:
    """The adapter's cursor just past the n-th event read from `start` (the one at `last_sk`).

    Adapter cursors are opaque, so the position comes from reading those n events again. An
    event committed between the two reads with a newer stamp sits above them (it is newer than
    anything a page from the start has shown): then read one more until the n-th is `last_sk`
    again, or the next page would show an event twice."""
    p = Page([], None)
    for k in range(n, n + _RACE_SLACK):
        p = ctx.store.query(pk, limit=k, cursor=start or None, descending=True)
        if not p.items or p.items[-1].sk <= last_sk:
            break
    return p.cursor


def _decode(cursor: str) -> list[str | None]:
    pos = cursors.decode(cursor)
    after = pos.get("after")
    if (
        pos.get("kind") != _CURSOR_KIND
        or not isinstance(after, list)
        or len(after) != 2
        or not all(a is None or isinstance(a, str) for a in after)
    ):
        raise invalid("cursor is not one this server returned")
    return list(after)
