"""`taskgate verify --jobs N`: N verifications at once, each in a process of its own.

Processes, not threads: the verifier is a child subreaper that kills every descendant when a
command ends and reaps every orphan (process.py), which in one process would kill and reap
the other runs' checks (a check reaped by someone else reads as exit 0 to its waiter). Each job
is forked from the hardened verifier, so it keeps what isolate() set up (no keys in the
environment, non-dumpable, no new privileges, the capabilities to run checks as the check
user), becomes a subreaper of its own (that is not inherited), and then runs the ordinary loop:
it asks the server for work and starts runs like any other verifier process, the start of a run
being the one atomic claim among all of them.

The parent only waits. Stopped (Ctrl-C, SIGTERM), it sends each job SIGTERM, which ends that
job's run as an error the way Ctrl-C does with one job, and waits for them. Jobs ignore SIGINT
so that a Ctrl-C at the terminal, which reaches every process of the group, is turned into
exactly one stop each.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

from taskgate.verifier import hardening

INTERRUPTED_EXIT = 130


class Lines:
    """One line at a time on the shared stdout: a POSIX record lock, which is per process (the
    jobs share the file) and let go when a process dies, so a killed job never holds it."""

    def __init__(self) -> None:
        # Open for the life of the process: the lock lives on it.
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="taskgate-verify-lines-")  # noqa: SIM115

    @contextmanager
    def held(self) -> Iterator[None]:
        fcntl.lockf(self._file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(self._file, fcntl.LOCK_UN)


def _ignore(_sig: int, _frame: object) -> None:
    return None


def _stop(_sig: int, _frame: object) -> None:
    raise KeyboardInterrupt


def run_jobs(n: int, job: Callable[[int], int], *, reaper: bool) -> int:
    """Run `job(k)` for k in 0..n-1, each in a forked process; the highest exit code wins (130
    once stopped). `reaper`: make each job a child subreaper, as the verifier itself is."""
    sys.stdout.flush()
    sys.stderr.flush()
    pids: dict[int, int] = {}
    for k in range(n):
        pid = os.fork()
        if pid == 0:  # the job
            code = 1
            try:
                signal.signal(signal.SIGINT, _ignore)  # the parent turns a Ctrl-C into SIGTERM
                signal.signal(signal.SIGTERM, _stop)
                if reaper:
                    hardening.become_subreaper()
                code = job(k)
            except KeyboardInterrupt:
                code = INTERRUPTED_EXIT
            except BaseException:  # a job's crash is its own: say it, and let the others run
                import traceback

                traceback.print_exc()
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        pids[pid] = k
    codes: list[int] = []
    stopped = False
    while pids:
        try:
            pid, status = os.waitpid(-1, 0)
        except KeyboardInterrupt:
            stopped = True
            for child in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGTERM)
            continue
        except ChildProcessError:
            break
        if pid in pids:  # else an orphan of a job's checks, come back to this subreaper
            del pids[pid]
            codes.append(os.waitstatus_to_exitcode(status))
    if stopped:
        return INTERRUPTED_EXIT
    return max((abs(c) for c in codes), default=0)
