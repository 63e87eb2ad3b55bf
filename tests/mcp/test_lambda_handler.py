"""The Lambda entry (taskgate.mcp.handler.handler) with real API Gateway HTTP API v2 events,
against a DynamoDB table on moto: the cloud path, warm invocations included."""

from __future__ import annotations

import gc
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from taskgate import runtime
from taskgate.domain.models import AgentRole, CredentialKind, CriterionInput, VerifierKind
from taskgate.domain.principals import Acting, acting, human
from taskgate.mcp.app import build_app
from taskgate.mcp.handler import handler
from taskgate.service import keys, projects, secrets, tasks
from taskgate.service.context import Context
from tests.mcp.events import (
    HOST,
    LEGACY,
    MODERN,
    VERSIONS,
    initialize,
    mcp_headers,
    response_json,
    rpc,
    v2_event,
)
from tests.support.dynamo import dynamodb_store
from tests.support.world import dump

SHA = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class Cloud:
    ctx: Context
    alice: Acting
    key: str  # an executor agent key
    admin_token: str

    def call(self, body: Any, *, key: str | None = None, version: str = LEGACY, **kw: Any) -> dict[str, Any]:
        headers = mcp_headers(
            key if key is not None else self.key, version, body if isinstance(body, dict) else None
        )
        headers.update(kw.pop("headers", {}))
        response: dict[str, Any] = handler(v2_event(body, headers=headers, **kw), None)
        return response

    def tool(
        self, name: str, arguments: dict[str, Any], *, version: str = LEGACY, key: str | None = None
    ) -> Any:
        r = self.call(
            rpc("tools/call", {"name": name, "arguments": arguments}, version=version),
            key=key,
            version=version,
        )
        assert r["statusCode"] == 200, r
        return response_json(r)["result"]


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[Cloud]:
    """The handler's process-wide context on a fresh moto table, chosen by the environment as
    on Lambda (TASKGATE_STORE=dynamodb, TASKGATE_TABLE)."""
    admin_token = secrets.mint(secrets.ADMIN_PREFIX)
    with dynamodb_store() as store:
        monkeypatch.setenv("TASKGATE_STORE", "dynamodb")
        monkeypatch.setenv("TASKGATE_TABLE", store.table_name)
        monkeypatch.setenv("TASKGATE_ALLOWED_HOSTS", f"{HOST},127.0.0.1:*")
        monkeypatch.setenv("TASKGATE_ALLOWED_ORIGINS", "https://board.example.com")
        monkeypatch.setenv("TASKGATE_ADMIN_TOKEN_HASH", secrets.digest(admin_token))
        monkeypatch.delenv("TASKGATE_DYNAMODB_ENDPOINT", raising=False)
        runtime._current = None  # rebuild the process context from this environment
        try:
            ctx = runtime.context()
            alice = acting(human("alice"))
            projects.create(ctx, alice, "demo", repo="https://example.com/demo.git")
            key = keys.create(ctx, alice, kind=CredentialKind.AGENT, name="exec").secret
            yield Cloud(ctx, alice, key, admin_token)
        finally:
            if runtime._current is not None:
                runtime._current[1].store.close()
            runtime._current = None


def test_initialize_list_and_call_on_a_cold_then_warm_container(cloud: Cloud) -> None:
    first = cloud.call(initialize())
    assert first["statusCode"] == 200
    assert response_json(first)["result"]["protocolVersion"] == LEGACY
    assert response_json(first)["result"]["serverInfo"]["name"] == "taskgate"

    # Second and third invocation in the same process: a new app per invocation, same server.
    listed = cloud.call(rpc("tools/list", version=LEGACY, id_=2))
    assert listed["statusCode"] == 200
    names = {t["name"] for t in response_json(listed)["result"]["tools"]}
    assert {"claim_task", "submit_task", "heartbeat", "accept_tasks", "get_task_brief"} <= names

    result = cloud.tool("list_projects", {})
    assert result["isError"] is False
    assert [p["name"] for p in result["structuredContent"]["projects"]] == ["demo"]
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]

    # A fourth, to be sure nothing from the previous invocations' lifespans is left over.
    again = cloud.tool("get_project", {"project": "demo"})
    assert again["structuredContent"]["name"] == "demo"


def test_modern_protocol_on_lambda(cloud: Cloud) -> None:
    discovered = cloud.call(rpc("server/discover", version=MODERN), version=MODERN)
    assert discovered["statusCode"] == 200
    assert MODERN in response_json(discovered)["result"]["supportedVersions"]
    for _ in range(2):  # warm
        result = cloud.tool("list_projects", {}, version=MODERN)
        assert result["structuredContent"]["projects"][0]["name"] == "demo"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_run_on_dynamodb_claim_heartbeat_submit(cloud: Cloud, version: str) -> None:
    task = tasks.create(
        cloud.ctx, cloud.alice, "demo", title="Add /healthz", criteria=[CriterionInput(text="returns 200")]
    ).task
    claimed = cloud.tool("claim_task", {"project": "demo", "task_id": task.id}, version=version)
    assert claimed["isError"] is False, claimed
    token = claimed["structuredContent"]["claim_token"]
    assert claimed["structuredContent"]["brief"]["task"]["id"] == task.id
    beat = cloud.tool(
        "heartbeat", {"task_id": task.id, "claim_token": token, "phase": "testing"}, version=version
    )
    assert beat["structuredContent"]["phase"] == "testing"
    submitted = cloud.tool(
        "submit_task",
        {"task_id": task.id, "claim_token": token, "commit_sha": SHA, "evidence": "curl shows 200"},
        version=version,
    )
    assert submitted["structuredContent"]["task"]["status"] == "needs_verification"
    assert cloud.ctx.task(task.id).last_submission() is not None

    before = dump(cloud.ctx.store)
    stale = cloud.tool("heartbeat", {"task_id": task.id, "claim_token": token}, version=version)
    assert stale["isError"] is True
    assert json.loads(stale["content"][0]["text"])["code"] == "E_STALE_CLAIM"
    assert dump(cloud.ctx.store) == before


def test_base64_encoded_body(cloud: Cloud) -> None:
    r = cloud.call(
        rpc("tools/call", {"name": "list_projects", "arguments": {}}, version=LEGACY), base64_body=True
    )
    assert r["statusCode"] == 200
    assert response_json(r)["result"]["structuredContent"]["projects"][0]["name"] == "demo"


def test_missing_invalid_and_revoked_keys_get_401_with_a_challenge(cloud: Cloud) -> None:
    body = rpc("tools/call", {"name": "list_projects", "arguments": {}}, version=LEGACY)
    minted = keys.create(cloud.ctx, cloud.alice, kind=CredentialKind.AGENT, name="gone")
    keys.revoke(cloud.ctx, cloud.alice, minted.credential.id)
    before = dump(cloud.ctx.store)
    for key, challenge in [
        ("", "Bearer"),
        ("tga_not-a-real-key", 'Bearer error="invalid_token"'),
        (minted.secret, 'Bearer error="invalid_token"'),
    ]:
        r = handler(
            v2_event(
                body,
                headers={"authorization": f"Bearer {key}" if key else None, "mcp-protocol-version": LEGACY},
            ),
            None,
        )
        assert r["statusCode"] == 401, r
        assert r["headers"]["www-authenticate"] == challenge
        assert response_json(r)["code"] == "E_UNAUTHORIZED"
    assert dump(cloud.ctx.store) == before


def test_humans_and_verifiers_are_refused_on_mcp(cloud: Cloud) -> None:
    body = rpc("tools/call", {"name": "list_projects", "arguments": {}}, version=LEGACY)
    verifier = keys.create(
        cloud.ctx, cloud.alice, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL
    ).secret
    for key in [cloud.admin_token, verifier]:
        r = cloud.call(body, key=key)
        assert r["statusCode"] == 403, r
        assert response_json(r)["code"] == "E_FORBIDDEN"
    # A Cognito human, as API Gateway's JWT authorizer passes it.
    claims = {"sub": "0b8f-11", "cognito:username": "Alice"}
    r = handler(v2_event(body, headers={"mcp-protocol-version": LEGACY}, jwt_claims=claims), None)
    assert r["statusCode"] == 403
    assert "human:alice" in response_json(r)["message"]


def test_get_and_delete_are_not_served_statelessly(cloud: Cloud) -> None:
    for method in ["GET", "DELETE"]:
        r = handler(
            v2_event(
                None,
                method=method,
                headers={"authorization": f"Bearer {cloud.key}", "accept": "text/event-stream"},
            ),
            None,
        )
        assert r["statusCode"] == 405
        assert r["headers"]["allow"] == "POST"


def test_host_and_origin_checks_on_lambda(cloud: Cloud) -> None:
    body = rpc("tools/call", {"name": "list_projects", "arguments": {}}, version=LEGACY)
    assert cloud.call(body, headers={"host": "evil.example.com"})["statusCode"] == 421
    assert cloud.call(body, headers={"origin": "https://evil.example.com"})["statusCode"] == 403
    assert cloud.call(body, headers={"origin": "https://board.example.com"})["statusCode"] == 200


def test_an_architect_key_acts_as_itself(cloud: Cloud) -> None:
    architect = keys.create(
        cloud.ctx, cloud.alice, kind=CredentialKind.AGENT, name="arch", role=AgentRole.ARCHITECT
    ).secret
    spec = cloud.tool(
        "create_spec",
        {
            "project": "demo",
            "title": "Health",
            "criteria": [{"text": "returns 200"}],
            "agent_id": "agent:arch",
        },
        key=architect,
    )
    assert spec["isError"] is False, spec
    assert spec["structuredContent"]["created_by"] == "agent:arch"
    assert spec["structuredContent"]["id"] == "SPEC-1"


def test_building_the_app_per_invocation_is_cheap(cloud: Cloud) -> None:
    """Measured so the per-invocation design stays honest: the MCPServer (tool schemas) is
    built once per process; each invocation only builds the small ASGI app around it."""
    build_app()
    # Best of five rounds with the collector paused: this measures the build itself, not a
    # full-suite heap's garbage collection (a Lambda's heap is small).
    gc.disable()
    try:
        rounds = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(50):
                build_app()
            rounds.append((time.perf_counter() - start) / 50)
    finally:
        gc.enable()
    per_build = min(rounds)
    start = time.perf_counter()
    for _ in range(20):
        cloud.tool("get_project", {"project": "demo"})
    per_call = (time.perf_counter() - start) / 20
    print(f"build_app: {per_build * 1e6:.0f} us; warm tools/call on moto: {per_call * 1e3:.1f} ms")
    assert per_build < 0.005
    assert per_build < per_call / 5


def test_only_the_mcp_package_imports_the_sdk() -> None:
    """`import mcp.server` costs over a second: only the MCP function may pay it. No module
    outside taskgate.mcp (and functions/mcp) names the SDK, and the SDK-free parts of
    taskgate.mcp (views, identity, tool bodies) load without it."""
    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(r"^(\s*)(import mcp\b|from mcp(\.|\s)|import mcp_types|from mcp_types)", re.M)
    # `taskgate demo` plays an agent with the SDK's client: imported inside the function that
    # connects, so no other command (and no Lambda function) pays for it.
    lazy_client = {"src/taskgate/demo/agent.py"}
    # The examples are programs a user runs (`python -m taskgate.examples.mcp_agent`), never
    # imported by taskgate: the import-linter layers keep every other module from them.
    examples = ("src", "taskgate", "examples")
    offenders = [
        (name, found.group(0).strip())
        for base in ("src", "functions")
        for path in (root / base).rglob("*.py")
        if "mcp" not in path.relative_to(root).parts[:3] and path.relative_to(root).parts[:3] != examples
        for name in [str(path.relative_to(root))]
        for found in pattern.finditer(path.read_text())
        if not (name in lazy_client and found.group(1))
    ]
    assert offenders == []
    code = (
        "import sys, taskgate.runtime, taskgate.mcp.views, taskgate.mcp.identity, "
        "taskgate.mcp.tools_claims, taskgate.mcp.tools_tasks, taskgate.mcp.tools_specs, "
        "taskgate.mcp.tools_projects; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("version", VERSIONS)
def test_bad_requests_on_lambda_write_nothing(cloud: Cloud, version: str) -> None:
    """The handler enforces its own limits: in the cloud nothing sits in front of it but API
    Gateway (whose payload limit is 10 MB)."""
    create = rpc(
        "tools/call",
        {"name": "create_task", "arguments": {"project": "demo", "title": "no", "criteria": [{"text": "x"}]}},
        version=version,
    )
    before = dump(cloud.ctx.store)
    big = json.loads(json.dumps(create))
    big["params"]["arguments"]["description"] = "x" * (1024 * 1024)
    assert cloud.call(big, version=version)["statusCode"] == 413
    assert cloud.call(create, version=version, headers={"accept": "text/html"})["statusCode"] == 406
    malformed = cloud.call(
        '{"jsonrpc": "2.0", "id": 1,', version=version, headers=mcp_headers(cloud.key, version)
    )
    assert malformed["statusCode"] == 400
    assert response_json(malformed)["error"]["code"] == -32700
    batch = cloud.call([create, create], version=version, headers=mcp_headers(cloud.key, version))
    assert batch["statusCode"] == 400
    typed = cloud.tool("create_task", {"project": "demo", "title": "no", "criteria": "x"}, version=version)
    assert json.loads(typed["content"][0]["text"])["code"] == "E_VALIDATION"
    assert dump(cloud.ctx.store) == before
