"""One verification run, from the server's work item to the report sent back: a pipeline of
steps (verifier/steps/), each with one job, passing one run state (verifier/state.py).

The order: refuse early what cannot be verified (no check, unapproved commands, review criteria
without a reviewer key, test criteria without a report); a clean checkout; everything git must
do (the baseline and what the submission changes, dependency caches, the reviewer's diff, the
screen, the merge onto the base tip, the grading tree with its tripwires, the trees later runs
need), since from the hand-over on the checkout is the check user's; then the grading run
(every configured check), what it reported of the tripwires, each test criterion's evidence,
the runs that question it (the submission's whole tree, the hidden tests, the baseline's code),
the approved command criteria and the reviewer. Whatever
breaks on the verifier's side (checkout, a timeout, a missing or unreadable report, the
reviewer) is an error of the run, never a failure of the executor's work: the server decides
the outcome from what is gathered here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any

from taskgate.verifier.state import Gathered, RunError, RunState, Verifier, Work
from taskgate.verifier.steps import (
    admit,
    baseline,
    caches,
    checkout,
    checks,
    commands,
    environment,
    grading,
    guards,
    hidden,
    loading,
    merge,
    review,
    screen,
    sensitivity,
    tripwires,
    without_change,
)

Step = Callable[[RunState], None]

STEPS: tuple[Step, ...] = (
    checkout.fetch,
    # git's work, before the checkout is the check user's
    baseline.find,
    caches.restore,
    review.diff,
    screen.read,  # the submission's own added lines: before the merge brings in the base's
    loading.read,  # what the submission adds that is loaded but not readable as source
    guards.check,  # a guard's named test must be the baseline's
    merge.merge,
    checks.clear,
    without_change.keep,  # the submission's files, before the grading tree replaces its test side
    grading.prepare,  # the checkout becomes the grading tree
    sensitivity.prepare,  # a copy of it with the changed functions stubbed out
    hidden.place,  # a copy of it with only the hidden tests as tests
    tripwires.place,
    baseline.archive,
    # the check user's from here on
    checks.hand_over,
    checks.run,  # the grading run
    tripwires.read,  # before any evidence: the reports lose the tripwires
    environment.recheck,
    checks.evidence,
    grading.run_submitted,
    hidden.run,
    loading.uncollected,
    sensitivity.run,
    without_change.run,
    commands.run,
    review.judge,
)


def execute(verifier: Verifier, item: Mapping[str, Any]) -> Gathered:
    """Run every step on the server's work item; what they gathered, an error of the run
    included."""
    gathered = Gathered()
    try:
        work = Work.of(item)
        config = admit.admit(verifier, work)
        with ExitStack() as stack:
            state = RunState(verifier, work, config, stack, gathered)
            for step in STEPS:
                step(state)
                if state.stopped:
                    break
    except RunError as exc:
        gathered.report.error = str(exc)
    return gathered
