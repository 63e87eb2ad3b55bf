"""Running one command the verifier was told to run (a check, a command criterion, the reviewer).

Each runs under `/bin/sh -c` in its own session and process group, with a timeout, an
environment without keys, tokens or cloud credentials, and a bounded tail of its output; as the
check user when one is given (the verifier started as root). When it ends (exit, timeout or
Ctrl-C) nothing it started is left running: its whole process group is killed, and so is any
process that escaped the group (a `setsid` daemon) but still carries the run's marker in its
environment; in `taskgate verify`, which is a child subreaper (hardening.py), every process
that descends from it, however it detached and whatever it did to its environment.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

TAIL_BYTES = 64 * 1024  # output kept in memory per command; the server keeps the last 4,000 chars
# Its start is kept apart: where a test runner prints its version (domain/runners.py), which a
# long run's tail has lost.
HEAD_BYTES = 8 * 1024
KILL_GRACE_S = 3.0  # between SIGTERM and SIGKILL for a command that timed out or was interrupted
READER_JOIN_S = 2.0
MARKER_VAR = "TGVERIFY_RUN_MARK"  # not TASKGATE_*: that prefix is what the scrub removes

# Never handed to anything the verifier runs: taskgate's keys and tokens, and cloud credentials
# (an ECS task's AWS_CONTAINER_CREDENTIALS_* included).
SECRET_PREFIXES = ("TASKGATE_", "AWS_", "AZURE_", "GOOGLE_", "CLOUDSDK_")
# Runners write colour and cursor codes only to a terminal, unless told: these tell them not to
# (the server strips what still comes through). Set in the verifier's own environment, they win.
NO_COLOUR = {"NO_COLOR": "1", "FORCE_COLOR": "0"}
SECRET_NAMES = frozenset({"GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"})


def is_secret_name(name: str) -> bool:
    return name.upper().startswith(SECRET_PREFIXES) or name.upper() in SECRET_NAMES


def scrubbed_env(base: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in base.items() if not is_secret_name(k)}


class RunsAs(Protocol):
    """The user a command runs as (sandbox.CheckUser)."""

    @property
    def uid(self) -> int: ...
    @property
    def gid(self) -> int: ...


def redact(text: str, secrets_: Sequence[str]) -> str:
    """Defence in depth: the environment is scrubbed, but a secret that reached the output some
    other way (a file, an argument) is still not recorded."""
    for s in secrets_:
        if s and len(s) >= 8:
            text = text.replace(s, "[redacted]")
    return text


@dataclass(frozen=True)
class Exited:
    exit_code: int | None  # None when it timed out; negative: killed by that signal
    timed_out: bool
    output: str  # the tail, decoded, secrets redacted (stdout and stderr, unless split)
    duration_ms: int
    errors: str = ""  # stderr's tail, when asked for apart
    head: str = ""  # the first HEAD_BYTES of the output, decoded, secrets redacted


class _Tail:
    """Drains a pipe in a thread, keeping only the first HEAD_BYTES and the last TAIL_BYTES (a
    check may print gigabytes)."""

    def __init__(self, pipe: IO[bytes] | None) -> None:
        self.buf = bytearray()
        self.first = bytearray()
        self.thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self.thread.start()

    def _drain(self, pipe: IO[bytes] | None) -> None:
        if pipe is None:
            return
        while chunk := pipe.read1(65536):  # type: ignore[attr-defined]
            if len(self.first) < HEAD_BYTES:
                self.first += chunk[: HEAD_BYTES - len(self.first)]
            self.buf += chunk
            if len(self.buf) > 2 * TAIL_BYTES:
                del self.buf[: len(self.buf) - TAIL_BYTES]

    def text(self) -> str:
        return bytes(self.buf[-TAIL_BYTES:]).decode("utf-8", "replace")

    def head(self) -> str:
        return bytes(self.first).decode("utf-8", "replace")


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _marked(mark: str) -> list[int]:
    """Processes (of this user) whose environment carries this run's marker."""
    needle = f"{MARKER_VAR}={mark}".encode()
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _parents() -> dict[int, int]:
    """pid -> parent pid of every live (not zombie) process, from /proc/<pid>/stat."""
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            after = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if after[0] not in ("Z", "X"):
            out[int(entry.name)] = int(after[1])
    return out


def descendants(of: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid in _parents().items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [of]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def kill_descendants(rounds: int = 50) -> None:
    """SIGKILL every process descending from this one, until none is left: for a child
    subreaper, whose orphaned descendants come back to it, that is everything its commands
    started. Each round's victims that became our own children are reaped."""
    me = os.getpid()
    for _ in range(rounds):
        found = descendants(me)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
        _reap()
    _reap()


def _reap() -> None:
    """Wait for every child that has ended: orphans that came back to the subreaper and exited
    on their own would stay zombies for as long as the verifier polls. Called only between
    commands, when no child of ours is one a Popen still waits for."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_leftovers(pgid: int, mark: str, *, every_descendant: bool) -> None:
    _kill_group(pgid, signal.SIGKILL)
    for pid in _marked(mark):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    if every_descendant:
        kill_descendants()


def run(
    command: str,
    *,
    cwd: Path,
    timeout_s: float,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    secrets_: Sequence[str] = (),
    split_stderr: bool = False,
    user: RunsAs | None = None,
    every_descendant: bool = False,
) -> Exited:
    """Run `command` to its end (or its timeout). A KeyboardInterrupt stops it, kills everything
    it started, and propagates. `split_stderr`: keep stderr apart (an answer read from stdout).
    `user`: run it as that user, with its group and no supplementary group (needs root or
    CAP_SETUID/CAP_SETGID). `every_descendant`: this process is a child subreaper whose only
    children are its commands, so everything descending from it is killed when the command ends."""
    mark = secrets.token_hex(12)
    started = time.monotonic()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        env={**NO_COLOUR, **scrubbed_env(env), MARKER_VAR: mark},  # the verifier's own env may say otherwise
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if split_stderr else subprocess.STDOUT,
        start_new_session=True,  # its own process group: one signal reaches everything it starts
        user=user.uid if user is not None else None,
        group=user.gid if user is not None else None,
        extra_groups=[] if user is not None else None,
    )
    pgid = proc.pid
    tail = _Tail(proc.stdout)
    err_tail = _Tail(proc.stderr)
    if stdin is not None:
        threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
    timed_out = False
    try:
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(proc, pgid)
    except BaseException:
        _stop(proc, pgid)
        raise
    finally:
        _kill_leftovers(pgid, mark, every_descendant=every_descendant)
        for t, pipe in ((tail, proc.stdout), (err_tail, proc.stderr)):
            t.thread.join(READER_JOIN_S)
            if pipe is not None:
                pipe.close()
    return Exited(
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        output=redact(tail.text(), secrets_),
        duration_ms=int((time.monotonic() - started) * 1000),
        errors=redact(err_tail.text(), secrets_),
        head=redact(tail.head(), secrets_),
    )


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # it stopped reading: its answer (or its exit code) says what happened


def _stop(proc: subprocess.Popen[bytes], pgid: int) -> None:
    _kill_group(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        _kill_group(pgid, signal.SIGKILL)
        proc.wait()
