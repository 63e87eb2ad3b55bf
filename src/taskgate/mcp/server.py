"""The taskgate MCP server: one MCPServer per process holding every agent tool.

Built once per process (a warm Lambda reuses it); the ASGI app around it is built per
request in app.py, because the SDK's streamable-HTTP session manager runs only once.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server import CacheHint, MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import X_MCP_HEADER_KEY
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from opentelemetry import trace
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

import taskgate
from taskgate import telemetry
from taskgate.domain.errors import TaskgateError
from taskgate.domain.text import CheckedText
from taskgate.mcp import tools_claims, tools_projects, tools_specs, tools_tasks, workers  # noqa: F401  (registers tools)
from taskgate.mcp.errors import bad_arguments, error_result, internal_result, unknown_arguments
from taskgate.mcp.registry import TOOLS, ToolDef
from taskgate.telemetry import Metric

log = logging.getLogger("taskgate.mcp")

INSTRUCTIONS = """\
taskgate is a task board for coding agents. Your identity and permissions come from your key.
Typical run: list_projects -> claim_task(project) (the server picks one of the best ready tasks
for you; keep the claim_token; the result includes the brief) -> work, calling
heartbeat(task_id, claim_token) before the lease runs out -> submit_task(task_id, claim_token,
commit_sha, evidence) and stop. get_next_tasks(project) only looks; claim_task(task_id=...) takes
one particular task.
If you cannot finish: report_failure, escalate (a human must decide) or release_task. A task's
acceptance criteria are fixed once work can start: if one is wrong, report_failure(kind='spec_gap').
Architects write specs (create_spec) and tasks (create_task); low-risk specs they may approve.
Errors come back as JSON {code, message, hint}: follow the hint."""


# Tools whose every success is an operational event worth a metric.
_COUNTED = {"claim_task": Metric.CLAIMS, "submit_task": Metric.SUBMISSIONS}


class TaskgateMCP(MCPServer[Any]):
    """MCPServer whose tool failures come back in taskgate's error shape.

    A tool raises TaskgateError to refuse; arguments that fail their schema, or name an
    argument the tool does not take, are refused as E_VALIDATION before the tool runs. Both
    come back as an isError tool result (the model can correct itself); an unknown tool name
    is a JSON-RPC error (-32602), as the MCP spec's error section shows it.
    """

    def __init__(self) -> None:
        super().__init__(
            "taskgate",
            version=taskgate.__version__,
            instructions=INSTRUCTIONS,
            log_level="WARNING",
            # The catalog changes only with a deploy and is the same for every key: 2026-07-28
            # clients may reuse it for a while instead of listing before each call.
            cache_hints={"tools/list": CacheHint(ttl_ms=10 * 60 * 1000, scope="public")},
            tools=[_tool(d) for d in TOOLS],
        )
        self._arguments: dict[str, list[str]] = {
            d.fn.__name__: list(inspect.signature(d.fn).parameters) for d in TOOLS
        }
        if not _tracing():
            # The SDK wraps every message in an OpenTelemetry span by default, a no-op until a
            # tracer provider is installed, yet paid on every call (attributes, context managers).
            # taskgate installs none (Lambda traces with Powertools/X-Ray): drop it, as the SDK
            # says to opt out. A host that installs a provider first (e.g. an ADOT Lambda
            # layer, before this is built) keeps the spans.
            self.middleware[:] = [m for m in self.middleware if type(m).__name__ != _OTEL_MIDDLEWARE]
        # Tools whose input schema declares Mcp-Param-* headers (x-mcp-header): none today.
        self._declares_headers = {
            t.name for t in self._tool_manager.list_tools() if X_MCP_HEADER_KEY in json.dumps(t.parameters)
        }

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        """The schema the SDK checks a 2026-07-28 call's Mcp-Param-* headers against, before the
        call runs. A schema that declares no header finds nothing to check (a stray header is
        not an error either way), but the SDK walks the whole schema on every call to learn
        that: None says the same at once (the SDK's documented "no declared headers" answer)."""
        return super()._tool_input_schema(name) if name in self._declares_headers else None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        known = self._arguments.get(name)
        if known is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}; tools/list shows the tools")
        extra = sorted(set(arguments) - set(known))
        if extra:
            return error_result(unknown_arguments(name, extra, known))
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, TaskgateError):
                return error_result(cause)
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                # The arguments failed the tool's input schema.
                tool = self._tool_manager.get_tool(name)
                return error_result(bad_arguments(name, cause, tool.fn_metadata.arg_model if tool else None))
            if isinstance(cause, NotUnicode):
                log.error("tool %s: its answer holds text that is not valid Unicode", name)
                return internal_result(name)
            # A bug, or stored data no answer can carry: logged with its traceback, answered
            # with a code (never the SDK's bare "Error executing tool"). Nothing the tool
            # commits comes after its answer is ready (claim_task builds the brief first).
            log.error("tool %s failed", name, exc_info=cause or exc)
            return internal_result(name)
        if name in _COUNTED and not (isinstance(result, CallToolResult) and result.is_error):
            telemetry.count(_COUNTED[name])
        return result

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        # taskgate has no prompts: an unknown name is the caller's mistake (-32602, as for an
        # unknown tool), not the SDK's code-0 error.
        raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}; this server has no prompts")


# Matched by name: the SDK's class lives in a private module (mcp.server._otel) that a 2.x
# release may move; if it is renamed, the spans stay (the cost of a no-op), nothing breaks.
_OTEL_MIDDLEWARE = "OpenTelemetryMiddleware"


def _tracing() -> bool:
    """Whether an OpenTelemetry tracer provider is installed (the API's default is a proxy that
    stays a no-op until one is)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider)


class NotUnicode(Exception):
    """A tool's answer holds text with no UTF-8 form (a lone surrogate): no response can carry it."""


def _tool(d: ToolDef) -> Tool:
    """The SDK's Tool for one of ours, its argument model checked for text that is not valid
    Unicode (domain.text.CheckedText, the check every input model of both interfaces uses).

    Its output schema is the one the SDK derives from the tool's return annotation (a views
    model), published as is; the tool hands the SDK a finished CallToolResult (_runner), so the
    SDK keeps the schema but not the model (its documented "schema without a model: advertised,
    not validated" case). The SDK would otherwise, per call, validate the returned model again,
    dump it, render an indented text copy this server throws away, and build the result: our
    answers are models our own code just built (validated when constructed), dumped once here."""
    tool = Tool.from_function(
        _runner(d),
        title=d.title,
        annotations=ToolAnnotations(
            title=d.title,
            read_only_hint=d.read_only,
            destructive_hint=False,
            idempotent_hint=d.idempotent,
            open_world_hint=False,
        ),
    )
    base = tool.fn_metadata.arg_model
    # FuncMetadata reads arg_model on each call (its documented behaviour); the published input
    # schema was generated from the same fields before this and does not change.
    tool.fn_metadata.arg_model = type(base.__name__, (base, CheckedText), {"__module__": base.__module__})
    assert tool.fn_metadata.output_schema is not None and not tool.fn_metadata.wrap_output, d.fn.__name__
    tool.fn_metadata.output_model = None
    return tool


def _runner(d: ToolDef) -> Callable[..., Awaitable[Any]]:
    """The tool as a coroutine: its blocking body runs in a worker thread (workers.run), a few
    per event loop. The SDK would run a plain function in a thread too, but through anyio's
    default limiter (40 threads), which is no bound for store work that queues on the GIL."""
    fn = d.fn

    @functools.wraps(fn)  # the SDK reads the schema from the wrapped signature
    async def tool(**arguments: Any) -> CallToolResult:
        return answer(await workers.run(fn, **arguments))

    return tool


def answer(model: BaseModel) -> CallToolResult:
    """A tool's answer as the MCP result: the model as structured content, and its compact JSON as
    the text copy (the SDK's copy is indented; agents pay per token). pydantic_core encodes in one
    native call and refuses text with no UTF-8 form (a lone surrogate): NotUnicode."""
    structured = model.model_dump(mode="json", by_alias=True)
    try:
        text = to_json(structured).decode()
    except PydanticSerializationError as exc:
        raise NotUnicode from exc
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _build() -> TaskgateMCP:
    # MCPServer.__init__ calls logging.basicConfig (a rich handler on the root logger) when the
    # root has none; that would silently turn the host's own basicConfig (taskgate serve,
    # Lambda's Powertools) into a no-op. Leave the root logger as we found it.
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        return TaskgateMCP()
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


_server: TaskgateMCP | None = None
_building = threading.Lock()


def get_server() -> TaskgateMCP:
    """The process's server, built on first use: building the tool schemas is a large part of a cold start, which a
    Lambda with SnapStart pays before its snapshot (taskgate.cloud.mcp) instead of at import."""
    global _server
    with _building:
        if _server is None:
            _server = _build()
        return _server


def __getattr__(name: str) -> Any:  # `from taskgate.mcp.server import server` still works
    if name == "server":
        return get_server()
    raise AttributeError(name)
