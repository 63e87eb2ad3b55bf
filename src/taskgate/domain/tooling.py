"""A check the verifier could not run for want of a tool: the verifier's error, not the work's.

The verifier reports each check's exit code and, when its shell could not run one of the
command's own tools (exit 126: not executable; 127: not found), that tool's name
(verifier/tools.py says how it makes sure). The server decides: such a run is an error of the
run, which uses no attempt, naming the tool; a named tool the configured command does not run,
or any other exit code, is not this case and stays a failing check.

Both sides read a command's tools the same way (command_words): the shell grammar through
`shlex` (punctuation mode splits `&&`, `|`, `;` and the like), enough to find the command words
of a check line; a line shlex cannot read names no tool.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskgate.domain.run_report import CheckResult
    from taskgate.domain.verifier_config import VerifierConfig

# dash answers 127 for a file on PATH it may not execute, too ("Permission denied").
NOT_RUNNABLE = {126: "not executable", 127: "not found or not executable"}


def missing_tools(checks: Mapping[str, CheckResult], config: VerifierConfig | None) -> str | None:
    """What to say when a configured check could not run for want of a tool; None otherwise."""
    if config is None:
        return None
    said = []
    for name in sorted(checks):
        c, spec = checks[name], config.checks.get(name)
        tool = c.missing_tool
        if tool is None or spec is None or c.exit_code not in NOT_RUNNABLE:
            continue
        if tool not in command_words(spec.command):
            continue
        said.append(no_tool(tool, f"check {name}", spec.command, c.exit_code))
    if not said:
        return None
    return "; ".join(said) + ADVICE


ADVICE = (
    ". The work was not tried: add the tool to the verifier's image (docs/deploy.md: an image "
    'built FROM the verifier image) and name that image in the verifier config\'s "image"'
)


def no_tool(tool: str, what: str, command: str, exit_code: int) -> str:
    """One line for a tool the verifier lacks: the same words for a check, a command criterion
    and the reviewer."""
    return (
        f"the verifier's image has no `{tool}`: {what} (`{command}`) exited {exit_code}, "
        f"`{tool}` {NOT_RUNNABLE.get(exit_code, 'not runnable')} on the verifier's PATH"
    )


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
    return [w for w in _leading_words(command) if w not in _BUILTINS and _NAME.match(w)]


def command_paths(command: str) -> list[str]:
    """The paths inside the checkout `command` runs as commands (`.venv/bin/python`,
    `./run-tests`), in order: leading words with a `/` that is not at their start."""
    return [w for w in _leading_words(command) if "/" in w and not w.startswith(("/", "~", "$"))]


def unmade_paths(commands: Mapping[str, str]) -> list[str]:
    """A warning for each check (in order) that runs a path inside the checkout which no
    earlier check's command names: unless the repository holds it, the check cannot start,
    and the verifier reports that check as failing on the baseline too."""
    said: list[str] = []
    earlier: list[str] = []
    for name, command in commands.items():
        for path in command_paths(command):
            top = path.removeprefix("./").split("/", 1)[0]
            if not any(top in before for before in earlier):
                said.append(
                    f"check {name} runs {path}, a path inside the checkout that no earlier check "
                    "creates: it runs only if the repository holds it"
                )
        earlier.append(command)
    return said


def _leading_words(command: str) -> list[str]:
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
        if token not in words:
            words.append(token)
    return words


# `python -m pytest` (and the like) where that module is not installed: Python's own words.
_NO_MODULE = re.compile(r"No module named '?([A-Za-z_][\w.]*)'?")
_RUN_MODULE = re.compile(r"(?:^|\s)-m\s*([A-Za-z_][\w.]*)")


def environment_failure(command: str, exit_code: int | None, output: str, report_missing: bool) -> str | None:
    """How a check failed, when the failure may be the environment's rather than the work's:
    its runner could not be started (exit 126 or 127, for a path as well as a command on PATH;
    a module it runs with `-m` is not installed) or it failed without writing its report. The
    verifier then runs it again on the baseline's tree, and the same answer there makes the run
    an error. None: a failure that says nothing of the environment (or no failure)."""
    if exit_code is None or exit_code == 0:
        return None
    if exit_code in NOT_RUNNABLE:
        return f"exit {exit_code} (its command {NOT_RUNNABLE[exit_code]})"
    modules = {m.group(1) for m in _RUN_MODULE.finditer(command)}
    for found in _NO_MODULE.finditer(output):
        if found.group(1) in modules:
            return f"exit {exit_code}, `No module named {found.group(1)}`"
    if report_missing:
        return f"exit {exit_code} without writing its report"
    return None


def fails_on_baseline(name: str, how: str) -> str:
    """The reason of a run whose check fails the same way on the baseline's tree."""
    return (
        f"check {name} fails on the baseline too ({how}): the check does not run in this "
        "verifier's environment, so the submission was not tried. Fix the check or the "
        "verifier's image; no attempt was used"
    )
