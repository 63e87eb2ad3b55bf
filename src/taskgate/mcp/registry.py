"""The tool list, collected at import: each tools_* module decorates its functions with `tool`.

A tool is a plain (blocking) function with typed, described parameters returning a views
model; it raises TaskgateError to refuse. server.py runs it in a worker thread (workers.py) and
turns its return into the MCP result (and the error result), so the tool bodies stay thin:
parse -> call the service -> shape.
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


TOOLS: list[ToolDef] = []


def tool(title: str, *, read_only: bool = False, idempotent: bool = False) -> Callable[[F], F]:
    def register(fn: F) -> F:
        TOOLS.append(ToolDef(fn, title, read_only, idempotent or read_only))
        return fn

    return register
