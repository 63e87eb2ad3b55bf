"""Friendly ids: <project>-<n> for tasks, SPEC-<n>, AC-<n>.<m>, DEC-<n>."""

from __future__ import annotations

import functools
import re

from taskgate.domain.errors import invalid

TASK_ID_RE = re.compile(r"^([a-z0-9][a-z0-9-]{0,39})-([1-9][0-9]{0,8})$")
SPEC_ID_RE = re.compile(r"^SPEC-([1-9][0-9]{0,8})$")
DECISION_ID_RE = re.compile(r"^DEC-([1-9][0-9]{0,8})$")


def task_id(project: str, number: int) -> str:
    return f"{project}-{number}"


@functools.lru_cache(maxsize=4096)
def parse_task_id(value: str) -> tuple[str, int]:
    # Cached (a pure function of the text; a refusal raises, which is never cached): one MCP call
    # parses the same id four times or more, for its keys and its permission checks.
    m = TASK_ID_RE.match(value)
    if not m:
        raise invalid(f"{value!r} is not a task id (<project>-<number>)")
    return m.group(1), int(m.group(2))


def spec_id(number: int) -> str:
    return f"SPEC-{number}"


def parse_spec_id(value: str) -> int:
    m = SPEC_ID_RE.match(value)
    if not m:
        raise invalid(f"{value!r} is not a spec id (SPEC-<number>)")
    return int(m.group(1))


def criterion_id(spec_number: int, index: int) -> str:
    return f"AC-{spec_number}.{index}"


def own_criterion_id(task: str, index: int) -> str:
    """Criteria a task holds without a spec are numbered under the task id."""
    return f"AC-{task}.{index}"


def decision_id(number: int) -> str:
    return f"DEC-{number}"


def parse_decision_id(value: str) -> int:
    m = DECISION_ID_RE.match(value)
    if not m:
        raise invalid(f"{value!r} is not a decision id (DEC-<number>)")
    return int(m.group(1))
