"""Which tool a command's shell could not run: the verifier's missing toolchain, not the work's.

A check (or the reviewer) that exits 126 or 127 may mean the shell found no `npm` on the
verifier's PATH (127) or found one it cannot execute (126): the verifier's image lacks the tool,
and the executor's work was never tried. It may also be the work itself exiting 127, or
printing a shell's message while doing so: code under test is the agent's, and an agent that
wants its failures to count as verifier errors (no attempt used) would do exactly that.

So a tool is named only when all of this holds, each part something the checked code cannot
fake: the exit code is 126 or 127; the tool is a command word of the human-owned command
itself (the leading word of one of its simple commands, not a path, not a builtin); the
verifier, after the run, finds no executable of that name on the PATH the command started
with; and the output carries the shell's message naming it. Anything else stays the check's
own exit code, decided as a failure.

The command words come from domain.tooling.command_words, the reading the server checks the
named tool against too.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping

from taskgate.domain.tooling import NOT_RUNNABLE, command_words


def _shell_named(output: str, word: str) -> bool:
    """The output holds a shell's (or a wrapper's) "cannot run it" message for `word`:
    `sh: 1: npm: not found` (dash), `bash: npm: command not found`, `sh: 1: tool: Permission
    denied`, `env: 'npm': No such file or directory`."""
    quotes = "'\"`\u2018\u2019"  # coreutils quotes with \u2018 \u2019 in a UTF-8 locale
    quoted = rf"[{quotes}]?{re.escape(word)}[{quotes}]?"
    pattern = rf"(?m)(?:^|[\s:]){quoted}: (?:command not found|not found|Permission denied|No such file or directory)\s*$"
    return re.search(pattern, output) is not None


def unrunnable(command: str, exit_code: int | None, output: str, env: Mapping[str, str]) -> str | None:
    """The tool the verifier lacks, if that is why `command` exited as it did; else None."""
    if exit_code not in NOT_RUNNABLE:
        return None
    path = env.get("PATH", os.defpath)
    for word in command_words(command):
        if shutil.which(word, path=path) is None and _shell_named(output, word):
            return word
    return None
