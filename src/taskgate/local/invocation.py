"""How the person who started this program runs `taskgate` again, for the commands taskgate
prints for them to type (`taskgate board` before the README has put `taskgate` on the PATH is
a command that fails)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def runnable_as(argv0: str, on_path: str | None, cwd: Path) -> str:
    """How the person who started taskgate runs `taskgate` again from where they are: `taskgate`
    when that name on their PATH is this very program, else the path they started it by
    (`.venv/bin/taskgate` before the README puts it on the PATH), relative to where they are
    when it lies below it. `python -m taskgate.cli` when it was started that way."""
    program = Path(argv0)
    if program.name != "taskgate":
        return f"{sys.executable} -m taskgate.cli"
    if "/" not in argv0:
        return "taskgate"  # found on the PATH by that name
    here = (cwd / program).resolve() if not program.is_absolute() else program.resolve()
    if on_path is not None and Path(on_path).resolve() == here:
        return "taskgate"
    if not program.is_absolute() and "/" in argv0:
        return argv0  # what they typed works from where they typed it
    try:
        return f"./{here.relative_to(cwd.resolve())}"
    except ValueError:
        return str(here)


def me() -> str:
    """The command that runs this taskgate from the current directory."""
    return runnable_as(sys.argv[0], shutil.which("taskgate"), Path.cwd())
