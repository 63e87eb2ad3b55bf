"""Property-based tests of every operation in the served OpenAPI document (schemathesis).

The schema is loaded from /api/openapi.json as the handler serves it, and every generated
request goes through the Lambda handler as an API Gateway v2 event (tests/api/wsgi.py), with
the credential the operation is declared for. Checks: no 5xx, and every response conforms to
the schema documented for its status. A fixed, derandomized example budget keeps it short.

Bodies are generated valid and invalid (schemathesis' negative mode), and a hook turns some of
them hostile: a lone UTF-16 surrogate in one string, a value nested hundreds deep,
or a body that is nothing but nesting. Each must be refused with a 4xx, never a 500.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from taskgate.api.routes.docs import OPENAPI_PATH
from tests.api import wsgi
from tests.api.support import ADMIN_TOKEN, Env

EXAMPLES = 25

schema = schemathesis.openapi.from_wsgi(OPENAPI_PATH, wsgi.app)
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])

SURROGATE = "lone \ud800 surrogate"
DEEP = json.loads("[" * 300 + "]" * 300)  # a value nested deeper than any body of ours
# A body nested far deeper than Python's recursion limit: sent as raw bytes (schemathesis sends
# bytes as they are), since the client's own JSON encoder would refuse to write it.
DEEPEST = b"[" * 100_000 + b"]" * 100_000


def _hostile(body: dict[str, Any]) -> st.SearchStrategy[Any]:
    """The body with one value made hostile: bad text in a string, or deep nesting."""
    keys = sorted(body)

    def swap(key: str, value: Any) -> dict[str, Any]:
        return {**body, key: value}

    strings = [k for k in keys if isinstance(body[k], str)]
    options: list[st.SearchStrategy[Any]] = [st.just(DEEPEST)]
    if keys:
        options.append(st.sampled_from(keys).map(lambda k: swap(k, DEEP)))
        options.append(st.sampled_from(keys).map(lambda k: swap(k, [SURROGATE])))
    if strings:
        options.append(st.sampled_from(strings).map(lambda k: swap(k, SURROGATE)))
    options.append(st.just({**body, SURROGATE: "a key"}))
    return st.one_of(options)


@schema.hook
def flatmap_body(context: Any, body: Any) -> Any:
    """A third of the bodies turned hostile."""
    if not isinstance(body, dict):
        return st.just(body)
    return st.one_of(st.just(body), st.just(body), _hostile(body))


# Ids that exist in fuzz_env's world, so many requests reach real records instead of a 404.
KNOWN = {
    "project": ["demo"],
    "task_id": ["demo-1", "demo-2", "demo-3", "demo-4", "demo-5"],
    "spec_id": ["SPEC-1"],
}


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any] | None) -> Any:
    """Half the time, swap generated ids for real ones."""
    path_parameters = path_parameters or {}
    known = {k: st.sampled_from(v) for k, v in KNOWN.items() if k in path_parameters}
    if not known:
        return st.just(path_parameters)
    real = st.fixed_dictionaries(known).map(lambda ids: {**path_parameters, **ids})
    return st.one_of(st.just(path_parameters), real)


@pytest.fixture(scope="module")
def fuzz_env(shared_env: Env) -> Env:
    pid = shared_env.project("demo", verification=True)
    shared_env.world.spec(pid, approve=False)  # SPEC-1
    for _ in range(3):
        shared_env.submitted(pid)  # demo-1..3
    shared_env.escalated(pid)  # demo-4
    shared_env.task(pid)  # demo-5, ready
    return shared_env


def _credential(env: Env, access: str) -> str:
    return {"local_verifier": env.secrets["verifier"], "reviewer": env.secrets["reviewer"]}.get(
        access, ADMIN_TOKEN
    )


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_operation(case: schemathesis.Case, fuzz_env: Env) -> None:
    access = case.operation.definition.raw.get("x-taskgate-access", "human")
    headers = {"Authorization": f"Bearer {_credential(fuzz_env, access)}"}
    case.call_and_validate(headers=headers, checks=[not_a_server_error, response_schema_conformance])
