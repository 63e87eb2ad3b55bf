"""Walk every row of the lifecycle table through the services, and refuse every pair not in it."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.lifecycle import TABLE, Action, Guard, Move
from taskgate.domain.models import Status
from taskgate.service import tasks
from tests.service.scenarios import STALE, Scene, new_scene, perform, prepare, reach
from tests.support.world import World, dump

CREATE = {
    Action.CREATE_DRAFT: Status.BACKLOG,
    Action.CREATE_BLOCKED: Status.BLOCKED,
    Action.CREATE_READY: Status.READY,
}
VERIFIER_ACTIONS = {
    Action.VERIFY_PASS,
    Action.VERIFY_FAIL,
    Action.VERIFY_ERROR,
    Action.VERIFY_SPEC_ERROR,
    Action.VERIFY_HOLD,
    Action.VERIFY_CONFLICT,
    *STALE,
}


def _needs_verification_on(row: Move) -> bool:
    return (
        row.guard is Guard.VERIFICATION_ON or row.action in VERIFIER_ACTIONS or row.source is Status.VERIFIED
    )


def _row_id(row: Move) -> str:
    return f"{row.source.value if row.source else 'new'}--{row.action.value}"


def _needs_landing(row: Move) -> bool:
    return row.guard is Guard.LAND_ON or row.source is Status.LANDING


@pytest.mark.parametrize("row", TABLE, ids=_row_id)
def test_every_row_of_the_table(world: World, row: Move) -> None:
    scene = new_scene(world, verification_on=_needs_verification_on(row), land=_needs_landing(row))
    if row.source is None:
        reach(scene, CREATE[row.action])
        events = tasks.history(world.ctx, world.human, scene.task_id)
        assert [e.action for e in events] == [row.action.value]
        assert events[0].to_status is row.target
        return
    if row.action is Action.SPEC_APPROVED_BLOCKED:
        spec = world.spec(approve=False)
        blocker = world.task(title="blocker").id
        scene.spec_id = spec.id
        scene.task_id = world.task(spec_id=spec.id, blocked_by=[blocker]).id
        assert world.reload(scene.task_id).status is Status.BACKLOG
    elif row.action is Action.SPEC_REVISED:
        spec = world.spec()
        scene.spec_id = spec.id
        blockers = [world.task(title="blocker").id] if row.source is Status.BLOCKED else []
        scene.task_id = world.task(spec_id=spec.id, blocked_by=blockers).id
        assert world.reload(scene.task_id).status is row.source
    else:
        held = row.source is Status.NEEDS_HUMAN and row.action is Action.REOPEN
        reach(scene, row.source, with_submission=row.action is Action.REVERIFY, held=held)
    before = world.reload(scene.task_id)
    perform(scene, row.action)
    after = world.reload(scene.task_id)
    assert after.status is row.target
    assert after.attempts_used == before.attempts_used + (1 if row.uses_attempt else 0)
    last = tasks.history(world.ctx, world.human, scene.task_id)[-1]
    assert (last.action, last.from_status, last.to_status) == (row.action.value, row.source, row.target)
    # One commit moves the task; a verifier's run also took one at its start (the live-run mark).
    assert after.version == before.version + (2 if row.action in VERIFIER_ACTIONS else 1)


def test_table_covers_every_status_as_a_source() -> None:
    sources = {m.source for m in TABLE}
    assert set(Status) - {Status.CANCELLED} <= sources  # cancelled is terminal
    assert not [m for m in TABLE if m.source is Status.CANCELLED]


# Actions a caller can attempt on a task in any status without a claim token.
TOKENLESS = [
    Action.CLAIM,
    Action.ACCEPT,
    Action.REOPEN,
    Action.CANCEL,
    Action.REQUEUE,
    Action.BLOCK,
    Action.REVISE_SPEC,
    Action.REVERIFY,
    Action.VERIFY_PASS,
]


def _pairs() -> list[tuple[Status, Action, bool]]:
    out = []
    for status in Status:
        for action in TOKENLESS:
            for on in (False, True):
                rows = [m for m in TABLE if m.source is status and m.action is action]
                allowed = any(
                    m.guard in (None, Guard.LAND_OFF)  # landing stays off in these scenes
                    or (m.guard is Guard.VERIFICATION_OFF and not on)
                    or (m.guard is Guard.VERIFICATION_ON and on)
                    for m in rows
                )
                if action is Action.VERIFY_PASS and not on:
                    continue  # a verifier cannot start a run while verification is off (own test)
                if not allowed:
                    out.append((status, action, on))
    return out


@pytest.mark.parametrize(
    ("status", "action", "on"),
    _pairs(),
    ids=lambda v: v.value if hasattr(v, "value") else ("on" if v else "off"),
)
def test_pairs_not_in_the_table_fail_and_write_nothing(
    world: World, status: Status, action: Action, on: bool
) -> None:
    scene: Scene = new_scene(world, verification_on=on)
    reach(scene, status, with_submission=action is Action.REVERIFY)
    prepare(scene, action)
    snapshot = dump(world.store)
    with pytest.raises(TaskgateError) as err:
        perform(scene, action)
    if action is Action.REVERIFY and status is Status.NEEDS_HUMAN:
        raise AssertionError("unreachable: reverify from needs_human is in the table")
    assert err.value.code is ErrorCode.WRONG_STATE, err.value
    assert err.value.current_status == status.value
    assert dump(world.store) == snapshot
