"""Refusals as MCP tool results: isError true, text = JSON {code, message, current_status?, hint}.

A model reads the text; a program parses it and branches on `code`.
"""

from __future__ import annotations

import json

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from taskgate import telemetry
from taskgate.domain import validation
from taskgate.domain.errors import INTERNAL, TaskgateError, invalid
from taskgate.telemetry import Metric


def error_result(exc: TaskgateError) -> CallToolResult:
    telemetry.count(Metric.REFUSALS, code=exc.code.value)
    body = {**exc.to_dict(), "hint": exc.hint}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], is_error=True)


INTERNAL_HINT = "The server failed on its side; calling again will not help. Tell a human (the server log has the details)."


def internal_result(tool: str) -> CallToolResult:
    body = {"code": INTERNAL, "message": f"{tool} failed inside the server", "hint": INTERNAL_HINT}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], is_error=True)


def bad_arguments(tool: str, exc: ValidationError, arguments: type[BaseModel] | None) -> TaskgateError:
    """One readable line per wrong argument (no input values echoed back: they may be long); an
    unknown key inside an argument is named with the nearest known ones."""
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        problems.append(f"{where}: {validation.explain(err, arguments)}")
    return invalid(f"wrong arguments for {tool}: " + "; ".join(problems))


def unknown_arguments(tool: str, names: list[str], known: list[str]) -> TaskgateError:
    return invalid(f"{tool} has no argument {', '.join(names)}; it takes: {', '.join(known)}")
