"""The model-based check at length: the reference model and the real services side by side.

    python -m tests.model.long_run [--sqlite-steps 10000] [--dynamodb-steps 10000]
                                   [--steps-per-example 100] [--details]

(from the repository's root). It lives beside the machine it drives: it is a tool of the model
test, not a benchmark of taskgate's.

Runs Hypothesis state machines (tests/model/machine.py) in record mode: a divergence ends its
example and is counted; generation goes on until each adapter has run its steps. Prints one line
per adapter, how often the merge and staleness moves succeeded on it (a conflict sending a task
back, a verdict going stale and re-verified, each end of a re-verification), then one line per
distinct divergence kind (--details: with the last steps of one example of it), and last:
    steps=<total> divergences=<k>
SQLite runs on a real file; DynamoDB on moto (slow: moto deep-copies per transaction item).
"""

from __future__ import annotations

import argparse
import sys
import time

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.model.machine import Recorder, machine_for

NAMES = {"sqlite": "sqlite", "dynamodb": "dynamodb(moto)"}


def run(adapter: str, target: int, per_example: int) -> tuple[Recorder, float]:
    recorder = Recorder()
    machine = machine_for(adapter, strict=False, recorder=recorder)
    started = time.perf_counter()
    while recorder.steps < target:
        # Ask for about half of what is left, at the average length seen so far (an example ends
        # early at a divergence, and Hypothesis draws lengths up to the step budget).
        average = recorder.steps / recorder.examples if recorder.examples else per_example * 0.75
        # At most 10 examples a batch, so the progress line comes every minute or so.
        examples = min(10, max(1, round((target - recorder.steps) / average / 2)))
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=examples,
                stateful_step_count=per_example,
                deadline=None,
                database=None,
                phases=[Phase.generate],  # record mode: nothing to shrink
                suppress_health_check=list(HealthCheck),
            ),
        )
        # So far, on stderr: a run stopped before its target still says how far it got.
        print(
            f"  ... {NAMES[adapter]} steps={recorder.steps} divergences={len(recorder.divergences)} "
            f"seconds={time.perf_counter() - started:.0f}",
            file=sys.stderr,
            flush=True,
        )
    return recorder, time.perf_counter() - started


# The moves of verifying on the merge, by the outcome labels the machine records.
MERGE_MOVES = {
    "conflict": "verify_finish(conflict, run running) by local-verifier on needs_verification",
    "base_moved": "base_moved(",
    "reverify_start": "verify_start(reverify)",
    "reverify_pass": "verify_finish(pass, run running) by local-verifier on verified",
    "reverify_fail": "verify_finish(fail, run running) by local-verifier on verified",
    "reverify_break": "verify_finish(break, run running) by local-verifier on verified",
    "reverify_conflict": "verify_finish(conflict, run running) by local-verifier on verified",
    "reverify_error": "verify_finish(error, run running) by local-verifier on verified",
}


# The landing queue's moves that succeeded: steps that landed or sent a culprit back,
# refused pushes, accepts into the queue, entries taken out or moved to the head.
LANDING_MOVES = {
    "land_step": "land_step(pushed=True)",
    "land_refused": "land_step(pushed=False)",
    "accept_to_queue": "update_task(status=landing)",
    "queue_leave": "queue_leave",
    "queue_hotfix": "queue_hotfix",
    "cancel_from_queue": "cancel by human on landing",
}


def landing_moves(rec: Recorder) -> str:
    counts = dict.fromkeys(LANDING_MOVES, 0)
    for label, n in rec.outcomes.items():
        if label.endswith("-> ok"):
            for name, prefix in LANDING_MOVES.items():
                if label.startswith(prefix):
                    counts[name] += n
    return " ".join(f"{k}={v}" for k, v in counts.items())


def merge_moves(rec: Recorder) -> str:
    counts = dict.fromkeys(MERGE_MOVES, 0)
    for label, n in rec.outcomes.items():
        if label.endswith("-> ok"):
            for name, prefix in MERGE_MOVES.items():
                if label.startswith(prefix):
                    counts[name] += n
    return " ".join(f"{k}={v}" for k, v in counts.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sqlite-steps", type=int, default=10_000)
    ap.add_argument("--dynamodb-steps", type=int, default=10_000)
    ap.add_argument("--steps-per-example", type=int, default=100)
    ap.add_argument("--details", action="store_true", help="print the last steps of one example per kind")
    args = ap.parse_args()
    total = diverged = 0
    for adapter, target in (("sqlite", args.sqlite_steps), ("dynamodb", args.dynamodb_steps)):
        if target <= 0:
            continue
        rec, seconds = run(adapter, target, args.steps_per_example)
        print(
            f"adapter={NAMES[adapter]} steps={rec.steps} examples={rec.examples} "
            f"divergences={len(rec.divergences)} seconds={seconds:.1f} steps_per_s={rec.steps / seconds:.1f}",
            flush=True,
        )
        print(f"  ok: {merge_moves(rec)}", flush=True)
        print(f"  landing ok: {landing_moves(rec)}", flush=True)
        for kind, count in rec.kinds().most_common():
            print(f"  {count:4d} {kind}")
            if args.details:
                first = next(d for d in rec.divergences if d.kind == kind)
                print("       " + first.detail.replace("\n", "\n       "))
        total += rec.steps
        diverged += len(rec.divergences)
    print(f"steps={total} divergences={diverged}")


if __name__ == "__main__":
    main()
