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

The shell grammar is read with `shlex` (punctuation mode splits `&&`, `|`, `;` and the like):
enough to find command words in a check line; a line shlex cannot read names no tool.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Mapping

NOT_RUNNABLE = (126, 127)  # POSIX: found but not executable; not found

_SEPARATORS = frozenset({"&&", "||", ";", ";;", "|", "&", "(", ")", "|&", "{", "}", "!"})
_REDIRECTS = re.compile(r"^[0-9]*(?:[<>]|>>|<<|<<-|>&|<&|&>|&>>|<>|>\|)$")
_RESERVED = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in"}
)
# What the shell runs itself: never looked up on PATH, so never the image's missing tool.
_BUILTINS = frozenset(
    {
        ".",
        ":",
        "[",
        "alias",
        "bg",
        "break",
        "cd",
        "continue",
        "echo",
        "eval",
        "exit",
        "export",
        "false",
        "fg",
        "getopts",
        "hash",
        "jobs",
        "kill",
        "local",
        "printf",
        "pwd",
        "read",
        "readonly",
        "return",
        "set",
        "shift",
        "source",
        "test",
        "times",
        "trap",
        "true",
        "type",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "wait",
    }
)
# Wrappers whose first operand is the command they run (`env FOO=1 npm test`, `exec node x`).
_WRAPPERS = frozenset({"exec", "command", "env", "nohup", "nice", "time"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def command_words(command: str) -> list[str]:
    """The bare names a shell would look up on PATH to run `command`, in order: the leading
    word of each simple command (after assignments, redirections and wrappers), without
    builtins, reserved words, paths or words built from expansions."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: no reading of it to trust
        return []
    words: list[str] = []
    expecting, skip_target = True, False
    for token in tokens:
        if skip_target:
            skip_target = False
            continue
        if token in _SEPARATORS:
            expecting = True
            continue
        if _REDIRECTS.match(token):
            skip_target = True
            continue
        if not expecting or token.isdigit():  # `2>log npm test`: the 2 belongs to the redirect
            continue
        if _ASSIGNMENT.match(token) or token in _RESERVED or token.startswith("-"):
            continue  # still looking for this simple command's command word
        if token in _WRAPPERS:
            continue  # what it wraps is the command word
        expecting = False
        if token not in _BUILTINS and _NAME.match(token) and token not in words:
            words.append(token)
    return words


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
