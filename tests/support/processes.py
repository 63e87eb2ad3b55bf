"""Whether a process the tests killed, or made a check kill, is really gone."""

from __future__ import annotations

import os
import time
from pathlib import Path


def alive(pid: int, settle_s: float = 5.0) -> bool:
    """Whether `pid` is still running once a kill had time to land (a signal is delivered after
    kill() returns; a zombie waiting for its parent is not running)."""
    deadline = time.monotonic() + settle_s
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z":
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)
