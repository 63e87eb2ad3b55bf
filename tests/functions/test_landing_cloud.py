"""Landing in the cloud, on moto: an accept that puts a task in the landing queue is a stream
record the dispatcher passes, and it starts a verifier draining the project; a move of the base
branch with landing on starts none for stale verdicts (the queue re-checks them as they land).
The push credential is the verifier secret's git token, injected into the verifier task only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from taskgate.cloud.dispatcher import handler
from taskgate.cloud.ecs import drain_command
from taskgate.domain.models import CredentialKind, CriterionInput, CriterionKind, Status, VerifierKind
from taskgate.domain.principals import Acting, acting, human
from taskgate.domain.run_report import Evidence
from taskgate.service import claims, keys, landing, projects, review, staleness, tasks
from tests.functions.stack import Stack, resource, stack, stream_event
from tests.support.evidence import BASE0, CONFIG, TIP1, run_verifier
from tests.support.world import SHA

HUMAN = acting(human("alice"))
CRITERIA = [CriterionInput(text="cart works", kind=CriterionKind.TEST, verify_ref="tests.test_cart")]


@pytest.fixture
def cloud() -> Iterator[Stack]:
    with stack() as s:
        yield s


def _landing_project(s: Stack, name: str) -> Acting:
    """A project that lands accepted work; its local verifier."""
    projects.create(s.ctx, HUMAN, name, repo=f"https://git.example.com/{name}.git")
    secret = keys.create(
        s.ctx, HUMAN, kind=CredentialKind.VERIFIER, name=f"{name}-ci", verifier_kind=VerifierKind.LOCAL,
        projects_=[name],
    ).secret  # fmt: skip
    projects.set_verifier_config(s.ctx, HUMAN, name, {**CONFIG, "land": True})
    projects.set_verification(s.ctx, HUMAN, name, True)
    return acting(keys.authenticate(s.ctx, secret))


def _verified(s: Stack, project: str, verifier: Acting) -> str:
    agent = acting(
        keys.authenticate(s.ctx, keys.create(s.ctx, HUMAN, kind=CredentialKind.AGENT, name="b").secret)
    )
    task = tasks.create(s.ctx, HUMAN, project, title="Cart", criteria=CRITERIA).task
    token = claims.claim(s.ctx, agent, project, task_id=task.id).token
    claims.submit(s.ctx, agent, task.id, token, commit_sha=SHA, evidence="did it")
    run_verifier(s.ctx, verifier, task.id, Evidence.PASS, base=BASE0)
    assert s.ctx.task(task.id).status is Status.VERIFIED
    return task.id


def _commands(s: Stack) -> list[list[str]]:
    arns = s.ecs.list_tasks(cluster=s.cluster)["taskArns"]
    started = s.ecs.describe_tasks(cluster=s.cluster, tasks=arns)["tasks"] if arns else []
    return [o["command"] for t in started for o in t["overrides"]["containerOverrides"]]


def _logged(s: Stack, message: str) -> list[dict[str, Any]]:
    return [line for line in s.output.logs() if line.get("message") == message]


def test_an_accept_into_the_landing_queue_starts_a_verifier_to_land_it(cloud: Stack) -> None:
    ci = _landing_project(cloud, "shop")
    tid = _verified(cloud, "shop", ci)
    cloud.new_records()  # the submission was verified: its drain task came and went
    before = len(_commands(cloud))
    assert review.accept(cloud.ctx, HUMAN, tid).status is Status.LANDING
    delivered = cloud.delivered(cloud.new_records())
    queued = [r for r in delivered if r["dynamodb"]["Keys"]["SK"]["S"] == "LANDING"]
    assert len(queued) == 1
    assert cloud.invoke(handler, stream_event(queued)) == {"batchItemFailures": []}
    assert _commands(cloud)[before:] == [drain_command("shop")]
    assert [(m["outcome"], m["project"]) for m in _logged(cloud, "landing queue")] == [("started", "shop")]


def test_with_landing_on_a_moved_base_starts_no_verifier_for_stale_verdicts(cloud: Stack) -> None:
    ci = _landing_project(cloud, "shop")
    _verified(cloud, "shop", ci)
    cloud.new_records()
    before = len(_commands(cloud))
    moved = staleness.base_moved(cloud.ctx, ci, "shop", ref="refs/heads/main", tip=TIP1)
    assert moved.stale  # stale, as ever: marked, not re-verified
    delivered = cloud.delivered(cloud.new_records())
    assert len(delivered) == 1
    assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    assert _commands(cloud)[before:] == []
    assert [m["outcome"] for m in _logged(cloud, "base moved")] == ["nothing_stale"]
    assert landing.load(cloud.ctx, "shop").entries == []


def test_the_push_credential_is_the_verifier_secret_and_only_the_verifier_task_gets_it() -> None:
    [container] = resource("VerifierTaskDefinition")["Properties"]["ContainerDefinitions"]
    secrets = {s["Name"]: s["ValueFrom"] for s in container.get("Secrets", [])}
    assert "TASKGATE_GIT_TOKEN" in secrets
    for name in ("ApiFunction", "McpFunction", "DispatcherFunction", "AuthorizerFunction", "SweeperFunction"):
        env = resource(name)["Properties"].get("Environment", {}).get("Variables", {})
        assert "TASKGATE_GIT_TOKEN" not in env, name
