"""Every MCP tool fuzzed over real HTTP against `taskgate serve`.

Arguments are generated from each tool's own published input schema: the tool list is turned
into an OpenAPI document (one operation per tool, its inputSchema as the request body) so that
schemathesis generates them, both valid ones (half the time with real ids of this world swapped
in, so calls reach real records) and invalid ones; then hostile text is swapped into one
argument (lone surrogates, NUL, control and bidi characters, huge strings, path and template
tricks, wrong types, deep nesting). Every call must:

- never answer 5xx;
- answer either a result, an isError result whose text is JSON {code: "E_...", message, hint},
  or a JSON-RPC error with an integer code (malformed JSON, a bad envelope);
- when refused (isError or a JSON-RPC error), leave the store byte-for-byte as it was.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.schemas import APIOperation

from tests.mcp.events import LEGACY
from tests.mcp.live import Live

EXAMPLES = 12  # per tool: 25 tools, ~300 calls over HTTP

HOSTILE_TEXT = [
    "",
    " ",
    "\ud800",
    "a\udfffb",
    "\x00",
    "nul\x00inside",
    "\u202egnp.exe",
    "\r\n\r\nHTTP/1.1 200 OK",
    "../../../../etc/passwd",
    "{{7*7}}${7*7}",
    "'; DROP TABLE items; --",
    "😀" * 50,
    "x" * 200_000,
    "\ufffe\uffff",
    "agent:someone-else",
    "human:alice",
    "SPEC-999999999999999999999",
    "demo-0",
]
HOSTILE_VALUES: list[Any] = [
    None,
    True,
    -1,
    2**63,
    10**30,
    1.5,
    float("1e308"),
    [],
    {},
    json.loads("[" * 300 + "]" * 300),
    {"nested": {"nested": {"nested": "\ud800"}}},
]


class World:
    def __init__(self, live: Live) -> None:
        self.live = live
        self.project = live.project("fuzz")
        self.key, _ = live.key("fuzzer", role="architect", projects=[self.project])
        spec = live.ok(
            "POST",
            f"/api/projects/{self.project}/specs",
            {"title": "S", "criteria": [{"text": "works", "kind": "test", "verify_ref": "tests.t"}]},
        )
        self.spec = spec["id"]
        self.tasks = [
            live.ok(
                "POST", f"/api/projects/{self.project}/tasks", {"title": f"t{i}", "criteria": [{"text": "x"}]}
            )["task"]["id"]
            for i in range(4)
        ]
        self.tools = self._tools()
        self.operations = as_openapi(self.tools)

    def _tools(self) -> dict[str, dict[str, Any]]:
        r = self.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 200, r.text
        return {t["name"]: t["inputSchema"] for t in r.json()["result"]["tools"]}

    def post(self, message: Any) -> httpx2.Response:
        return httpx2.post(
            self.live.mcp_url,
            # ensure_ascii: lone surrogates travel as \\u escapes; raw bytes go as they are
            content=message if isinstance(message, bytes) else json.dumps(message),
            headers={
                "authorization": f"Bearer {self.key}",
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": LEGACY,
            },
            timeout=60,
        )

    def real(self) -> dict[str, st.SearchStrategy[Any]]:
        return {
            "project": st.just(self.project),
            "task_id": st.sampled_from(self.tasks),
            "spec_id": st.just(self.spec),
            "task_ids": st.lists(st.sampled_from(self.tasks), min_size=1, max_size=3, unique=True),
        }


def as_openapi(tools: dict[str, dict[str, Any]]) -> dict[str, APIOperation]:
    """One OpenAPI operation per tool, whose request body is the tool's input schema (its
    $defs moved to components under '<tool>__<name>', references rewritten), so that
    schemathesis generates arguments from exactly what each tool publishes."""
    components: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for name, schema in tools.items():
        text = json.dumps(schema)
        for local in schema.get("$defs", {}):
            text = text.replace(f'"#/$defs/{local}"', f'"#/components/schemas/{name}__{local}"')
        rewritten = json.loads(text)
        for local, definition in rewritten.pop("$defs", {}).items():
            components[f"{name}__{local}"] = definition
        paths[f"/tools/{name}"] = {
            "post": {
                "operationId": name,
                "requestBody": {"required": True, "content": {"application/json": {"schema": rewritten}}},
                "responses": {"200": {"description": "a result"}},
            }
        }
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "taskgate MCP tools", "version": "1"},
        "paths": paths,
        "components": {"schemas": components},
    }
    schema = schemathesis.openapi.from_dict(doc)
    return {name: schema[f"/tools/{name}"]["POST"] for name in tools}


@pytest.fixture(scope="module")
def world(live: Live) -> World:
    return World(live)


def _arguments(world: World, name: str) -> st.SearchStrategy[Any]:
    operation = world.operations[name]
    properties = world.tools[name].get("properties", {})
    valid = operation.as_strategy(generation_mode=GenerationMode.POSITIVE).map(lambda case: case.body)
    invalid = operation.as_strategy(generation_mode=GenerationMode.NEGATIVE).map(lambda case: case.body)
    real = world.real()

    def with_real_ids(args: Any) -> st.SearchStrategy[Any]:
        known = {k: v for k, v in real.items() if k in properties}
        if not known or not isinstance(args, dict):
            return st.just(args)
        if isinstance(args.get("lease_minutes"), int):
            # A claim that lapses while the fuzzing goes on would be settled by a later read,
            # a legitimate write that the "refused calls change nothing" check would misread.
            args = {**args, "lease_minutes": max(args["lease_minutes"], 60)}
        return st.fixed_dictionaries(known).map(lambda ids: {**args, **ids})

    def with_hostile(args: Any) -> st.SearchStrategy[Any]:
        names = sorted(properties) or ["unexpected"]
        base = args if isinstance(args, dict) else {}
        return st.tuples(
            st.sampled_from(names), st.sampled_from(HOSTILE_TEXT) | st.sampled_from(HOSTILE_VALUES)
        ).map(lambda kv: {**base, kv[0]: kv[1]})

    generated = st.one_of(valid, valid.flatmap(with_real_ids))
    return st.one_of(generated, generated.flatmap(with_hostile), invalid)


def _coded_refusal(body: Any) -> bool:
    """A JSON-RPC error with a real (non-zero) code, or taskgate's {code: "E_...", ...}."""
    if not isinstance(body, dict):
        return False
    error = body.get("error")
    if isinstance(error, dict):
        return isinstance(error.get("code"), int) and error["code"] != 0 and bool(error.get("message"))
    return str(body.get("code", "")).startswith("E_") and bool(body.get("message"))


def _check(world: World, name: str, arguments: Any) -> None:
    before = world.live.dump()
    if isinstance(arguments, bytes):  # not even JSON: sent as the whole request body
        message: Any = arguments
    else:
        params = {"name": name, "arguments": arguments}
        message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    r = world.post(message)
    assert r.status_code < 500, (name, r.status_code, r.text[:500])
    body = r.json()
    if r.status_code != 200 or "error" in body:
        assert _coded_refusal(body), body
        assert world.live.dump() == before, (name, "a refused call changed the store")
        return
    result = body["result"]
    if result.get("isError"):
        error = json.loads(result["content"][0]["text"])
        assert error["code"].startswith("E_") and error["code"] != "E_INTERNAL", (name, error)
        assert error["message"] and error["hint"], error
        assert world.live.dump() == before, (name, error, "a refused call changed the store")
    else:
        assert result.get("structuredContent") is not None, result


TOOL_NAMES = [
    "list_projects",
    "get_project",
    "create_spec",
    "update_spec",
    "approve_spec",
    "get_spec",
    "list_specs",
    "create_task",
    "update_task",
    "get_task",
    "list_tasks",
    "get_next_tasks",
    "claim_task",
    "heartbeat",
    "release_task",
    "report_failure",
    "escalate",
    "submit_task",
    "get_task_brief",
    "log_decision",
    "list_decisions",
    "search",
    "add_note",
    "set_execution_defaults",
    "accept_tasks",
]


def test_every_tool_is_fuzzed(world: World) -> None:
    assert sorted(world.tools) == sorted(TOOL_NAMES)


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_tool_survives_generated_and_hostile_arguments(world: World, name: str) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(arguments=_arguments(world, name))
    def run(arguments: Any) -> None:
        _check(world, name, arguments)

    run()


_ids = st.one_of(
    st.integers(),
    st.text(max_size=20),
    st.floats(allow_nan=False),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
_methods = st.sampled_from(
    [
        "tools/call",
        "tools/list",
        "prompts/get",
        "prompts/list",
        "resources/read",
        "resources/list",
        "ping",
        "nope/nothing",
        "",
    ]
)


@settings(
    max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(
    id_=_ids,
    method=_methods,
    params=st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {
                "name": st.sampled_from([*TOOL_NAMES, "nope"]),
                "arguments": st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3),
            }
        ),
        st.fixed_dictionaries({"uri": st.text(max_size=30)}),
        st.lists(st.integers(), max_size=2),
    ),
)
def test_the_json_rpc_envelope_is_fuzzed_too(world: World, id_: Any, method: str, params: Any) -> None:
    """Ids of every JSON type, methods known and not, params of the wrong shape: a request is
    answered (a result or a coded error), never dropped with a 202, never 5xx."""
    before = world.live.dump()
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    r = world.post(message)
    assert r.status_code < 500, (message, r.status_code, r.text[:300])
    assert r.status_code != 202, (message, "a request was taken for a notification and dropped")
    body = r.json()
    if "result" in body and not body["result"].get("isError"):
        return
    if "result" in body:
        error = json.loads(body["result"]["content"][0]["text"])
        assert error["code"].startswith("E_") and error["code"] != "E_INTERNAL", error
    else:
        assert _coded_refusal(body), (message, body)
    assert world.live.dump() == before, (message, "a refused request changed the store")
