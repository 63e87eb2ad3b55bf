"""The request-path functions as Lambda runs them (taskgate.cloud.*: Powertools around the
handlers), in-process on DynamoDB (moto), cold then warm:

- the key authorizer with API Gateway's REQUEST authorizer event (payload 2.0);
- the MCP function with HTTP API v2 events carrying that authorizer's context, as API Gateway
  passes it on;
- the REST function with the JWT authorizer's claims (a Cognito human) and with a verifier
  key's authorizer context.

Every log line is JSON with the request's correlation id and its principal (and the task id
where the request names one); the metrics come out as EMF; no key, token or minted secret is
ever printed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from aws_lambda_powertools.metrics.provider.cold_start import reset_cold_start_flag

from taskgate.cloud import api, authorizer, mcp
from taskgate.domain.models import CredentialKind, CriterionInput, VerifierKind
from taskgate.domain.principals import acting, human
from taskgate.service import keys, projects, tasks
from tests.functions.stack import Stack, stack
from tests.mcp.events import LEGACY, mcp_headers, response_json, rpc, v2_event
from tests.support.gateway_events import authorizer_event, behind_authorizer, jwt_event
from tests.support.world import SHA

HUMAN = acting(human("alice"))


@pytest.fixture
def cloud() -> Iterator[Stack]:
    with stack() as s:
        projects.create(s.ctx, HUMAN, "shop", repo="https://git.example.com/shop.git")
        yield s


def test_the_authorizer_accepts_live_keys_and_refuses_the_rest_without_printing_a_key(cloud: Stack) -> None:
    agent_key = keys.create(cloud.ctx, HUMAN, kind=CredentialKind.AGENT, name="builder").secret
    revoked = keys.create(cloud.ctx, HUMAN, kind=CredentialKind.AGENT, name="gone")
    keys.revoke(cloud.ctx, HUMAN, revoked.credential.id)

    ok = authorizer_event(agent_key)
    first = cloud.invoke(authorizer.handler, ok)
    assert first["isAuthorized"] is True
    assert first["context"] == {
        "actor": "agent:builder",
        "credential_id": keys.authenticate(cloud.ctx, agent_key).credential_id,
        "kind": "agent",
    }
    assert cloud.invoke(authorizer.handler, authorizer_event(agent_key))["isAuthorized"] is True  # warm
    for bad in [None, "tga_not-a-key", revoked.secret, "Basic xyz"]:
        assert cloud.invoke(authorizer.handler, authorizer_event(bad)) == {"isAuthorized": False}

    logs = cloud.output.logs()
    accepted = [line for line in logs if line.get("message") == "key accepted"]
    assert len(accepted) == 2 and {line["principal"] for line in accepted} == {"agent:builder"}
    assert accepted[0]["correlation_id"] == ok["requestContext"]["requestId"]
    # Each line names its request, not what its log group and Lambda's metrics already say
    # (ingestion is billed per byte: bench/cost.py).
    for line in accepted:
        assert line["function_request_id"] and line["level"] == "INFO", line
        assert not {
            "function_arn",
            "function_name",
            "function_memory_size",
            "cold_start",
            "location",
            "service",
        } & set(line), line
    refused = [line for line in logs if line.get("message") == "key refused"]
    assert len(refused) == 4 and all("principal" not in line for line in refused)
    assert cloud.output.metrics()[("Refusals", (("code", "E_UNAUTHORIZED"),))] == 4
    for secret in [agent_key, revoked.secret, "tga_not-a-key"]:
        assert secret not in cloud.output.text()


def _keys_on_every_line(lines: list[dict[str, Any]], correlation_id: str, principal: str) -> None:
    assert lines, "the invocation logged nothing"
    for line in lines:
        assert line["correlation_id"] == correlation_id, line
        assert line["principal"] == principal, line


def test_an_agent_claims_and_submits_through_the_mcp_function(cloud: Stack) -> None:
    key = keys.create(cloud.ctx, HUMAN, kind=CredentialKind.AGENT, name="builder").secret
    task = tasks.create(cloud.ctx, HUMAN, "shop", title="Cart", criteria=[CriterionInput(text="ok")]).task
    request_ids: list[str] = []

    def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = rpc("tools/call", {"name": name, "arguments": arguments}, version=LEGACY)
        answer = cloud.invoke(authorizer.handler, authorizer_event(key))
        event = behind_authorizer(v2_event(body, headers=mcp_headers(key, LEGACY, body)), answer)
        request_ids.append(event["requestContext"]["requestId"])
        response: dict[str, Any] = cloud.invoke(mcp.handler, event)
        assert response["statusCode"] == 200, response
        result: dict[str, Any] = response_json(response)["result"]
        return result

    claimed = tool("claim_task", {"project": "shop", "task_id": task.id})
    assert claimed["isError"] is False, claimed
    token = claimed["structuredContent"]["claim_token"]
    assert tool("heartbeat", {"task_id": task.id, "claim_token": token})["isError"] is False
    submitted = tool(
        "submit_task", {"task_id": task.id, "claim_token": token, "commit_sha": SHA, "evidence": "done"}
    )
    assert submitted["structuredContent"]["task"]["status"] == "needs_verification"
    stale = tool("heartbeat", {"task_id": task.id, "claim_token": token})
    assert stale["isError"] is True and json.loads(stale["content"][0]["text"])["code"] == "E_STALE_CLAIM"

    metrics = cloud.output.metrics()
    assert metrics[("Claims", ())] == 1
    assert metrics[("Submissions", ())] == 1
    assert metrics[("Refusals", (("code", "E_STALE_CLAIM"),))] == 1
    assert ("LostRaces", ()) not in metrics

    for request_id, name in zip(
        request_ids, ["claim_task", "heartbeat", "submit_task", "heartbeat"], strict=True
    ):
        lines = [line for line in cloud.output.logs() if line.get("correlation_id") == request_id]
        _keys_on_every_line(lines, request_id, "agent:builder")
        assert all(line["task_id"] == task.id and line["tool"] == name for line in lines)
        assert [line["status"] for line in lines if line["message"] == "request"] == [200]
    for secret in [key, token]:
        assert secret not in cloud.output.text()


def test_a_human_uses_the_rest_function_and_minted_keys_are_never_logged(cloud: Stack) -> None:
    reset_cold_start_flag()  # a new execution environment (the flag is per process)
    minting = jwt_event("POST", "/api/keys", {"kind": "agent", "name": "builder"})
    created = cloud.invoke(api.handler, minting)
    assert created["statusCode"] == 201, created
    secret = json.loads(created["body"])["key"]
    listing = jwt_event("GET", "/api/projects")
    assert cloud.invoke(api.handler, listing)["statusCode"] == 200  # warm
    task = tasks.create(cloud.ctx, HUMAN, "shop", title="Cart", criteria=[CriterionInput(text="ok")]).task
    missing = jwt_event("GET", "/api/tasks/shop-999")
    assert cloud.invoke(api.handler, missing)["statusCode"] == 404
    showing = jwt_event("GET", f"/api/tasks/{task.id}")
    assert cloud.invoke(api.handler, showing)["statusCode"] == 200

    for event, task_id, status in [
        (minting, None, 201),
        (listing, None, 200),
        (missing, "shop-999", 404),
        (showing, task.id, 200),
    ]:
        request_id = event["requestContext"]["requestId"]
        lines = [line for line in cloud.output.logs() if line.get("correlation_id") == request_id]
        _keys_on_every_line(lines, request_id, "human:carol")
        assert all(line.get("task_id") == task_id for line in lines)
        assert [line["status"] for line in lines if line["message"] == "request"] == [status]
    assert secret not in cloud.output.text()
    assert "eyJraWQiOi" not in cloud.output.text()
    assert cloud.output.metrics()[("Refusals", (("code", "E_NOT_FOUND"),))] == 1
    assert len([d for d in cloud.output.lines() if "ColdStart" in d]) == 1  # first invocation only


def test_a_store_failure_is_a_500_whose_error_line_carries_the_request_keys(cloud: Stack) -> None:
    task = tasks.create(cloud.ctx, HUMAN, "shop", title="Cart", criteria=[CriterionInput(text="ok")]).task
    cloud.dynamodb.delete_table(TableName=cloud.table)  # DynamoDB answers ResourceNotFound from now on
    event = jwt_event("GET", f"/api/tasks/{task.id}")
    response = cloud.invoke(api.handler, event)
    assert response["statusCode"] == 500
    assert json.loads(response["body"])["code"] == "E_INTERNAL"
    request_id = event["requestContext"]["requestId"]
    lines = [line for line in cloud.output.logs() if line.get("correlation_id") == request_id]
    _keys_on_every_line(lines, request_id, "human:carol")
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["name"] == "taskgate.api"  # the package's own logger, in Powertools' shape
    assert error["task_id"] == task.id
    assert "ResourceNotFoundException" in error["exception"]


def test_the_verifier_calls_the_rest_function_behind_the_key_authorizer(cloud: Stack) -> None:
    from taskgate.service import claims

    verifier_key = keys.create(
        cloud.ctx, HUMAN, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL
    ).secret
    agent = acting(
        keys.authenticate(
            cloud.ctx, keys.create(cloud.ctx, HUMAN, kind=CredentialKind.AGENT, name="b").secret
        )
    )
    projects.set_verifier_config(cloud.ctx, HUMAN, "shop", {"checks": {"unit": {"command": "pytest"}}})
    projects.set_verification(cloud.ctx, HUMAN, "shop", True)
    task = tasks.create(cloud.ctx, HUMAN, "shop", title="Cart", criteria=[CriterionInput(text="ok")]).task
    token = claims.claim(cloud.ctx, agent, "shop", task_id=task.id).token
    claims.submit(cloud.ctx, agent, task.id, token, commit_sha=SHA, evidence="done")

    events: list[dict[str, Any]] = []

    def verifier_call(method: str, path: str, body: Any = None) -> dict[str, Any]:
        answer = cloud.invoke(authorizer.handler, authorizer_event(verifier_key, route=f"{method} {path}"))
        event = v2_event(body, method=method, path=path, headers={"authorization": f"Bearer {verifier_key}"})
        events.append(behind_authorizer(event, answer))
        response: dict[str, Any] = cloud.invoke(api.handler, events[-1])
        return response

    started = verifier_call("POST", "/api/verifier/runs", {"task_id": task.id})
    assert started["statusCode"] == 201, started
    run_id = json.loads(started["body"])["run_id"]
    finished = verifier_call(
        "POST",
        f"/api/verifier/runs/{task.id}/{run_id}/finish",
        {
            "checks": {"unit": {"exit_code": 0, "output_tail": "1 passed"}},
            "results": {},
            "error": "no report",
        },
    )
    assert finished["statusCode"] == 200, finished
    outcome = json.loads(finished["body"])["run"]["status"]
    assert outcome == "error"
    assert cloud.output.metrics()[("Verdicts", (("outcome", "error"),))] == 1

    for event in events:
        request_id = event["requestContext"]["requestId"]
        lines = [line for line in cloud.output.logs() if line.get("correlation_id") == request_id]
        _keys_on_every_line(lines, request_id, "verifier:ci")
        assert all(line["task_id"] == task.id for line in lines)
    assert verifier_key not in cloud.output.text()
