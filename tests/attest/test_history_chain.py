"""Each task's history is a hash chain whose head sits on the task item, written in the same
commit: editing, deleting or reordering a stored event directly in SQLite or in the DynamoDB
table (moto) is found, and the audit names the first event that does not match."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from taskgate.domain import dsse
from taskgate.domain.chain import digest, event_sk
from taskgate.domain.models import Phase, Status, VerificationRun
from taskgate.domain.run_report import Evidence
from taskgate.service import attestations, audit, records, review
from taskgate.service.context import Context
from tests.attest.support import raw_delete, raw_get, raw_set, signing_world
from tests.service.scenarios import new_scene, reach
from tests.support.evidence import run_verifier
from tests.support.world import World


def _history(world: World) -> str:
    """A task taken through claim, submit, a passed run and acceptance: seven events or so."""
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    run_verifier(world.ctx, scene.verifier, scene.task_id, Evidence.PASS)
    review.accept(world.ctx, world.human, scene.task_id)
    return scene.task_id


def _events(world: World, tid: str) -> list[str]:
    page = world.store.query(records.task_pk(tid), sk_prefix="H#", limit=200)
    return [i.sk for i in page.items]


def _audit(world: World) -> audit.Audit:
    return audit.verify_project(world.ctx, world.human, "demo")


def test_an_untouched_history_matches_and_every_event_names_the_one_before(any_world: World) -> None:
    tid = _history(any_world)
    done = _audit(any_world)
    assert done.ok and done.tasks == 1 and done.events == len(_events(any_world, tid)) >= 6
    pk = records.task_pk(tid)
    bodies = [raw_get(any_world.store, pk, sk) for sk in _events(any_world, tid)]
    assert bodies[0] is not None and "prev" not in bodies[0]  # the first names nothing
    for before, after in itertools.pairwise(bodies):
        assert after is not None and after["prev"] == digest(before)
    task = raw_get(any_world.store, *records.task_key(tid))
    assert task is not None and task["history_head"] == digest(bodies[-1])


def _edit(world: World, tid: str, sk: str) -> None:
    pk = records.task_pk(tid)
    data = raw_get(world.store, pk, sk)
    assert data is not None
    data["actor"] = "human:mallory"
    raw_set(world.store, pk, sk, data)


def _swap(world: World, tid: str, a: str, b: str, *, fix_seq: bool) -> None:
    """Swap two events' bodies; with fix_seq, each body's seq is made to agree with its new key."""
    pk = records.task_pk(tid)
    da, db = raw_get(world.store, pk, a), raw_get(world.store, pk, b)
    assert da is not None and db is not None
    if fix_seq:
        da["seq"], db["seq"] = db["seq"], da["seq"]
    raw_set(world.store, pk, a, db)
    raw_set(world.store, pk, b, da)


Tamper = Callable[[World, str, list[str]], None]
CASES: dict[str, tuple[Tamper, Callable[[list[str]], str | None], str]] = {
    "edit a middle event": (lambda w, t, e: _edit(w, t, e[2]), lambda e: e[3], "does not follow"),
    "edit the last event": (lambda w, t, e: _edit(w, t, e[-1]), lambda e: None, "chain head"),
    "delete a middle event": (
        lambda w, t, e: raw_delete(w.store, records.task_pk(t), e[2]),
        lambda e: e[3],
        "does not follow",
    ),
    "delete the first event": (
        lambda w, t, e: raw_delete(w.store, records.task_pk(t), e[0]),
        lambda e: e[1],
        "would be the first event",
    ),
    "delete the last event": (
        lambda w, t, e: raw_delete(w.store, records.task_pk(t), e[-1]),
        lambda e: None,
        "chain head",
    ),
    "swap two events": (
        lambda w, t, e: _swap(w, t, e[1], e[2], fix_seq=False),
        lambda e: e[1],
        "not where it was written",
    ),
    "swap two events and their seqs": (
        lambda w, t, e: _swap(w, t, e[1], e[2], fix_seq=True),
        lambda e: e[1],
        "does not follow",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_tampering_is_found_and_the_first_mismatch_named(any_world: World, case: str) -> None:
    tamper, first, reason = CASES[case]
    tid = _history(any_world)
    other = any_world.task(title="untouched").id  # another task's chain stays good
    events = _events(any_world, tid)
    assert _audit(any_world).ok
    tamper(any_world, tid, events)
    done = _audit(any_world)
    assert not done.ok
    [mismatch] = done.mismatches
    assert mismatch.task_id == tid and mismatch.task_id != other
    assert mismatch.event == first(events)
    assert reason in mismatch.reason


def test_the_chain_goes_on_across_every_kind_of_write(any_world: World) -> None:
    """Heartbeats with a phase, edits, cascades: every event is chained, whatever wrote it (a use
    case that forgets fails in Context.commit, so the whole service suite checks this too)."""
    scene = new_scene(any_world)
    reach(scene, Status.BLOCKED)
    assert scene.blocker_id is not None
    from taskgate.service import claims

    c = claims.claim(any_world.ctx, scene.agent, "demo", task_id=scene.blocker_id)
    claims.heartbeat(any_world.ctx, scene.agent, scene.blocker_id, c.token, phase=Phase.TESTING)
    claims.submit(any_world.ctx, scene.agent, scene.blocker_id, c.token, commit_sha="a" * 40, evidence="x")
    review.accept(any_world.ctx, any_world.human, scene.blocker_id)  # its dependent becomes ready
    assert any_world.ctx.task(scene.task_id).status is Status.READY
    done = _audit(any_world)
    assert done.ok and done.tasks == 2


def test_a_commit_of_an_unchained_event_is_refused_before_it_is_written(world: World) -> None:
    from taskgate.service.context import event, put_event, put_task

    world.project()
    tid = world.task().id
    task = world.ctx.task(tid)
    new = task.model_copy(update={"title": "renamed"})
    ev = event(world.human, "updated", project="demo", at=world.clock.now(), task=task)
    ctx: Context = world.ctx
    with pytest.raises(AssertionError, match="not chained"):
        ctx.commit([put_task(task, new), put_event(ev)])
    assert world.ctx.task(tid).title != "renamed"
    assert event_sk(ev.seq) not in _events(world, tid)


@pytest.fixture(params=["sqlite", "dynamodb"])
def signed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with signing_world(request.param, tmp_path) as world:
        yield world


def test_a_history_rewritten_with_every_hash_recomputed_no_longer_matches_what_was_signed(
    signed: World,
) -> None:
    """Whoever can write the database can recompute the chain; not the signed statements, which
    name the chain head at each decision."""
    tid = _history(signed)
    assert _audit(signed).ok and _audit(signed).statements == 2  # the passed run, the acceptance
    pk = records.task_pk(tid)
    events = _events(signed, tid)
    bodies = [raw_get(signed.store, pk, sk) for sk in events]
    bodies[1]["actor"] = "agent:someone-else"  # type: ignore[index]  # who claimed it, rewritten
    prev = None
    for sk, body in zip(events, bodies, strict=True):
        assert body is not None
        if prev is not None:
            body["prev"] = prev
        raw_set(signed.store, pk, sk, body)
        prev = digest(body)
    task = raw_get(signed.store, *records.task_key(tid))
    assert task is not None
    task["history_head"] = prev
    raw_set(signed.store, *records.task_key(tid), task)
    done = _audit(signed)
    [mismatch] = done.mismatches
    run = next(r for r in _runs(signed, tid) if r.attestation_seq is not None)
    assert mismatch.event == event_sk(run.attestation_seq or 0)
    assert "rewritten after it was signed" in mismatch.reason


def _stored_run(world: World) -> tuple[str, VerificationRun, dict[str, Any]]:
    """A task's one decided run, loaded and as stored (the raw body, to edit)."""
    tid = _history(world)
    [run] = _runs(world, tid)
    item = raw_get(world.store, *records.run_key(tid, run.id))
    assert item is not None
    return tid, run, item


def test_a_statement_edited_in_the_database_is_not_signed_any_more(signed: World) -> None:
    tid, run, item = _stored_run(signed)
    env = item["attestation"]
    env["signatures"][0]["sig"] = env["signatures"][0]["sig"][::-1]
    raw_set(signed.store, *records.run_key(tid, run.id), item)
    [mismatch] = _audit(signed).mismatches
    assert "not signed by this server's attestation key" in mismatch.reason


def _runs(world: World, tid: str) -> list[VerificationRun]:
    page = world.store.query(records.task_pk(tid), sk_prefix="R#", limit=50)
    return [records.load(VerificationRun, i) for i in page.items]


def test_a_statement_is_stored_as_text_and_one_changed_character_of_it_is_found(signed: World) -> None:
    tid, run, item = _stored_run(signed)
    stored = item["attestation"]
    # Stored as the statement's text (it compresses; base64 does not), loaded back as the
    # envelope whose payload is exactly the signed bytes.
    assert "payload" not in stored
    assert json.loads(stored["payloadText"])["_type"] == "https://in-toto.io/Statement/v1"
    assert run.attestation is not None
    assert dsse.from_json(run.attestation).payload == stored["payloadText"].encode("utf-8")
    assert attestations.signed_by(signed.ctx.attestor, run.attestation)
    stored["payloadText"] = (
        stored["payloadText"].replace('"PASSED"', '"FAILED"').replace('"WARNED"', '"PASSED"')
    )
    raw_set(signed.store, *records.run_key(tid, run.id), item)
    [mismatch] = _audit(signed).mismatches
    assert "not signed by this server's attestation key" in mismatch.reason


def _three_statements(world: World) -> tuple[str, list[VerificationRun]]:
    """A run that ended in an error, a passed run, the acceptance: three signed statements."""
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    run_verifier(world.ctx, scene.verifier, scene.task_id, None, error="the disk is full")
    run_verifier(world.ctx, scene.verifier, scene.task_id, Evidence.PASS)
    review.accept(world.ctx, world.human, scene.task_id)
    runs = sorted(_runs(world, scene.task_id), key=lambda r: r.attestation_seq or 0)
    assert [r.status for r in runs] == ["error", "passed"]
    return scene.task_id, runs


def _blank_statement(world: World, tid: str, run: VerificationRun) -> None:
    """The run item kept, its statement taken out, as someone holding the database would."""
    item = raw_get(world.store, *records.run_key(tid, run.id))
    assert item is not None
    del item["attestation"], item["attestation_seq"]
    raw_set(world.store, *records.run_key(tid, run.id), item)


@pytest.mark.parametrize("which", ["error", "pass", "acceptance"])
def test_a_signed_statement_removed_from_the_database_is_found(signed: World, which: str) -> None:
    """Deleting a statement edits nothing it names and leaves every hash as it was: the audit
    finds it by the statements' own links (each names the one before it, as a bundle is checked;
    the first one after the gap is named) and by the task's last statement (the head)."""
    tid, (error, passed) = _three_statements(signed)
    done = _audit(signed)
    assert done.ok and done.statements == 3
    [summary] = signed.store.query(records.task_pk(tid), sk_prefix="A#", limit=5).items
    if which == "error":
        _blank_statement(signed, tid, error)
        first: str | None = event_sk(passed.attestation_seq or 0)
    elif which == "pass":
        _blank_statement(signed, tid, passed)
        first = summary.sk.replace("A#", "H#")
    else:
        raw_delete(signed.store, summary.pk, summary.sk)
        first = None
    done = _audit(signed)
    [mismatch] = done.mismatches
    assert (mismatch.task_id, mismatch.event) == (tid, first)
    assert "a signed statement was removed" in mismatch.reason
    assert done.statements == 2


def test_a_task_deleted_from_the_database_is_found_by_its_number(signed: World) -> None:
    """Deleting a task's item takes its chain out of the audit's sight, statements and all: task
    numbers are handed out one by one and no task is ever deleted, so the gap is found."""
    tid = _history(signed)
    kept = signed.task(title="kept").id
    assert _audit(signed).ok and _audit(signed).tasks == 2
    raw_delete(signed.store, *records.task_key(tid))
    done = _audit(signed)
    assert done.tasks == 1
    [mismatch] = done.mismatches
    assert (mismatch.task_id, mismatch.event) == (tid, None) and mismatch.task_id != kept
    assert f"task {tid} is missing" in mismatch.reason


def test_an_acceptance_of_a_status_edited_to_verified_is_found(signed: World) -> None:
    """A forged status: whoever can write the database writes `verified` over a failed run. The
    human then accepts, and the server signs a summary relying on the task's last statement (the
    FAILED run's): the audit finds that, as `attest verify` would in the bundle."""
    scene = new_scene(signed, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    run_verifier(signed.ctx, scene.verifier, scene.task_id, Evidence.FAIL)
    tid = scene.task_id
    assert signed.ctx.task(tid).status is Status.READY and _audit(signed).ok
    task = raw_get(signed.store, *records.task_key(tid))
    assert task is not None
    task["status"] = Status.VERIFIED.value
    raw_set(signed.store, *records.task_key(tid), task)
    review.accept(signed.ctx, signed.human, tid)
    [summary] = signed.store.query(records.task_pk(tid), sk_prefix="A#", limit=5).items
    [mismatch] = _audit(signed).mismatches
    assert (mismatch.task_id, mismatch.event) == (tid, summary.sk.replace("A#", "H#"))
    assert "which is no passed run of its commit" in mismatch.reason
