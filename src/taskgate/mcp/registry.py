"""The tool list, collected at import: each tools_* module decorates its functions with `tool`.

A tool is a plain (blocking) function with typed, described parameters returning a views
model; it raises TaskgateError to refuse. server.py runs it (workers.py says where: a worker
thread, or the event loop for a bounded tool on a local store) and turns its return into the
MCP result (and the error result), so the tool bodies stay thin: parse -> call the service ->
shape.

`bounded`: the tool does a handful of point reads and at most one commit, whatever the data
(the agent's hot loop: look, claim, heartbeat, finish). Lists, searches, batches and writes
that cascade are not bounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ToolDef:
    fn: Callable[..., Any]
    title: str
    read_only: bool
    idempotent: bool
    bounded: bool


TOOLS: list[ToolDef] = []


def tool(
    title: str, *, read_only: bool = False, idempotent: bool = False, bounded: bool = False
) -> Callable[[F], F]:
    def register(fn: F) -> F:
        TOOLS.append(ToolDef(fn, title, read_only, idempotent or read_only, bounded))
        return fn

    return register
