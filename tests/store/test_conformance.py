"""One conformance suite for the Store port, run against every adapter (see conftest.py).

Each test states a behaviour of the port; both adapters must show it identically.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.store import cursor as cursors
from taskgate.store.port import (
    MAX_ITEM_BYTES,
    MAX_OPS_PER_COMMIT,
    Check,
    ConflictError,
    Delete,
    Item,
    Op,
    Page,
    Put,
    Store,
    Unencodable,
)
from taskgate.store.schema import IndexName

Q = IndexName.QUEUE
K = IndexName.LOOKUP


def item(pk: str, sk: str, version: int = 1, **data: Any) -> Item:
    return Item(pk, sk, data or {"v": version}, version)


def create(store: Store, *items: Item) -> None:
    """Insert new items, at most MAX_OPS_PER_COMMIT per commit."""
    for start in range(0, len(items), MAX_OPS_PER_COMMIT):
        store.commit([Put(it) for it in items[start : start + MAX_OPS_PER_COMMIT]])


def bump(it: Item, **changes: Any) -> Put:
    """A Put writing the next version of `it`, guarded by its current version."""
    return Put(replace(it, version=it.version + 1, **changes), expected_version=it.version)


def keys(items: list[Item]) -> list[tuple[str, str]]:
    return [(it.pk, it.sk) for it in items]


def drain(fetch: Callable[[str | None], Page], *, expect_pages: int | None = None) -> list[Item]:
    """Follow cursors to the end; every page but the last is full and carries a cursor."""
    out: list[Item] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = fetch(cursor)
        pages += 1
        out.extend(page.items)
        if page.cursor is None:
            break
        cursor = page.cursor
        assert pages < 1000, "cursor loop"
    if expect_pages is not None:
        assert pages == expect_pages
    return out


# -- conditional writes ----------------------------------------------------------------------


def test_put_new_then_second_new_put_conflicts_and_changes_nothing(store: Store) -> None:
    store.commit([Put(item("T#1", "META", title="first"))])
    with pytest.raises(ConflictError) as caught:
        store.commit([Put(item("T#1", "META", title="second"))])
    assert caught.value.failed == [("T#1", "META")]
    got = store.get("T#1", "META")
    assert got is not None
    assert (got.data, got.version) == ({"title": "first"}, 1)


def test_get_missing_is_none_and_item_round_trips(store: Store) -> None:
    assert store.get("T#404", "META") is None
    it = Item("T#1", "META", {"a": 1}, 1, {Q: ("Q#p#ready", "0000000005#T#1"), K: ("KH#abc", "KH#abc")})
    store.commit([Put(it)])
    assert store.get("T#1", "META") == it
    assert store.get("T#1", "OTHER") is None
    assert store.get("T#2", "META") is None


def test_update_with_expected_version(store: Store) -> None:
    v1 = item("T#1", "META", n=1)
    store.commit([Put(v1)])
    store.commit([bump(v1, data={"n": 2})])
    v2 = store.get("T#1", "META")
    assert v2 is not None
    assert (v2.data, v2.version) == ({"n": 2}, 2)

    # a writer that read version 1 loses, and nothing changes
    with pytest.raises(ConflictError) as caught:
        store.commit([bump(v1, data={"n": 99})])
    assert caught.value.failed == [("T#1", "META")]
    assert store.get("T#1", "META") == v2

    # an expected version ahead of the stored one fails too
    with pytest.raises(ConflictError):
        store.commit([Put(replace(v2, version=4), expected_version=3)])
    assert store.get("T#1", "META") == v2

    # an update of a missing item fails (it does not create it)
    with pytest.raises(ConflictError) as caught:
        store.commit([bump(item("T#2", "META"))])
    assert caught.value.failed == [("T#2", "META")]
    assert store.get("T#2", "META") is None


def test_delete_with_version(store: Store) -> None:
    store.commit([Put(item("T#1", "META"))])
    store.commit([bump(item("T#1", "META"))])  # now at version 2
    with pytest.raises(ConflictError) as caught:
        store.commit([Delete("T#1", "META", expected_version=1)])
    assert caught.value.failed == [("T#1", "META")]
    assert store.get("T#1", "META") is not None

    store.commit([Delete("T#1", "META", expected_version=2)])
    assert store.get("T#1", "META") is None

    with pytest.raises(ConflictError) as caught:
        store.commit([Delete("T#1", "META", expected_version=2)])
    assert caught.value.failed == [("T#1", "META")]

    # after a delete the key is new again
    store.commit([Put(item("T#1", "META", again=True))])
    assert store.get("T#1", "META") == item("T#1", "META", again=True)


def test_lone_check(store: Store) -> None:
    store.commit([Put(item("P#1", "META"))])
    store.commit([Check("P#1", "META", expected_version=1)])
    with pytest.raises(ConflictError) as caught:
        store.commit([Check("P#1", "META", expected_version=2)])
    assert caught.value.failed == [("P#1", "META")]
    with pytest.raises(ConflictError) as caught:
        store.commit([Check("P#404", "META", expected_version=1)])
    assert caught.value.failed == [("P#404", "META")]


def test_check_guards_a_put(store: Store) -> None:
    project = item("P#1", "META")
    store.commit([Put(project)])
    store.commit([bump(project)])  # the project moved on to version 2

    with pytest.raises(ConflictError) as caught:
        store.commit([Check("P#1", "META", expected_version=1), Put(item("T#1", "META"))])
    assert caught.value.failed == [("P#1", "META")]
    assert store.get("T#1", "META") is None
    assert store.get("P#1", "META") == replace(project, version=2)  # a Check writes nothing

    store.commit([Check("P#1", "META", expected_version=2), Put(item("T#1", "META"))])
    assert store.get("T#1", "META") is not None
    assert store.get("P#1", "META") == replace(project, version=2)


def test_multi_item_commit_is_atomic(store: Store) -> None:
    store.commit([Put(item("T#2", "META"))])  # makes the 2nd put's must-not-exist fail
    ops: list[Op] = [Put(item("T#1", "META")), Put(item("T#2", "META", x=1)), Put(item("T#3", "META"))]
    with pytest.raises(ConflictError) as caught:
        store.commit(ops)
    assert caught.value.failed == [("T#2", "META")]
    assert store.get("T#1", "META") is None
    assert store.get("T#3", "META") is None
    assert store.get("T#2", "META") == item("T#2", "META")


def test_multi_item_commit_names_every_failed_key_and_applies_all_on_success(store: Store) -> None:
    a, b, c = item("A", "1"), item("B", "1"), item("C", "1")
    create(store, a, b, c)

    # updates, a delete and a check in one commit; two conditions fail
    ops: list[Op] = [
        bump(a),
        Put(replace(b, version=3), expected_version=2),  # stale: b is at 1
        Delete("C", "1", expected_version=1),
        Check("D", "1", expected_version=1),  # missing
        Put(item("E", "1")),
    ]
    with pytest.raises(ConflictError) as caught:
        store.commit(ops)
    assert sorted(caught.value.failed) == [("B", "1"), ("D", "1")]
    assert store.get_many([("A", "1"), ("B", "1"), ("C", "1"), ("E", "1")]) == [a, b, c]

    store.commit([bump(a, data={"moved": True}), bump(b), Delete("C", "1", expected_version=1)])
    assert store.get("A", "1") == Item("A", "1", {"moved": True}, 2)
    assert store.get("B", "1") == replace(b, version=2)
    assert store.get("C", "1") is None


def test_a_full_size_commit(store: Store) -> None:
    items = [item("BULK", f"{i:03d}") for i in range(MAX_OPS_PER_COMMIT)]
    store.commit([Put(it) for it in items])
    assert store.get_many(keys(items)) == items


INVALID_COMMITS: dict[str, list[Op]] = {
    "empty": [],
    "too many ops": [Put(item("T", f"{i:03d}")) for i in range(MAX_OPS_PER_COMMIT + 1)],
    "same key twice": [Put(item("T#1", "META")), Check("T#1", "META", expected_version=1)],
    "new item not at version 1": [Put(item("T#1", "META", version=2))],
    "update not at expected + 1": [Put(item("T#1", "META", version=3), expected_version=1)],
    "update keeping the version": [Put(item("T#1", "META", version=1), expected_version=1)],
    "empty sort key": [Put(item("T#1", ""))],
    "empty index key": [Put(Item("T#1", "META", {}, 1, {IndexName.QUEUE: ("Q#p#ready", "")}))],
    "body over the item limit": [Put(item("T#1", "META", blob="x" * MAX_ITEM_BYTES))],
}


@pytest.mark.parametrize("name", list(INVALID_COMMITS))
def test_invalid_commits_raise_value_error_and_write_nothing(store: Store, name: str) -> None:
    store.commit([Put(item("SEEN", "META"))])
    with pytest.raises(ValueError):
        store.commit(INVALID_COMMITS[name])
    assert store.query("T", limit=10).items == []
    assert store.query("T#1", limit=10).items == []
    assert store.get("SEEN", "META") == item("SEEN", "META")


# -- reads -----------------------------------------------------------------------------------


def test_get_many_keeps_the_order_given_and_skips_missing(store: Store) -> None:
    items = [item(f"T#{i}", "META", i=i) for i in range(5)]
    create(store, *items)
    asked = [("T#3", "META"), ("T#404", "META"), ("T#0", "META"), ("T#4", "X"), ("T#1", "META")]
    assert store.get_many(asked) == [items[3], items[0], items[1]]
    assert store.get_many([]) == []
    assert store.get_many([("T#404", "META")]) == []
    # a key asked twice is answered twice
    assert store.get_many([("T#2", "META"), ("T#2", "META")]) == [items[2], items[2]]


def test_get_many_beyond_one_batch(store: Store) -> None:
    items = [item("MANY", f"{i:04d}") for i in range(250)]
    create(store, *items)
    wanted = [(it.pk, it.sk) for it in reversed(items)] + [("MANY", "missing")]
    assert store.get_many(wanted) == list(reversed(items))


def test_query_by_prefix_ascending_and_descending(store: Store) -> None:
    create(
        store,
        item("T#1", "META"),
        item("T#1", "EV#0002"),
        item("T#1", "EV#0001"),
        item("T#1", "EV#0010"),
        item("T#1", "EVX"),
        item("T#2", "EV#0001"),  # another partition
    )
    asc = store.query("T#1", sk_prefix="EV#")
    assert [it.sk for it in asc.items] == ["EV#0001", "EV#0002", "EV#0010"]
    assert asc.cursor is None
    desc = store.query("T#1", sk_prefix="EV#", descending=True)
    assert [it.sk for it in desc.items] == ["EV#0010", "EV#0002", "EV#0001"]
    assert [it.sk for it in store.query("T#1").items] == ["EV#0001", "EV#0002", "EV#0010", "EVX", "META"]
    assert store.query("T#1", sk_prefix="NOPE").items == []
    assert store.query("T#404").items == []
    assert store.query("T#404").cursor is None


def test_query_orders_by_code_point(store: Store) -> None:
    sks = ["a", "B", "b", "a0", "ä", "z", "€", "\U0001f600", "a\U0001f600", "Z"]
    create(store, *[item("ORD", sk) for sk in sks])
    assert [it.sk for it in store.query("ORD", limit=100).items] == sorted(sks)
    assert [it.sk for it in store.query("ORD", sk_prefix="a").items] == ["a", "a0", "a\U0001f600"]


def test_prefix_matching_at_the_top_of_unicode(store: Store) -> None:
    """U+10FFFF is the largest code point: a prefix range must still hold keys that use it."""
    top = "\U0010ffff"
    sks = ["a", f"a{top}", f"a{top}{top}", f"a{top}b", "b", top, f"{top}x", "\ud7ffz", "\ue000"]
    create(store, *[item("TOP", sk) for sk in sks])
    assert [it.sk for it in store.query("TOP", limit=100).items] == sorted(sks)
    assert [it.sk for it in store.query("TOP", sk_prefix="a").items] == [
        "a",
        f"a{top}",
        f"a{top}b",
        f"a{top}{top}",
    ]
    assert [it.sk for it in store.query("TOP", sk_prefix=f"a{top}").items] == [
        f"a{top}",
        f"a{top}b",
        f"a{top}{top}",
    ]
    assert [it.sk for it in store.query("TOP", sk_prefix=top).items] == [top, f"{top}x"]
    assert [it.sk for it in store.query("TOP", sk_prefix="\ud7ff").items] == ["\ud7ffz"]
    indexed = [Item(f"T#{n}", "META", {}, 1, {Q: ("Q#top", sk)}) for n, sk in enumerate(sks)]
    create(store, *indexed)
    got = store.query_index(Q, "Q#top", sk_prefix="a", limit=100).items
    assert [it.indexes[Q][1] for it in got] == ["a", f"a{top}", f"a{top}b", f"a{top}{top}"]
    got = store.query_index(Q, "Q#top", limit=100).items
    assert [it.indexes[Q][1] for it in got] == sorted(sks)


@pytest.mark.parametrize("limit", [0, -1, 1001])
def test_limit_out_of_range_is_a_validation_error(store: Store, limit: int) -> None:
    with pytest.raises(TaskgateError) as caught:
        store.query("T#1", limit=limit)
    assert caught.value.code is ErrorCode.VALIDATION
    with pytest.raises(TaskgateError) as caught:
        store.query_index(Q, "Q#p#ready", limit=limit)
    assert caught.value.code is ErrorCode.VALIDATION


def test_limit_bounds_are_accepted(store: Store) -> None:
    create(store, item("T#1", "A"), item("T#1", "B"))
    assert len(store.query("T#1", limit=1).items) == 1
    assert len(store.query("T#1", limit=1000).items) == 2
    assert store.query_index(Q, "Q#x", limit=1000).items == []


# -- indexes ---------------------------------------------------------------------------------


def queued(task: str, priority: int, project: str = "p", status: str = "ready") -> Item:
    return Item(
        f"T#{task}", "META", {"id": task}, 1, {Q: (f"Q#{project}#{status}", f"{priority:010d}#{task}")}
    )


def test_index_keys_are_the_index_order_without_bodies(store: Store) -> None:
    create(
        store,
        queued("c", 5),
        queued("a", 1),
        queued("b", 5),
        queued("d", 10),
        queued("e", 2, status="claimed"),
        queued("f", 0, project="other"),
    )
    full = store.query_index(Q, "Q#p#ready").items
    keys = store.query_index_keys(Q, "Q#p#ready")
    assert [(k.pk, k.sk, k.index_sk) for k in keys] == [(i.pk, i.sk, i.indexes[Q][1]) for i in full]
    assert [k.pk for k in keys] == ["T#a", "T#b", "T#c", "T#d"]
    assert [k.pk for k in store.query_index_keys(Q, "Q#p#ready", limit=2)] == ["T#a", "T#b"]
    assert store.query_index_keys(Q, "Q#nothing") == []
    with pytest.raises(TaskgateError) as caught:
        store.query_index_keys(Q, "Q#p#ready", limit=0)
    assert caught.value.code is ErrorCode.VALIDATION


def test_index_keys_follow_writes(store: Store) -> None:
    create(store, *(queued(f"t{n:03d}", n) for n in range(120)))
    assert [k.pk for k in store.query_index_keys(Q, "Q#p#ready", limit=110)] == [
        f"T#t{n:03d}" for n in range(110)
    ]
    store.commit([Delete("T#t000", "META", 1)])
    assert store.query_index_keys(Q, "Q#p#ready", limit=1)[0].pk == "T#t001"


def test_queue_index_orders_by_sort_key(store: Store) -> None:
    create(
        store,
        queued("c", 5),
        queued("a", 1),
        queued("b", 5),
        queued("d", 10),
        queued("e", 2, status="claimed"),
        queued("f", 0, project="other"),
    )
    page = store.query_index(Q, "Q#p#ready")
    assert [it.data["id"] for it in page.items] == ["a", "b", "c", "d"]
    assert page.cursor is None
    desc = store.query_index(Q, "Q#p#ready", descending=True)
    assert [it.data["id"] for it in desc.items] == ["d", "c", "b", "a"]
    assert [it.indexes[Q][1] for it in page.items] == [
        "0000000001#a",
        "0000000005#b",
        "0000000005#c",
        "0000000010#d",
    ]
    assert [it.data["id"] for it in store.query_index(Q, "Q#p#ready", sk_prefix="0000000005#").items] == [
        "b",
        "c",
    ]
    assert [it.data["id"] for it in store.query_index(Q, "Q#p#claimed").items] == ["e"]
    assert store.query_index(Q, "Q#p#done").items == []


def test_indexes_are_sparse(store: Store) -> None:
    create(store, queued("a", 1), item("T#b", "META"), queued("c", 2))
    assert [it.pk for it in store.query_index(Q, "Q#p#ready").items] == ["T#a", "T#c"]
    assert store.query_index(K, "L#0").items == []
    assert store.query_index(K, "KH#x").items == []


def test_update_moves_and_removes_index_entries(store: Store) -> None:
    a = queued("a", 1)
    create(store, a, queued("b", 2))

    # ready -> claimed: leaves the ready queue, enters the claimed queue and a second index
    claimed = replace(
        a,
        version=2,
        indexes={Q: ("Q#p#claimed", "0000000001#a"), K: ("L#3", "2024-01-01T00:10:00Z#a")},
    )
    store.commit([Put(claimed, expected_version=1)])
    assert [it.data["id"] for it in store.query_index(Q, "Q#p#ready").items] == ["b"]
    assert store.query_index(Q, "Q#p#claimed").items == [claimed]
    assert store.query_index(K, "L#3").items == [claimed]

    # an update without any index takes the item out of every index
    done = replace(claimed, version=3, indexes={})
    store.commit([Put(done, expected_version=2)])
    assert store.query_index(Q, "Q#p#claimed").items == []
    assert store.query_index(K, "L#3").items == []
    assert store.get("T#a", "META") == done

    # a deleted item leaves its index
    store.commit([Delete("T#b", "META", expected_version=1)])
    assert store.query_index(Q, "Q#p#ready").items == []


def test_lookup_index(store: Store) -> None:
    cred = Item("C#1", "META", {"name": "agent"}, 1, {K: ("KH#deadbeef", "KH#deadbeef")})
    create(store, cred, item("C#2", "META"))
    assert store.query_index(K, "KH#deadbeef", limit=2).items == [cred]
    assert store.query_index(K, "KH#other", limit=2).items == []


def leased(task: str, shard: int, expires: str) -> Item:
    return Item(f"T#{task}", "META", {"id": task}, 1, {K: (f"L#{shard}", f"{expires}#{task}")})


def test_lease_index_sk_lt_finds_expired(store: Store) -> None:
    create(
        store,
        leased("a", 1, "2024-05-01T10:00:00Z"),
        leased("b", 1, "2024-05-01T09:59:59Z"),
        leased("c", 1, "2024-05-01T10:00:01Z"),
        leased("d", 1, "2024-05-01T08:00:00Z"),
        leased("e", 2, "2024-05-01T08:00:00Z"),  # other shard
    )
    now = "2024-05-01T10:00:00Z"
    expired = store.query_index(K, "L#1", sk_lt=now)
    assert [it.data["id"] for it in expired.items] == ["d", "b"]  # "a" expires at now: not before
    assert expired.cursor is None
    desc = store.query_index(K, "L#1", sk_lt=now, descending=True)
    assert [it.data["id"] for it in desc.items] == ["b", "d"]
    assert store.query_index(K, "L#1", sk_lt="2024-05-01T08:00:00Z").items == []

    first = store.query_index(K, "L#1", sk_lt=now, limit=1)
    assert [it.data["id"] for it in first.items] == ["d"]
    assert first.cursor is not None
    second = store.query_index(K, "L#1", sk_lt=now, limit=1, cursor=first.cursor)
    assert [it.data["id"] for it in second.items] == ["b"]
    assert second.cursor is None


ISKS = ["a", "ab", "abc", "abd", "ab\U0001f600", "ac", "b", "ba", "\u00e9", "\U0001f600"]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize(
    ("sk_prefix", "sk_lt"),
    [
        ("", None),
        ("ab", None),
        ("", "abd"),
        ("ab", "abd"),  # lt inside the prefix range
        ("ab", "ab"),  # lt at the prefix: nothing
        ("ab", "aa"),  # lt below the prefix: nothing
        ("ab", "ac"),  # lt just above the prefix range: no effect
        ("ab", "z"),
        ("a", "ab\U0001f600"),
        ("zz", "zzz"),
        ("", ""),
    ],
)
def test_index_prefix_and_lt_match_a_brute_force_oracle(
    store: Store, sk_prefix: str, sk_lt: str | None, descending: bool
) -> None:
    """Every combination of sk_prefix, sk_lt and direction, paged by 2, against a plain filter."""
    items = [Item(f"T#{n}", "META", {"isk": isk}, 1, {Q: ("Q#p#ready", isk)}) for n, isk in enumerate(ISKS)]
    create(store, *items)
    want = sorted(
        (isk for isk in ISKS if isk.startswith(sk_prefix) and (sk_lt is None or isk < sk_lt)),
        reverse=descending,
    )
    got = drain(
        lambda cursor: store.query_index(
            Q, "Q#p#ready", sk_prefix=sk_prefix, sk_lt=sk_lt, limit=2, cursor=cursor, descending=descending
        )
    )
    assert [it.indexes[Q][1] for it in got] == want


# -- pagination ------------------------------------------------------------------------------


def test_cursor_pagination_across_pages(store: Store) -> None:
    items = [item("P", f"EV#{i:04d}", i=i) for i in range(23)]
    create(store, *items, item("P", "META"), item("P", "EA"))
    pages: list[Page] = []
    cursor: str | None = None
    while True:
        page = store.query("P", sk_prefix="EV#", limit=5, cursor=cursor)
        pages.append(page)
        if page.cursor is None:
            break
        cursor = page.cursor
    assert [len(p.items) for p in pages] == [5, 5, 5, 5, 3]
    assert all(p.cursor is not None for p in pages[:-1])
    assert [it for p in pages for it in p.items] == items


@pytest.mark.parametrize(("total", "pages"), [(5, 1), (10, 2), (4, 1), (0, 1), (1, 1), (6, 2)])
def test_exactly_limit_items_end_with_no_cursor(store: Store, total: int, pages: int) -> None:
    """A page with a cursor is full and something follows it; no cursor means nothing more."""
    items = [item("P", f"EV#{i:04d}") for i in range(total)]
    create(store, *items, item("P", "Z"))  # an item outside the prefix right after the last one
    got = drain(lambda c: store.query("P", sk_prefix="EV#", limit=5, cursor=c), expect_pages=pages)
    assert got == items
    got_desc = drain(
        lambda c: store.query("P", sk_prefix="EV#", limit=5, cursor=c, descending=True), expect_pages=pages
    )
    assert got_desc == items[::-1]


@pytest.mark.parametrize("sk_prefix", ["", "00"])
def test_exactly_limit_items_in_an_index_end_with_no_cursor(store: Store, sk_prefix: str) -> None:
    # with the prefix, one more item of the partition follows the last match
    create(store, *[queued(f"t{i}", i) for i in range(5)], queued("x", 1, status="claimed"))
    store.commit([Put(Item("T#y", "META", {"id": "y"}, 1, {Q: ("Q#p#ready", "9#y")}))])
    page = store.query_index(Q, "Q#p#ready", sk_prefix=sk_prefix, limit=5 if sk_prefix else 6)
    assert len(page.items) == (5 if sk_prefix else 6)
    assert page.cursor is None
    page = store.query_index(Q, "Q#p#ready", sk_prefix="00", limit=4)
    assert page.cursor is not None
    rest = store.query_index(Q, "Q#p#ready", sk_prefix="00", limit=4, cursor=page.cursor)
    assert [it.data["id"] for it in rest.items] == ["t4"]
    assert rest.cursor is None


def test_descending_pagination(store: Store) -> None:
    items = [item("P", f"EV#{i:04d}") for i in range(23)]
    create(store, *items)
    got = drain(lambda c: store.query("P", limit=5, cursor=c, descending=True), expect_pages=5)
    assert got == items[::-1]
    got = drain(lambda c: store.query("P", limit=1, cursor=c), expect_pages=23)
    assert got == items


@pytest.mark.parametrize("descending", [False, True])
def test_index_pagination_with_ties_loses_and_repeats_nothing(store: Store, descending: bool) -> None:
    """Many items share an index sort key; pages of 4 cut through the ties."""
    items = [
        Item(f"T#{pk}", sk, {"n": n}, 1, {Q: ("Q#p#ready", f"{n % 3:010d}")})
        for n, (pk, sk) in enumerate((pk, sk) for pk in "dacbe" for sk in ("A", "B", "C"))
    ]
    create(store, *items, queued("other", 0, status="claimed"))
    got = drain(
        lambda c: store.query_index(Q, "Q#p#ready", limit=4, cursor=c, descending=descending),
        expect_pages=4,
    )
    assert sorted(keys(got)) == sorted(keys(items))
    assert len(set(keys(got))) == len(items)
    # ordered by the index sort key, ties by (pk, sk): the port's documented order
    want = sorted(items, key=lambda it: (it.indexes[Q][1], it.pk, it.sk), reverse=descending)
    assert got == want


def test_pagination_sees_items_added_behind_and_ahead(store: Store) -> None:
    """A cursor is a position, not a snapshot: later items after it show up, earlier ones do not."""
    create(store, *[item("P", f"EV#{i:04d}") for i in range(0, 20, 2)])
    first = store.query("P", limit=3)
    assert [it.sk for it in first.items] == ["EV#0000", "EV#0002", "EV#0004"]
    create(store, item("P", "EV#0001"), item("P", "EV#0005"))
    rest = drain(lambda c: store.query("P", limit=3, cursor=c or first.cursor))
    assert [it.sk for it in rest][:2] == ["EV#0005", "EV#0006"]
    assert "EV#0001" not in [it.sk for it in rest]


def test_cursor_of_the_last_item_deleted_still_resumes(store: Store) -> None:
    items = [item("P", f"EV#{i:04d}") for i in range(6)]
    create(store, *items)
    first = store.query("P", limit=3)
    store.commit([Delete("P", "EV#0002", expected_version=1)])
    rest = store.query("P", limit=3, cursor=first.cursor)
    assert rest.items == items[3:]
    assert rest.cursor is None


GARBAGE_CURSORS = [
    "!!!not-a-cursor",
    "e30",  # {} : JSON but no position
    cursors.encode({"other": 1}),
    "WzEsMiwzXQ",  # [1,2,3]: JSON, not an object
    "bm90IGpzb24",  # "not json"
    "\u00e9\u00e9\u00e9",
]


@pytest.mark.parametrize("garbage", GARBAGE_CURSORS)
def test_garbage_cursor_is_a_validation_error(store: Store, garbage: str) -> None:
    create(store, item("P", "A"), queued("a", 1))
    with pytest.raises(TaskgateError) as caught:
        store.query("P", cursor=garbage)
    assert caught.value.code is ErrorCode.VALIDATION
    with pytest.raises(TaskgateError) as caught:
        store.query_index(Q, "Q#p#ready", cursor=garbage)
    assert caught.value.code is ErrorCode.VALIDATION


def test_cursors_are_opaque_strings(store: Store) -> None:
    create(store, *[queued(f"t{i}", i) for i in range(3)], *[item("P", f"{i}") for i in range(3)])
    for page in (store.query("P", limit=1), store.query_index(Q, "Q#p#ready", limit=1)):
        assert isinstance(page.cursor, str)
        assert page.cursor.isascii()
        assert "#" not in page.cursor and "=" not in page.cursor


# -- bodies ----------------------------------------------------------------------------------

BODIES: dict[str, dict[str, Any]] = {
    "nested": {"a": {"b": {"c": [1, {"d": [None, True, False]}]}}, "list": [[], {}, [[]]]},
    "unicode": {"t": "h\u00e9llo \u4e16\u754c \U0001f680", "\u00fc\u00f1\u00ee": "k\u00eay", "nul": "a\x00b"},
    "escapes": {"q": '"quoted" \\ back\\slash\nnew\tline', "html": "<b>&amp;</b>"},
    "empty strings": {"": "", "e": "", "l": [""]},
    "large ints": {"big": 2**70, "neg": -(2**63) - 1, "zero": 0, "max64": 2**63 - 1},
    "floats": {"f": 0.1, "g": 1e300, "h": -2.5e-308, "i": 123456789.123456789, "neg0": -0.0},
    "empty": {},
}


@pytest.mark.parametrize("name", list(BODIES))
def test_json_bodies_round_trip(store: Store, name: str) -> None:
    body = BODIES[name]
    store.commit([Put(Item("B#1", "META", body))])
    got = store.get("B#1", "META")
    assert got is not None
    assert got.data == body
    assert type(got.data) is dict
    _assert_same_types(got.data, body)
    assert store.query("B#1").items[0].data == body
    assert store.get_many([("B#1", "META")])[0].data == body


def _assert_same_types(got: Any, want: Any) -> None:
    """== says 1 == 1.0 and 0.0 == -0.0; bodies must keep int vs float and the float's sign."""
    assert type(got) is type(want)
    if isinstance(want, dict):
        for k in want:
            _assert_same_types(got[k], want[k])
    elif isinstance(want, list):
        for g, w in zip(got, want, strict=True):
            _assert_same_types(g, w)
    elif isinstance(want, float):
        assert math.copysign(1.0, got) == math.copysign(1.0, want)
        assert got.hex() == want.hex()


def test_versions_and_large_bodies_round_trip(store: Store) -> None:
    body = {"text": "x" * 100_000, "items": list(range(2000))}
    it = Item("B#1", "META", body)
    store.commit([Put(it)])
    for _ in range(3):
        current = store.get("B#1", "META")
        assert current is not None
        store.commit([bump(current)])
    assert store.get("B#1", "META") == replace(it, version=4)


# -- races (real threads) --------------------------------------------------------------------

THREADS = 16


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=THREADS) as executor:
        yield executor


def test_racing_creates_have_exactly_one_winner(racing_store: Store, pool: ThreadPoolExecutor) -> None:
    """16 threads put the same new key at once, 50 times: exactly one wins each time.

    DynamoDB runs through `racing_store`, which serializes moto's requests: moto itself is not
    atomic under concurrency (10-33% of such trials had two winners),
    while real DynamoDB guarantees per-item atomicity. What is tested is our condition
    (must-not-exist); a missing or wrong condition still yields several winners. SQLite runs
    unserialized, one connection per thread on the same store object.
    """
    barrier = threading.Barrier(THREADS)

    def racer(trial: int, me: int) -> bool:
        barrier.wait(timeout=30)
        try:
            racing_store.commit([Put(Item(f"RACE#{trial}", "META", {"winner": me}))])
        except ConflictError as exc:
            assert exc.failed == [(f"RACE#{trial}", "META")]
            return False
        return True

    for trial in range(50):
        results = list(pool.map(partial(racer, trial), range(THREADS)))
        assert sum(results) == 1, f"trial {trial}: {sum(results)} winners"
        stored = racing_store.get(f"RACE#{trial}", "META")
        assert stored is not None
        assert results[stored.data["winner"]] is True
        assert stored.version == 1


def test_racing_increments_lose_no_update(racing_store: Store, pool: ThreadPoolExecutor) -> None:
    """16 threads each add 1 to a counter 20 times by read-version-then-conditional-write,
    retrying on ConflictError: the final count is exactly 320 (no lost update).

    DynamoDB runs through `racing_store` (moto's requests serialized, since moto is not atomic
    under concurrency); threads still interleave between the read and the conditional write,
    which is the race under test. SQLite runs unserialized.
    """
    racing_store.commit([Put(Item("COUNTER", "META", {"n": 0}))])
    per_thread = 20
    barrier = threading.Barrier(THREADS)

    def incrementer(_: int) -> int:
        barrier.wait(timeout=30)
        conflicts = 0
        for _ in range(per_thread):
            while True:
                current = racing_store.get("COUNTER", "META")
                assert current is not None
                try:
                    racing_store.commit([bump(current, data={"n": current.data["n"] + 1})])
                    break
                except ConflictError:
                    conflicts += 1
        return conflicts

    list(pool.map(incrementer, range(THREADS)))
    final = racing_store.get("COUNTER", "META")
    assert final is not None
    assert final.data["n"] == THREADS * per_thread
    assert final.version == THREADS * per_thread + 1


def test_racing_transfers_keep_the_total(racing_store: Store, pool: ThreadPoolExecutor) -> None:
    """Threads move 1 unit between two accounts with two-item commits (each guarded by both
    versions), retrying on ConflictError: the total never changes and every move lands.

    Exercises the multi-item path (TransactWriteItems on DynamoDB, moto serialized as above).
    """
    racing_store.commit([Put(Item("ACC", "A", {"n": 1000})), Put(Item("ACC", "B", {"n": 0}))])
    threads, moves = 8, 10
    barrier = threading.Barrier(threads)

    def mover(_: int) -> None:
        barrier.wait(timeout=30)
        for _ in range(moves):
            while True:
                # get_many is not a snapshot on either adapter (BatchGetItem is not one either):
                # a torn read is possible, and then the versions in the commit catch it.
                a, b = racing_store.get_many([("ACC", "A"), ("ACC", "B")])
                try:
                    racing_store.commit(
                        [bump(a, data={"n": a.data["n"] - 1}), bump(b, data={"n": b.data["n"] + 1})]
                    )
                    break
                except ConflictError:
                    pass

    list(pool.map(mover, range(threads)))
    a, b = racing_store.get_many([("ACC", "A"), ("ACC", "B")])
    assert (a.data["n"], b.data["n"]) == (1000 - threads * moves, threads * moves)
    assert a.version == b.version == threads * moves + 1


# -- leases: a condition on the item's expiry, checked inside the commit ------------------------

T0 = "2026-01-01T00:00:00.000000Z"
T1 = "2026-01-01T00:30:00.000000Z"  # the lease's end
T2 = "2026-01-01T01:00:00.000000Z"


def test_expires_round_trips_and_a_put_without_it_clears_it(store: Store) -> None:
    it = Item("T#1", "META", {"s": "claimed"}, 1, expires=T1)
    store.commit([Put(it)])
    assert store.get("T#1", "META") == it
    store.commit([bump(it, data={"s": "ready"}, expires=None)])
    got = store.get("T#1", "META")
    assert got is not None and got.expires is None and got.version == 2


@pytest.mark.parametrize("op_kind", ["put", "check", "delete"])
def test_alive_at_holds_only_while_the_stored_lease_runs(store: Store, op_kind: str) -> None:
    """`alive_at`: the stored item's expires must be later than it; equal is already expired."""
    leased = Item("T#1", "META", {"s": "claimed"}, 1, expires=T1)
    store.commit([Put(leased)])

    def op(at: str) -> Op:
        if op_kind == "put":
            return Put(replace(leased, version=2, data={"s": "done"}), expected_version=1, alive_at=at)
        if op_kind == "check":
            return Check("T#1", "META", 1, alive_at=at)
        return Delete("T#1", "META", 1, alive_at=at)

    for lapsed in (T1, T2):
        with pytest.raises(ConflictError) as caught:
            # alongside another write, so the whole transaction must be refused
            store.commit([op(lapsed), Put(item("T#2", "META"))])
        assert caught.value.failed == [("T#1", "META")]
        assert store.get("T#1", "META") == leased
        assert store.get("T#2", "META") is None
    with pytest.raises(ConflictError):
        store.commit([op(T2)])  # and alone (a single conditional write / a lone read)
    store.commit([op(T0)])
    after = store.get("T#1", "META")
    if op_kind == "put":
        assert after is not None and after.data == {"s": "done"}
    elif op_kind == "check":
        assert after == leased
    else:
        assert after is None


def test_an_item_without_expires_never_lapses(store: Store) -> None:
    plain = item("T#1", "META")
    store.commit([Put(plain)])
    store.commit([Put(replace(plain, version=2), 1, alive_at=T2)])
    got = store.get("T#1", "META")
    assert got is not None and got.version == 2


def test_alive_at_needs_an_existing_item(store: Store) -> None:
    with pytest.raises(ValueError):
        store.commit([Put(item("T#1", "META"), alive_at=T0)])  # must-not-exist has no lease to check


# -- text that cannot be encoded is refused before anything is written --------------------------


def test_a_lone_surrogate_is_refused_and_nothing_is_written(store: Store) -> None:
    with pytest.raises(Unencodable):
        store.commit([Put(item("T#2", "META")), Put(Item("T#1", "META", {"title": "bad \ud800 text"}))])
    assert store.get("T#1", "META") is None and store.get("T#2", "META") is None
    with pytest.raises(Unencodable):
        store.commit([Put(Item("T#1", "META", {"\udfff": "key"}))])
    # a well-formed pair (one astral character) and every other code point are fine
    ok = Item("T#1", "META", {"title": "😀 \u0000 \uffff \U0010ffff é"})
    store.commit([Put(ok)])
    assert store.get("T#1", "META") == ok
