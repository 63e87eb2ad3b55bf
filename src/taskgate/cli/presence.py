"""A person at the terminal for the CLI's human-only commands.

The threat model (docs/architecture.md, "Principals"): an honest-but-lazy agent running in the
human's own OS account, often in the same shell. Locally the CLI finds the admin token in the data dir by itself, so
without this check an agent's `taskgate task accept my-app-3` is the human accepting. What an
agent's shell lacks is a person: its commands run without a controlling terminal. So every
command that changes something as the human asks, on the controlling terminal (/dev/tty, never
stdin, which any pipe fills), for the name of the thing it changes, and is refused without a
terminal (E_HUMAN_PRESENCE) or without the right answer (E_NOT_CONFIRMED).

A script a human deliberately runs (their own CI) skips the question with `--yes`, which counts
only together with a token given explicitly (`--token` or TASKGATE_TOKEN), never with the admin
token the CLI reads from the data dir: the default path, the one an agent stumbles into, always
asks.

This closes the easy path, not every path: a process of the same OS user can read the token
file and call the REST API itself, or fake a terminal (script(1), a pty of its own). Keeping
agents from that is hard isolation: another OS user or a container, without the data dir.

Every CLI command that writes as the human calls `require` (human.py marks it, main.py asks), naming what
it does and what the person types to confirm it.
"""

from __future__ import annotations

import errno
import os
import select
import time
from dataclasses import dataclass

from taskgate.domain.principals import Via

PRESENCE = "E_HUMAN_PRESENCE"
NOT_CONFIRMED = "E_NOT_CONFIRMED"
EXIT_CODE = 3  # distinct from 1 (the server refused) and 2 (argparse: bad usage)
TTY = "/dev/tty"
ANSWER_TIMEOUT_S = 300.0
MAX_ANSWER = 1024

HINT = (
    "A person does this: on the board (run `taskgate board` for a sign-in link) or by running "
    "this command themselves at a terminal. An agent asks its human to do it."
)


@dataclass(frozen=True)
class Action:
    """What a human-only command is about to do, as the person confirming it reads it."""

    what: str  # "accept my-app-3", "switch verification off for project my-app"
    confirm: str  # what the person types to say yes: the task id, the project name ...
    detail: str = ""  # more lines for the prompt, e.g. "this key covers every project"


class Refused(Exception):
    def __init__(self, code: str, message: str, hint: str = HINT) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.hint = hint

    def body(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": self.hint}


def require(action: Action, *, scripted: bool, explicit_token: bool) -> Via:
    """Return once a person at the controlling terminal confirmed `action` (TERMINAL), or a
    script that gave its own token said --yes (SCRIPT); raise Refused otherwise. Nothing is
    sent before this. What it returns goes to the server with the request (PRESENCE_HEADER)."""
    if scripted:
        if explicit_token:
            return Via.SCRIPT
        raise Refused(
            PRESENCE,
            f"{action.what}: --yes is refused with the admin token read from the data dir; nothing was done",
        )
    tty = _open_tty()
    if tty is None:
        raise Refused(
            PRESENCE,
            f"{action.what} needs a person at a terminal to confirm it, and this process has no "
            f"controlling terminal ({TTY}): nothing was done",
        )
    try:
        lines = [f"taskgate: {action.what}", *(f"  {line}" for line in action.detail.splitlines())]
        prompt = "\n".join(lines) + f"\nType {action.confirm} to confirm (anything else cancels): "
        os.write(tty, prompt.encode())
        answer = _read_line(tty)
        if answer is not None and answer.strip() == action.confirm:
            return Via.TERMINAL
        said = "no answer" if answer is None else f"the answer was {answer.strip()[:80]!r}"
        os.write(tty, b"taskgate: not confirmed, nothing was done\n")
        raise Refused(
            NOT_CONFIRMED,
            f"{action.what} was not confirmed ({said}, not {action.confirm!r}): nothing was done",
            "Run it again and type exactly what the prompt asks, or do it on the board (`taskgate board`).",
        )
    finally:
        os.close(tty)


def _open_tty() -> int | None:
    """The controlling terminal, opened directly: a process without one (an agent's shell, a
    pipeline started by `setsid`, a service) gets ENXIO; no terminal device at all, ENOENT."""
    try:
        return os.open(TTY, os.O_RDWR | os.O_NOCTTY)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ENOENT, errno.EACCES, errno.EPERM, errno.ENOTTY, errno.EIO):
            return None
        raise


def _read_line(tty: int) -> str | None:
    """One line typed at the terminal, or None (end of input, hang-up, Ctrl-C, or nobody
    answered within ANSWER_TIMEOUT_S: a command waiting on a terminal nobody watches ends)."""
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    got = b""
    try:
        while b"\n" not in got and len(got) < MAX_ANSWER:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([tty], [], [], left)[0]:
                return None
            chunk = os.read(tty, MAX_ANSWER)
            if not chunk:
                return None
            got += chunk
    except (OSError, KeyboardInterrupt):
        return None
    return got.split(b"\n", 1)[0].decode("utf-8", "replace")
