"""Any toolchain in the cloud (moto): a verifier config's `image` gets a task definition revision
of its own when a human saves the config, a copy of the stack's with only the image changed;
the dispatcher and the nightly run start each project's container from its image's revision.

Registration happens once per image reference (a save with an unchanged image, or a second
project with the same one, registers nothing); an image outside the stack's repository is
refused and nothing changes; a project whose image has no revision is never started in another
image.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from taskgate.cloud import dispatcher
from taskgate.cloud.api import handler as api_handler
from taskgate.cloud.dispatcher import NightlyIncomplete, handler
from taskgate.cloud.ecs import drain_command
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import CredentialKind, CriterionInput, VerifierKind
from taskgate.domain.principals import Acting, acting, human
from taskgate.service import claims, keys, projects, records, tasks
from tests.functions.stack import ACCOUNT, Stack, run_task_requests, stack, stream_event
from tests.support.dynamo import REGION
from tests.support.gateway_events import jwt_event
from tests.support.world import SHA

HUMAN = acting(human("alice"))
REPOSITORY = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/verifier"  # the stack's (stack.py)
NODE = f"{REPOSITORY}:node22"
JDK = f"{REPOSITORY}:jdk21"
CHECKS = {"unit": {"command": "npm test"}}


@pytest.fixture
def cloud() -> Iterator[Stack]:
    with stack() as s:
        yield s


def _revisions(s: Stack) -> list[str]:
    family = s.ecs.describe_task_definition(taskDefinition=s.task_definition)["taskDefinition"]["family"]
    return list(s.ecs.list_task_definitions(familyPrefix=family)["taskDefinitionArns"])


def _definition(s: Stack, arn: str) -> dict[str, Any]:
    return dict(s.ecs.describe_task_definition(taskDefinition=arn)["taskDefinition"])


def _project(s: Stack, name: str, image: str | None, *, verification_on: bool = True) -> None:
    projects.create(s.ctx, HUMAN, name, repo=f"https://git.example.com/{name}.git")
    config: dict[str, Any] = {"checks": CHECKS} | ({"image": image} if image else {})
    projects.set_verifier_config(s.ctx, HUMAN, name, config)
    if verification_on:
        keys.create(
            s.ctx, HUMAN, kind=CredentialKind.VERIFIER, name=f"{name}-ci", verifier_kind=VerifierKind.LOCAL
        )
        projects.set_verification(s.ctx, HUMAN, name, True)


def _submit(s: Stack, project: str) -> str:
    agent: Acting = acting(
        keys.authenticate(
            s.ctx, keys.create(s.ctx, HUMAN, kind=CredentialKind.AGENT, name=f"b-{project}").secret
        )
    )
    task = tasks.create(s.ctx, HUMAN, project, title="Cart", criteria=[CriterionInput(text="works")]).task
    token = claims.claim(s.ctx, agent, project, task_id=task.id).token
    claims.submit(s.ctx, agent, task.id, token, commit_sha=SHA, evidence="did it")
    return task.id


def _started(s: Stack) -> list[dict[str, Any]]:
    arns = s.ecs.list_tasks(cluster=s.cluster)["taskArns"]
    return s.ecs.describe_tasks(cluster=s.cluster, tasks=arns)["tasks"] if arns else []


def _command(task: dict[str, Any]) -> list[str]:
    [override] = [o for o in task["overrides"]["containerOverrides"] if o["name"] == "verifier"]
    return list(override["command"])


def test_a_saved_image_gets_a_copy_of_the_stacks_task_definition_with_only_the_image_changed(
    cloud: Stack,
) -> None:
    before = _revisions(cloud)
    _project(cloud, "web", NODE)
    [registered] = [arn for arn in _revisions(cloud) if arn not in before]
    base, copy_ = _definition(cloud, cloud.task_definition), _definition(cloud, registered)
    assert copy_["family"] == base["family"] and copy_["revision"] == base["revision"] + 1
    assert copy_["executionRoleArn"] == base["executionRoleArn"] == cloud.execution_role
    # The verifier task's role (its slot's lease, the caches) goes with every copy.
    assert copy_["taskRoleArn"] == base["taskRoleArn"] == cloud.task_role
    for key in ("cpu", "memory", "networkMode", "requiresCompatibilities", "runtimePlatform"):
        assert copy_[key] == base[key], key
    [ours], [theirs] = base["containerDefinitions"], copy_["containerDefinitions"]
    assert theirs["image"] == NODE and ours["image"] == f"{REPOSITORY}:latest"
    assert theirs["secrets"] == ours["secrets"] and theirs["logConfiguration"] == ours["logConfiguration"]
    assert theirs["entryPoint"] == ours["entryPoint"] and theirs["command"] == ours["command"]
    env = {e["name"]: e["value"] for e in theirs["environment"]}
    assert env == {e["name"]: e["value"] for e in ours["environment"]} | {"TASKGATE_VERIFIER_IMAGE": NODE}
    # The project's history says which revision its image got.
    events, _ = projects.history(cloud.ctx, HUMAN, "web")
    [saved] = [e for e in events if e.action == "verifier_config_changed"]
    assert saved.detail["task_definition"] == registered and saved.detail["registered"] is True


def test_a_config_save_registers_one_revision_per_new_image_and_none_for_an_unchanged_one(
    cloud: Stack,
) -> None:
    start = len(_revisions(cloud))
    _project(cloud, "web", NODE)
    assert len(_revisions(cloud)) == start + 1
    # The same image again (other checks), and a second project with it: nothing registered.
    projects.set_verifier_config(
        cloud.ctx, HUMAN, "web", {"checks": {"unit": {"command": "npm ci && npm test"}}, "image": NODE}
    )
    _project(cloud, "shop", NODE)
    assert len(_revisions(cloud)) == start + 1
    # A new image: one more; back to the first one: none (cached by reference).
    projects.set_verifier_config(cloud.ctx, HUMAN, "web", {"checks": CHECKS, "image": JDK})
    assert len(_revisions(cloud)) == start + 2
    projects.set_verifier_config(cloud.ctx, HUMAN, "web", {"checks": CHECKS, "image": NODE})
    projects.set_verifier_config(cloud.ctx, HUMAN, "web", {"checks": CHECKS})  # no image: the stack's
    assert len(_revisions(cloud)) == start + 2
    cached = {i.sk: i.data["task_definition"] for i in cloud.ctx.store.query(records.IMAGES_PK).items}
    assert set(cached) == {NODE, JDK} and len(set(cached.values())) == 2


def test_an_image_outside_the_stacks_repository_is_refused_and_nothing_changes(cloud: Stack) -> None:
    _project(cloud, "web", None)
    before_config = cloud.ctx.project("web").verifier_config
    revisions = _revisions(cloud)
    for image in (
        "docker.io/library/node:22",
        f"{REPOSITORY}-other:node22",
        f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/other:x",
    ):
        with pytest.raises(TaskgateError) as refused:
            projects.set_verifier_config(cloud.ctx, HUMAN, "web", {"checks": CHECKS, "image": image})
        assert refused.value.code is ErrorCode.VALIDATION
        assert f"must be in the stack's verifier repository {REPOSITORY}" in refused.value.message
    # Through the REST function a human calls, too: 422 with the stable code.
    response = cloud.invoke(
        api_handler,
        jwt_event(
            "PUT",
            "/api/projects/web/verifier-config",
            {"checks": CHECKS, "image": "docker.io/library/node:22"},
        ),
    )
    assert response["statusCode"] == 422 and json.loads(response["body"])["code"] == "E_VALIDATION"
    assert _revisions(cloud) == revisions
    assert cloud.ctx.project("web").verifier_config == before_config
    assert cloud.ctx.store.query(records.IMAGES_PK).items == []


def test_the_dispatcher_starts_each_submission_in_its_projects_image(cloud: Stack) -> None:
    _project(cloud, "web", NODE)
    _project(cloud, "api", JDK)
    _project(cloud, "lib", None)
    images = {i.sk: i.data["task_definition"] for i in cloud.ctx.store.query(records.IMAGES_PK).items}
    submitted = {p: _submit(cloud, p) for p in ("web", "api", "lib")}
    assert cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records()))) == {
        "batchItemFailures": []
    }
    by_command = {tuple(_command(t)): t["taskDefinitionArn"] for t in _started(cloud)}
    assert by_command == {
        tuple(drain_command("web")): images[NODE],
        tuple(drain_command("api")): images[JDK],
        tuple(drain_command("lib")): cloud.task_definition,
    }
    assert all(cloud.ctx.task(t).status.value == "needs_verification" for t in submitted.values())


def test_a_project_whose_image_has_no_revision_is_never_started_in_another_image(cloud: Stack) -> None:
    """A config saved where nothing registers (a store restored from elsewhere): the record
    fails loudly (Lambda retries it, then the failure queue), and no container starts."""
    projects.create(cloud.ctx, HUMAN, "web", repo="https://git.example.com/web.git")
    registrar, cloud.ctx.task_definitions = cloud.ctx.task_definitions, None
    try:
        projects.set_verifier_config(cloud.ctx, HUMAN, "web", {"checks": CHECKS, "image": NODE})
    finally:
        cloud.ctx.task_definitions = registrar
    keys.create(cloud.ctx, HUMAN, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL)
    projects.set_verification(cloud.ctx, HUMAN, "web", True)
    _submit(cloud, "web")
    [record] = cloud.delivered(cloud.new_records())
    result = cloud.invoke(handler, stream_event([record]))
    assert result == {"batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]}
    assert _started(cloud) == []
    assert "save its verifier config again" in cloud.output.text()
    # A human saves it again in the cloud: the retried record starts it, in its image.
    projects.set_verifier_config(cloud.ctx, HUMAN, "web", {"checks": CHECKS, "image": NODE})
    assert cloud.invoke(handler, stream_event([record])) == {"batchItemFailures": []}
    [task] = _started(cloud)
    assert _definition(cloud, task["taskDefinitionArn"])["containerDefinitions"][0]["image"] == NODE


def test_after_a_stack_update_the_old_copy_still_runs_and_the_next_save_registers_a_current_one(
    cloud: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(cloud, "web", NODE)
    old_copy = cloud.ctx.store.get(*records.image_key(NODE))
    assert old_copy is not None
    # A stack update registered a new revision of the stack's own task definition.
    base = _definition(cloud, cloud.task_definition)
    again = {
        k: copy.deepcopy(base[k])
        for k in (
            "family",
            "executionRoleArn",
            "networkMode",
            "containerDefinitions",
            "requiresCompatibilities",
            "cpu",
            "memory",
        )
    }
    new_base = cloud.ecs.register_task_definition(**again)["taskDefinition"]["taskDefinitionArn"]
    monkeypatch.setenv("TASKGATE_ECS_TASK_DEFINITION", new_base)
    from taskgate import runtime

    runtime.reset()
    monkeypatch.setattr(dispatcher, "_launcher", None)  # restored after the test, as found
    tid = _submit(cloud, "web")
    assert cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records()))) == {
        "batchItemFailures": []
    }
    [task] = _started(cloud)
    assert task["taskDefinitionArn"] == old_copy.data["task_definition"]
    assert _command(task) == drain_command("web") and cloud.ctx.task(tid).project == "web"
    assert any("older revision of the stack's" in str(line.get("message")) for line in cloud.output.logs())
    revisions = len(_revisions(cloud))
    projects.set_verifier_config(cloud.ctx, HUMAN, "web", {"checks": CHECKS, "image": NODE})
    assert len(_revisions(cloud)) == revisions + 1
    fresh = cloud.ctx.store.get(*records.image_key(NODE))
    assert fresh is not None and fresh.data["base"] == new_base
    assert fresh.data["task_definition"] != old_copy.data["task_definition"]


def _nightly(s: Stack, execution_id: str = "exec-1") -> Any:
    return s.invoke(
        handler, {"nightly": True, "execution_id": execution_id, "scheduled_time": "2026-01-02T02:00:00Z"}
    )


def test_the_nightly_run_starts_one_container_per_project_with_waiting_work_in_its_image(
    cloud: Stack,
) -> None:
    _project(cloud, "web", NODE)
    _project(cloud, "api", JDK)
    _project(cloud, "lib", None)
    _project(cloud, "idle", NODE)  # verification on, nothing waiting
    _project(cloud, "quiet", JDK, verification_on=False)
    for p in ("web", "web", "api", "lib"):
        _submit(cloud, p)
    tasks.create(cloud.ctx, HUMAN, "quiet", title="t", criteria=[CriterionInput(text="x")])
    images = {i.sk: i.data["task_definition"] for i in cloud.ctx.store.query(records.IMAGES_PK).items}
    with run_task_requests(dispatcher.launcher().client) as sent:
        result = _nightly(cloud)
        retried = _nightly(cloud)  # the schedule retrying the same execution
        later = _nightly(cloud, "exec-2")  # the next night
    assert set(result["started"]) == {"web", "api", "lib"}
    first = sent[:3]
    assert {
        tuple(p["overrides"]["containerOverrides"][0]["command"]): p["taskDefinition"] for p in first
    } == {
        tuple(drain_command("web")): images[NODE],
        tuple(drain_command("api")): images[JDK],
        tuple(drain_command("lib")): cloud.task_definition,
    }
    # The tasks started are still draining: a retried execution or the next night starts no
    # second task for a project, except where more waits than its running tasks take (web: two
    # submissions, concurrency 2).
    assert set(retried["started"]) == {"web"} and later["started"] == {}
    assert len(sent) == 4
    tokens = [p["clientToken"] for p in sent]
    assert len(set(tokens)) == 4
    done = [line for line in cloud.output.logs() if line.get("message") == "nightly done"]
    assert [(d["started"], d["failed"]) for d in done] == [(3, 0), (1, 0), (0, 0)]


def test_a_nightly_project_that_cannot_start_fails_the_run_after_the_others_started(cloud: Stack) -> None:
    _project(cloud, "lib", None)
    projects.create(cloud.ctx, HUMAN, "web", repo="https://git.example.com/web.git")
    registrar, cloud.ctx.task_definitions = cloud.ctx.task_definitions, None
    try:
        projects.set_verifier_config(cloud.ctx, HUMAN, "web", {"checks": CHECKS, "image": NODE})
    finally:
        cloud.ctx.task_definitions = registrar
    keys.create(cloud.ctx, HUMAN, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL)
    projects.set_verification(cloud.ctx, HUMAN, "web", True)
    _submit(cloud, "lib")
    _submit(cloud, "web")
    with pytest.raises(NightlyIncomplete, match="web"):
        _nightly(cloud)
    [task] = _started(cloud)
    assert _command(task) == drain_command("lib")
    errors = [line for line in cloud.output.logs() if line.get("message") == "nightly verifier not started"]
    assert [e["project"] for e in errors] == ["web"] and "NotRegistered" in errors[0]["reason"]


def test_a_nightly_event_without_an_execution_id_starts_nothing(cloud: Stack) -> None:
    _project(cloud, "lib", None)
    _submit(cloud, "lib")
    with pytest.raises(ValueError, match="execution_id"):
        cloud.invoke(handler, {"nightly": True})
    assert _started(cloud) == []
