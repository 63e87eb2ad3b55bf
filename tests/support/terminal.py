"""Run a command the two ways taskgate's human-only CLI tells apart.

- `no_terminal`: as an agent's shell runs it: a session of its own (setsid), so no controlling
  terminal, and stdin from /dev/null. Opening /dev/tty fails there (ENXIO), whoever runs pytest.
- `at_terminal`: as a person at a terminal: a fresh pseudo-terminal becomes the command's
  controlling terminal (a session leader opening a tty without O_NOCTTY acquires it; Linux),
  while stdin stays /dev/null and stdout/stderr stay pipes, so what the command prints is read
  apart from what it asks on the terminal. The test plays the person: it waits for the prompt
  and types the answer on the pty's master side.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

# The child: become a session leader, open the pty by name (it becomes the controlling
# terminal), then exec the command.
_ACQUIRE = (
    "import os, sys\nos.setsid()\nos.open(sys.argv[1], os.O_RDWR)\nos.execv(sys.argv[2], sys.argv[2:])\n"
)


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str
    terminal: str  # everything the command wrote to its terminal (the prompt, the echo)


def no_terminal(
    argv: list[str], env: dict[str, str], *, stdin: str | None = None, timeout: float = 60.0
) -> Ran:
    """`stdin`: text piped in (None: /dev/null), e.g. the very answer a prompt would want."""
    r = subprocess.run(
        argv,
        env=env,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )
    return Ran(r.returncode, r.stdout, r.stderr, "")


def at_terminal(
    argv: list[str],
    env: dict[str, str],
    answer: str | None,
    *,
    prompt_ends: str = "cancels): ",
    timeout: float = 60.0,
) -> Ran:
    """Run `argv` with a pty as its controlling terminal; type `answer` and Enter once the
    prompt is shown (None: type nothing). If the command asks nothing, nothing is typed."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    proc = subprocess.Popen(
        [sys.executable, "-c", _ACQUIRE, name, *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = b""
    deadline = time.monotonic() + timeout
    answered = False
    try:
        while time.monotonic() < deadline:
            if answer is not None and not answered and seen.decode(errors="replace").endswith(prompt_ends):
                os.write(master, answer.encode() + b"\n")
                answered = True
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                seen += os.read(master, 4096)  # our own slave fd keeps it from EIO
                continue
            if proc.poll() is not None:
                break
    finally:
        os.close(master)
        os.close(slave)
    out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    return Ran(proc.returncode, out, err, seen.decode(errors="replace"))


CONFIRM_PROMPT = re.compile(r"Type (\S+) to confirm \(anything else cancels\): $")


def confirming_each(
    argv: list[str], env: dict[str, str], *, cwd: str | None = None, timeout: float = 300.0
) -> Ran:
    """Run `argv` with a pty as its controlling terminal, playing a person who reads each
    confirmation prompt and types what it asks for (a whole script of human-only commands)."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    proc = subprocess.Popen(
        [sys.executable, "-c", _ACQUIRE, name, *argv],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # stdout and stderr are read on threads: a script that prints much must not block on a pipe
    # while this loop waits on the terminal.
    import threading

    chunks: dict[str, list[str]] = {"out": [], "err": []}

    def drain(stream: Any, into: list[str]) -> None:
        into.append(stream.read())

    readers = [
        threading.Thread(target=drain, args=(proc.stdout, chunks["out"]), daemon=True),
        threading.Thread(target=drain, args=(proc.stderr, chunks["err"]), daemon=True),
    ]
    for r in readers:
        r.start()
    seen, pending = b"", ""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                data = os.read(master, 4096)
                seen += data
                pending += data.decode(errors="replace")
                m = CONFIRM_PROMPT.search(pending)
                if m:
                    os.write(master, m.group(1).encode() + b"\n")
                    pending = ""
                continue
            if proc.poll() is not None:
                break
        else:
            proc.kill()
    finally:
        os.close(master)
        os.close(slave)
    proc.wait(timeout=30)
    for r in readers:
        r.join(timeout=30)
    return Ran(proc.returncode, "".join(chunks["out"]), "".join(chunks["err"]), seen.decode(errors="replace"))
