"""Operational counters: a port the services and the edges call, and nothing else.

The product counts what an operator watches (claims, lost races, submissions, verdicts,
lease expiries, refusals) by calling `count`. Where the counts go is the host's business: on
Lambda, `taskgate.cloud.observe` installs a sink that writes CloudWatch metrics (EMF); under
`taskgate serve` and in tests nothing is installed and a count costs one global read. Nothing
here imports anything of ours, so every layer above `domain` may call it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum


class Metric(StrEnum):
    CLAIMS = "Claims"  # a claim landed
    LOST_RACES = "LostRaces"  # a conditional commit lost to a concurrent writer
    SUBMISSIONS = "Submissions"  # a submission landed
    VERDICTS = "Verdicts"  # a verification run finished; dimension outcome=passed|failed|error
    LEASE_EXPIRIES = "LeaseExpiries"  # a lapsed claim was ended (by the sweeper or on access)
    REFUSALS = "Refusals"  # a request refused with a taskgate error; dimension code=E_...
    VERIFIER_TASKS = "VerifierTasksStarted"  # the dispatcher started a Fargate verifier task


# (metric, value, dimensions as sorted (name, value) pairs)
Sink = Callable[[Metric, int, tuple[tuple[str, str], ...]], None]

_sink: Sink | None = None


def count(metric: Metric, value: int = 1, **dimensions: str) -> None:
    sink = _sink
    if sink is not None:
        sink(metric, value, tuple(sorted(dimensions.items())))


def install(sink: Sink | None) -> Sink | None:
    """Send counts to `sink` (None: drop them). Returns the sink that was installed before."""
    global _sink
    previous, _sink = _sink, sink
    return previous
