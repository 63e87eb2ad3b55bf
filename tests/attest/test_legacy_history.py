"""Histories written before the chain existed: a task an older taskgate stored (events without
`prev`, the task without `history_head`) audits as "N unchained events, chain intact" once the
new code has added events, never as a mismatch and never as verified; and taking the chain apart
to make a chained history look like such a task is still found (SQLite, DynamoDB on moto)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgate.domain.chain import digest
from taskgate.domain.models import Phase, Status
from taskgate.domain.run_report import Evidence
from taskgate.service import audit, claims, records, review
from tests.attest.support import raw_get, raw_set, signing_world
from tests.service.scenarios import Scene, new_scene, reach
from tests.support.evidence import run_verifier
from tests.support.world import World


@pytest.fixture(params=["sqlite", "dynamodb"])
def signed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with signing_world(request.param, tmp_path) as world:
        yield world


def _events(world: World, tid: str) -> list[str]:
    page = world.store.query(records.task_pk(tid), sk_prefix="H#", limit=200)
    return [i.sk for i in page.items]


def _audit(world: World) -> audit.Audit:
    return audit.verify_project(world.ctx, world.human, "demo")


def _strip(world: World, tid: str, sks: list[str]) -> None:
    """Store these events as a taskgate before the chain wrote them: the same body, no `prev`."""
    pk = records.task_pk(tid)
    for sk in sks:
        body = raw_get(world.store, pk, sk)
        assert body is not None
        body.pop("prev", None)
        raw_set(world.store, pk, sk, body)


def _set_head(world: World, tid: str, head: str | None) -> None:
    task = raw_get(world.store, *records.task_key(tid))
    assert task is not None
    task.pop("history_head", None)
    if head is not None:
        task["history_head"] = head
    raw_set(world.store, *records.task_key(tid), task)


def _make_legacy(world: World, tid: str) -> int:
    """The task's items as the code before the chain stored them: every event without `prev`, the
    task item without `history_head` (that code had neither field; everything else is the same)."""
    events = _events(world, tid)
    _strip(world, tid, events)
    _set_head(world, tid, None)
    assert "history_head" not in (raw_get(world.store, *records.task_key(tid)) or {})
    return len(events)


def _rechain_after(world: World, tid: str, sk: str) -> None:
    """What someone holding the database does to hide a change to event `sk`: recompute `prev` of
    every event after it from the one before, and the head from the last event."""
    pk = records.task_pk(tid)
    every = _events(world, tid)
    before = raw_get(world.store, pk, sk)
    assert before is not None
    for later in every[every.index(sk) + 1 :]:
        body = raw_get(world.store, pk, later)
        assert body is not None
        body["prev"] = digest(before)
        raw_set(world.store, pk, later, body)
        before = body
    _set_head(world, tid, digest(before))


def _legacy_then_new(world: World) -> tuple[Scene, int]:
    """A task claimed under the old code, then worked on, verified and accepted under the new."""
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.CLAIMED)
    legacy = _make_legacy(world, scene.task_id)
    claims.heartbeat(world.ctx, scene.agent, scene.task_id, scene.token, phase=Phase.TESTING)
    claims.submit(world.ctx, scene.agent, scene.task_id, scene.token, commit_sha="a" * 40, evidence="x")
    run_verifier(world.ctx, scene.verifier, scene.task_id, Evidence.PASS)
    review.accept(world.ctx, world.human, scene.task_id)
    return scene, legacy


def test_a_legacy_task_audits_as_unchained_events_and_an_intact_chain(signed: World) -> None:
    scene, legacy = _legacy_then_new(signed)
    tid = scene.task_id
    events = _events(signed, tid)
    pk = records.task_pk(tid)
    assert legacy >= 2 and len(events) > legacy + 2
    first_new = raw_get(signed.store, pk, events[legacy])
    second_new = raw_get(signed.store, pk, events[legacy + 1])
    assert first_new is not None and second_new is not None
    # The new code's first event follows a task with no head: it holds no prev either.
    assert "prev" not in first_new and second_new["prev"] == digest(first_new)
    done = _audit(signed)
    assert done.ok and done.mismatches == []
    assert done.unchained == {tid: legacy} and done.unchained_events == legacy
    assert done.events == len(events) and done.statements == 2  # the passed run, the acceptance


def test_a_task_never_touched_since_the_chain_began_is_all_unchained(any_world: World) -> None:
    any_world.project()
    tid = any_world.task().id
    fresh = any_world.task(title="chained").id
    legacy = _make_legacy(any_world, tid)
    done = _audit(any_world)
    assert done.ok and done.unchained == {tid: legacy} and fresh not in done.unchained


def test_an_edit_after_the_unchained_events_is_found(any_world: World) -> None:
    scene, legacy = _legacy_then_new(any_world)
    tid = scene.task_id
    events = _events(any_world, tid)
    pk = records.task_pk(tid)
    for edited in (events[legacy], events[legacy + 1]):  # the chain's first event, then the next
        body = raw_get(any_world.store, pk, edited)
        assert body is not None
        saved = dict(body)
        body["actor"] = "human:mallory"
        raw_set(any_world.store, pk, edited, body)
        done = _audit(any_world)
        [mismatch] = done.mismatches
        after = events[events.index(edited) + 1]
        assert mismatch.task_id == tid and mismatch.event == after
        assert f"event {after} does not follow event {edited}" in mismatch.reason
        assert done.unchained == {}  # a task with a mismatch is that, not "legacy"
        raw_set(any_world.store, pk, edited, saved)
    assert _audit(any_world).ok


def _chained_history(world: World) -> str:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    run_verifier(world.ctx, scene.verifier, scene.task_id, Evidence.PASS)
    review.accept(world.ctx, world.human, scene.task_id)
    assert len(_events(world, scene.task_id)) >= 6
    return scene.task_id


def test_stripping_prev_from_a_middle_event_is_a_mismatch_not_legacy(any_world: World) -> None:
    tid = _chained_history(any_world)
    events = _events(any_world, tid)
    _strip(any_world, tid, [events[3]])
    [mismatch] = _audit(any_world).mismatches
    assert mismatch.event == events[3]
    assert f"event {events[3]} does not follow event {events[2]}: it holds prev None" in mismatch.reason


def test_stripping_prev_from_a_middle_event_and_rechaining_after_it_is_still_found(any_world: World) -> None:
    """Events before it hold a prev: a leading run of events without one can't end there."""
    tid = _chained_history(any_world)
    events = _events(any_world, tid)
    _strip(any_world, tid, [events[3]])
    _rechain_after(any_world, tid, events[3])
    done = _audit(any_world)
    [mismatch] = done.mismatches
    assert mismatch.event == events[3] and "holds prev None" in mismatch.reason
    assert done.unchained == {}


def test_stripping_prev_from_every_event_but_leaving_the_head_is_found(any_world: World) -> None:
    tid = _chained_history(any_world)
    _strip(any_world, tid, _events(any_world, tid))
    done = _audit(any_world)
    [mismatch] = done.mismatches
    assert mismatch.task_id == tid and mismatch.event is None and "chain head" in mismatch.reason
    assert done.unchained == {}


# -- with signed statements: a rewrite to "legacy" that the chain alone cannot tell ----------------


def _legacy_decided_then_edited(world: World) -> tuple[str, int]:
    """Verified under the old code; the new code's first event is the human's acceptance (signed,
    and the chain's first event, so holding no prev), then the human reopens it (unsigned)."""
    scene = new_scene(world, verification_on=True)
    attestor, world.ctx.attestor = world.ctx.attestor, None  # the old code signed nothing
    reach(scene, Status.NEEDS_VERIFICATION)
    run_verifier(world.ctx, scene.verifier, scene.task_id, Evidence.PASS)
    legacy = _make_legacy(world, scene.task_id)
    world.ctx.attestor = attestor
    review.accept(world.ctx, world.human, scene.task_id)
    review.reopen(world.ctx, world.human, scene.task_id, findings=["the slug drops digits"])
    done = _audit(world)
    assert done.ok and done.unchained == {scene.task_id: legacy}
    assert done.statements == 1  # the acceptance
    return scene.task_id, legacy


def test_removing_every_prev_and_the_head_does_not_pass_for_legacy_when_a_statement_names_a_head(
    signed: World,
) -> None:
    tid, _ = _legacy_decided_then_edited(signed)
    _strip(signed, tid, _events(signed, tid))
    _set_head(signed, tid, None)
    done = _audit(signed)
    [mismatch] = done.mismatches
    assert mismatch.task_id == tid and mismatch.event is None
    assert "no chain head, yet it has a signed statement" in mismatch.reason
    assert done.unchained == {}


def test_cutting_the_chain_after_a_signed_statement_does_not_pass_for_legacy(signed: World) -> None:
    """The decision's event is the chain's first and keeps its hash, so its statement still
    matches; the reopening after it, stripped of prev with the head recomputed, would make the whole
    history "unchained" but for the statement showing the chain was kept from the decision on."""
    tid, legacy = _legacy_decided_then_edited(signed)
    events = _events(signed, tid)
    _strip(signed, tid, [events[-1]])
    _rechain_after(signed, tid, events[-1])
    done = _audit(signed)
    [mismatch] = done.mismatches
    assert mismatch.event == events[-1]
    assert (
        f"signed statement of {events[legacy]}" in mismatch.reason and "the chain was cut" in mismatch.reason
    )


def test_a_full_rewrite_to_legacy_with_a_recomputed_head_no_longer_matches_what_was_signed(
    signed: World,
) -> None:
    tid = _chained_history(signed)
    events = _events(signed, tid)
    _strip(signed, tid, events)
    _rechain_after(signed, tid, events[-1])  # the head: the hash of the stripped last event
    done = _audit(signed)
    [mismatch] = done.mismatches
    # Found twice over: the chain is cut after the first statement, and the events the
    # statements name no longer hash to the heads they signed.
    assert "the chain was cut" in mismatch.reason
