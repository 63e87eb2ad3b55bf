"""A verifier's work request that waits: where nothing can wake it (Lambda) it reads the store
again every step until work arrives or the wait runs out; where the caller waits for it (the
local gateway), it answers at once."""

from __future__ import annotations

import threading
import time

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import Status
from taskgate.service import verification
from taskgate.service.wakeups import Polling, Signal
from tests.service.scenarios import new_scene, reach
from tests.support.world import World


def test_polling_finds_work_that_arrives_during_the_wait(world: World) -> None:
    world.ctx.wakeups = Polling(step_s=0.2)
    scene = new_scene(world, verification_on=True)
    assert scene.verifier is not None
    later = threading.Timer(0.6, lambda: reach(scene, Status.NEEDS_VERIFICATION))
    began = time.monotonic()
    later.start()
    try:
        found, _, waited = verification.queues_waiting(world.ctx, scene.verifier, "demo", 5.0)
    finally:
        later.join()
    took = time.monotonic() - began
    assert [t.id for t in found] == [scene.task_id] and waited == 5.0
    assert 0.5 <= took < 2.0  # found at the first step after it arrived, not at the end


def test_polling_gives_up_when_the_wait_runs_out(world: World) -> None:
    world.ctx.wakeups = Polling(step_s=0.2)
    scene = new_scene(world, verification_on=True)
    assert scene.verifier is not None
    began = time.monotonic()
    found, _, _ = verification.queues_waiting(world.ctx, scene.verifier, "demo", 0.7)
    assert found == [] and 0.6 <= time.monotonic() - began < 1.5


def test_where_the_caller_waits_the_handler_answers_at_once(world: World) -> None:
    world.ctx.wakeups = Signal()
    scene = new_scene(world, verification_on=True)
    assert scene.verifier is not None
    began = time.monotonic()
    found, _, waited = verification.queues_waiting(world.ctx, scene.verifier, "demo", 20.0)
    assert found == [] and waited == 20.0 and time.monotonic() - began < 0.5


def test_a_submission_raises_the_signal_and_a_claim_does_not(world: World) -> None:
    signal = world.ctx.wakeups = Signal()
    scene = new_scene(world, verification_on=True)
    before = signal.generation()
    reach(scene, Status.CLAIMED)
    claimed = signal.generation()
    assert claimed == before  # nothing for a verifier in a claim
    reach(scene, Status.NEEDS_VERIFICATION)
    assert signal.generation() > claimed


@pytest.mark.parametrize("wait", [-0.5, 20.5, float("nan"), float("inf")])
def test_a_wait_out_of_range_is_refused(world: World, wait: float) -> None:
    scene = new_scene(world, verification_on=True)
    assert scene.verifier is not None
    with pytest.raises(TaskgateError) as err:
        verification.queues_waiting(world.ctx, scene.verifier, "demo", wait)
    assert err.value.code is ErrorCode.VALIDATION
