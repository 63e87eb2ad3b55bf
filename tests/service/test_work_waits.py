"""A verifier's work request that waits: where nothing can wake it (Lambda) it reads the store
again every step until work arrives or the wait runs out; where the caller waits for it (the
local gateway), it answers at once."""

from __future__ import annotations

import time

import pytest

from taskgate.domain.clock import ManualTiming, SystemTiming
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import Status
from taskgate.service import verification
from taskgate.service.wakeups import Polling, Signal
from tests.service.scenarios import new_scene, reach
from tests.support.world import World


def test_polling_finds_work_that_arrives_during_the_wait(world: World) -> None:
    """The submission lands during the second step's pause: the look right after it finds the
    task, long before the 5 s wait would run out."""
    scene = new_scene(world, verification_on=True)
    assert scene.verifier is not None

    def during(pause: int) -> None:
        if pause == 2:
            reach(scene, Status.NEEDS_VERIFICATION)

    timing = ManualTiming(then=during)
    world.ctx.wakeups = Polling(step_s=0.2, timing=timing)
    found, _, waited = verification.queues_waiting(world.ctx, scene.verifier, "demo", 5.0)
    assert [t.id for t in found] == [scene.task_id] and waited == 5.0
    assert timing.slept == [0.2, 0.2]  # one step each, and no look after the one that found it


def test_polling_gives_up_when_the_wait_runs_out(world: World) -> None:
    slept: list[float] = []

    class Recorded(SystemTiming):
        def sleep(self, seconds: float) -> None:
            slept.append(seconds)
            super().sleep(seconds)

    world.ctx.wakeups = Polling(step_s=0.2, timing=Recorded())
    scene = new_scene(world, verification_on=True)
    assert scene.verifier is not None
    began = time.monotonic()
    found, _, _ = verification.queues_waiting(world.ctx, scene.verifier, "demo", 0.7)
    assert found == [] and time.monotonic() - began >= 0.7  # it waited the whole wait ...
    assert 1 <= len(slept) <= 4 and all(0 <= s <= 0.2 for s in slept)  # ... one step at a time


def test_where_the_caller_waits_the_handler_answers_at_once(world: World) -> None:
    waits: list[float] = []

    class Watched(Signal):
        def wait(self, seen: int, timeout_s: float) -> None:
            waits.append(timeout_s)
            super().wait(seen, timeout_s)

    world.ctx.wakeups = Watched()
    scene = new_scene(world, verification_on=True)
    assert scene.verifier is not None
    found, _, waited = verification.queues_waiting(world.ctx, scene.verifier, "demo", 20.0)
    assert found == [] and waited == 20.0 and waits == []  # the handler did not wait


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
