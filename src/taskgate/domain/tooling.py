"""A check the verifier could not run for want of a tool: the verifier's error, not the work's.

The verifier reports each check's exit code and, when its shell could not run one of the
command's own tools (exit 126: not executable; 127: not found), that tool's name
(verifier/tools.py says how it makes sure). The server decides: such a run is an error of the
run, which uses no attempt, naming the tool; a named tool the configured command does not run,
or any other exit code, is not this case and stays a failing check.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskgate.domain.outcome import CheckResult
    from taskgate.domain.verifier_config import VerifierConfig

# dash answers 127 for a file on PATH it may not execute, too ("Permission denied").
NOT_RUNNABLE = {126: "not executable", 127: "not found or not executable"}
_WORDS = re.compile(r"[\s;&|()<>`$]+")


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
        if tool not in _WORDS.split(spec.command):
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
