"""`taskgate verify`: the verifier, re-running submitted work's checks from a clean checkout."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

from taskgate.cli.client import DEFAULT_SERVER


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 3600, got {value!r}")
    return seconds


def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs takes a whole number, not {value!r}") from None
    if not 1 <= n <= 64:
        raise argparse.ArgumentTypeError(f"--jobs takes 1 to 64, not {n}")
    return n


def cmd_verify(args: argparse.Namespace) -> int:
    import signal

    from taskgate.domain.verifier_config import IMAGE_VAR
    from taskgate.verifier.hardening import HardeningError, isolate
    from taskgate.verifier.sandbox import SandboxError
    from taskgate.verifier.worker import Worker, options_from_env

    if args.task and (args.once or args.project or args.jobs > 1):
        raise SystemExit(
            "taskgate verify: --task verifies one task; it goes without --once, --project and --jobs"
        )
    if args.drain and (args.task or args.once):
        raise SystemExit(
            "taskgate verify: --drain verifies until the queue stays empty; it goes without --task and --once"
        )
    if args.idle_exit is not None and not args.drain:
        raise SystemExit("taskgate verify: --idle-exit goes with --drain")

    def stop(*_: object) -> None:
        raise KeyboardInterrupt  # SIGTERM (a container stopping) ends a run like Ctrl-C does

    # Started with `&` from a script or under nohup, SIGINT arrives ignored and Python keeps it
    # so: Ctrl-C (or `kill -INT`) must still stop a run.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)
    opts = options_from_env(
        server=args.server,
        once=args.once,
        task=args.task,
        project=args.project,
        interval_s=args.interval,
        json_lines=args.json,
        drain=args.drain,
        idle_exit_s=args.idle_exit if args.idle_exit is not None else 30.0,
        jobs=args.jobs,
    )
    # A cloud verifier task's slot among its project's verifiers: its lease is renewed through
    # the table, with the task role's credentials, which are resolved here before they leave
    # the environment with the keys.
    slot = None
    if args.drain and os.environ.get("TASKGATE_DRAIN_LEASE"):
        from taskgate.cloud.drain_lease import lease_from_env

        slot = lease_from_env(os.environ)
    # The cloud's dependency cache: its client resolves the task role's credentials now, before
    # they leave the environment.
    from taskgate.verifier.cache_s3 import from_env as s3_cache

    cache_store = s3_cache(os.environ)
    # The image this verifier runs in (the task definition sets it) is no secret, but it shares
    # the TASKGATE_ prefix that isolate() clears from the environment: keep it for the worker.
    image = os.environ.get(IMAGE_VAR)
    try:  # the keys are read: they leave the environment, and root is left
        sandbox = isolate(check_user=args.check_user, worker_user=args.worker_user)
    except (HardeningError, SandboxError) as exc:
        raise SystemExit(f"taskgate verify: {exc}") from None
    env = {**os.environ, **({IMAGE_VAR: image} if image else {})}
    return Worker(
        dataclasses.replace(opts, sandbox=sandbox, slot=slot, cache_store=cache_store), env=env
    ).main()


def register(sub: Any) -> None:
    vf = sub.add_parser(
        "verify",
        help="run the verifier: re-run submitted work's checks from a clean checkout",
        description="Keys come from the environment: TASKGATE_VERIFIER_KEY (local verifier key), "
        "TASKGATE_REVIEWER_KEY (optional, for review criteria), TASKGATE_GIT_TOKEN (optional, "
        "HTTPS token for a private repository). Default: poll for work until interrupted. "
        "The keys leave the verifier's environment once read and it makes itself non-dumpable; "
        "started as root it never runs a check as root (see --check-user).",
    )
    vf.add_argument(
        "--server",
        default=os.environ.get("TASKGATE_SERVER", DEFAULT_SERVER),
        help="taskgate URL (env TASKGATE_SERVER; default %(default)s)",
    )
    vf.add_argument("--once", action="store_true", help="verify everything waiting, then exit")
    vf.add_argument("--task", default=None, help="verify this one task, then exit")
    vf.add_argument(
        "--project", default=None, help="only this project (default: every project the key covers)"
    )
    vf.add_argument(
        "--interval", type=float, default=30.0, help="seconds between polls (default %(default)s)"
    )
    vf.add_argument(
        "--drain",
        action="store_true",
        help="verify waiting work and what arrives meanwhile; exit once nothing arrived for --idle-exit seconds",
    )
    vf.add_argument(
        "--idle-exit",
        type=_positive_seconds,
        default=None,
        metavar="S",
        help="with --drain: seconds without work before it exits (default 30)",
    )
    vf.add_argument("--json", action="store_true", help="print one JSON line per finished run")
    vf.add_argument(
        "--jobs",
        type=_jobs,
        default=1,
        help="verifications at once, each in its own process, checkout, home and temp dir "
        "(default %(default)s)",
    )
    vf.add_argument(
        "--check-user",
        default=os.environ.get("TASKGATE_CHECK_USER") or None,
        help="started as root: the user every check, command criterion and the reviewer run as "
        "(env TASKGATE_CHECK_USER; default taskgate-check if that user exists, else nobody)",
    )
    vf.add_argument(
        "--worker-user",
        default=os.environ.get("TASKGATE_WORKER_USER") or None,
        help="started as root: the user the verifier itself switches to once it read its keys, "
        "keeping only what it needs to run checks as the check user (env TASKGATE_WORKER_USER; "
        "default: it stays root)",
    )
    vf.set_defaults(func=cmd_verify)
