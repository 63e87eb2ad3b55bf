"""domain.spread: each caller's own order inside a priority band, the bands in priority order."""

from __future__ import annotations

from taskgate.domain.spread import spread
from taskgate.service.offers import Offers

# (task id, priority), in queue order: priority high to low, then age.
QUEUE = [("p-1", 9), ("p-2", 9), *((f"p-{n}", 5) for n in range(3, 35)), ("p-35", 1), ("p-36", 1)]


def order(caller: str, queue: list[tuple[str, int]] = QUEUE) -> list[str]:
    return [t for t, _ in spread(queue, caller, band=lambda t: t[1], task_id=lambda t: t[0])]


def test_bands_keep_priority_order_and_lose_no_task() -> None:
    for caller in ["key_aaaaaaaaaaaa", "key_bbbbbbbbbbbb"]:
        got = order(caller)
        assert sorted(got) == sorted(t for t, _ in QUEUE)
        assert set(got[:2]) == {"p-1", "p-2"}
        assert set(got[2:34]) == {f"p-{n}" for n in range(3, 35)}
        assert set(got[34:]) == {"p-35", "p-36"}


def test_two_callers_get_different_first_choices_among_equals() -> None:
    a, b = order("key_aaaaaaaaaaaa"), order("key_bbbbbbbbbbbb")
    assert a[2] != b[2]  # their first pick of the 32 equal tasks
    assert a != b


def test_the_order_is_stable_per_caller() -> None:
    """A caller's order of two tasks depends on those tasks alone: not on where the queue holds
    them, nor on which other tasks it holds (a caller that asks again after the queue moved sees
    the tasks it saw before in the same order). A shuffle, or an order by position, fails this."""
    caller = "key_aaaaaaaaaaaa"
    before = order(caller)
    band = [t for t in QUEUE if t[1] == 5]
    moved = [QUEUE[0], QUEUE[1], *reversed(band[5:]), *band[:5], QUEUE[-2], QUEUE[-1]]
    assert moved != QUEUE and order(caller, moved) == before
    fewer = [t for t in QUEUE if t[0] not in ("p-4", "p-17", "p-30")]
    assert order(caller, fewer) == [t for t in before if t not in ("p-4", "p-17", "p-30")]
    more = [*QUEUE[:20], ("p-99", 5), *QUEUE[20:]]
    assert [t for t in order(caller, more) if t != "p-99"] == before


def test_sixteen_callers_mostly_pick_different_tasks() -> None:
    """What keeps 16 agents that each claim "the first" from colliding: over 32 equal tasks
    their first choices are nearly all distinct (13 expected for independent uniform picks)."""
    equal = [(f"p-{n}", 5) for n in range(1, 33)]
    firsts = {order(f"key_{i:012x}", equal)[0] for i in range(16)}
    assert len(firsts) >= 10


def test_one_band_of_one_is_left_alone() -> None:
    assert order("anyone", [("p-1", 3), ("p-2", 2), ("p-3", 1)]) == ["p-1", "p-2", "p-3"]


def test_tasks_offered_to_others_go_to_the_back_of_their_band_only() -> None:
    mine = order("key_aaaaaaaaaaaa")
    first = mine[2]  # the caller's first pick among the 32 tasks of priority 5
    got = [
        t
        for t, _ in spread(
            QUEUE, "key_aaaaaaaaaaaa", band=lambda t: t[1], task_id=lambda t: t[0], offered={first, "p-1"}
        )
    ]
    assert sorted(got) == sorted(t for t, _ in QUEUE)
    assert got[:2] == ["p-2", "p-1"]  # the top band: p-1 moved behind p-2, still before priority 5
    assert got[33] == first and got[2:33] == [t for t in mine[2:34] if t != first]
    assert got[34:] == mine[34:]


P1, P2 = ("P#demo", "TASK#00000001"), ("P#demo", "TASK#00000002")


def test_offers_hold_a_task_for_its_caller_until_the_ttl_ends() -> None:
    now = [0.0]
    offers = Offers(ttl_s=10, clock=lambda: now[0])
    offers.offer(1, "a", P1)
    assert offers.to_others(1, "b", [P1, P2]) == {P1}
    assert offers.to_others(1, "a", [P1]) == set()  # never hidden from its own caller
    assert offers.to_others(2, "b", [P1]) == set()  # another store
    offers.offer(1, "b", P1)  # a's offer still runs: b does not take it over
    assert offers.to_others(1, "a", [P1]) == set()
    now[0] = 10.0
    assert offers.to_others(1, "b", [P1]) == set()
    offers.offer(1, "b", P1)
    assert offers.to_others(1, "a", [P1]) == {P1}
