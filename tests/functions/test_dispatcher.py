"""The dispatcher function on the table's real stream (moto): records read from DynamoDB
Streams, filtered by template.yaml's FilterCriteria, handed to the handler in-process; the
verifier container started on ECS (moto), from the task definition template.yaml defines.

A submission starts a task draining its project only when fewer than the project's concurrency
hold a live slot and the queue holds more than the running tasks take; whatever the stream does
(a retried batch, a record twice in a batch, a warm container seeing it again) a running task
is not doubled; none when verification is off; none for any other item; a record that cannot be
processed comes back in batchItemFailures and nothing else fails. A task that stops renewing its
lease loses its slot: the next submission or the scheduled sweep starts another.
"""

from __future__ import annotations

import base64
import copy
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from taskgate.cloud import dispatcher
from taskgate.cloud.dispatcher import handler
from taskgate.cloud.ecs import LEASE_VAR, drain_command, lease_from_value
from taskgate.domain.models import CredentialKind, CriterionInput, Status, VerifierKind
from taskgate.domain.principals import Acting, acting, human
from taskgate.domain.run_report import RunReport
from taskgate.service import claims, dispatch, keys, projects, records, review, tasks, verification
from taskgate.service.dispatch import Slot, SlotState
from tests.functions.stack import Stack, run_task_requests, stack, stream_event
from tests.support.world import SHA

HUMAN = acting(human("alice"))


@pytest.fixture
def cloud() -> Iterator[Stack]:
    with stack() as s:
        yield s


def _project(s: Stack, name: str, *, verification_on: bool) -> None:
    projects.create(s.ctx, HUMAN, name, repo=f"https://git.example.com/{name}.git")
    if verification_on:
        keys.create(
            s.ctx, HUMAN, kind=CredentialKind.VERIFIER, name=f"{name}-ci", verifier_kind=VerifierKind.LOCAL
        )
        projects.set_verifier_config(s.ctx, HUMAN, name, {"checks": {"unit": {"command": "pytest"}}})
        projects.set_verification(s.ctx, HUMAN, name, True)


def _agent(s: Stack, name: str = "builder") -> Acting:
    minted = keys.create(s.ctx, HUMAN, kind=CredentialKind.AGENT, name=name)
    return acting(keys.authenticate(s.ctx, minted.secret))


def _submit(s: Stack, agent: Acting, project: str) -> str:
    task = tasks.create(s.ctx, HUMAN, project, title="Cart", criteria=[CriterionInput(text="works")]).task
    token = claims.claim(s.ctx, agent, project, task_id=task.id).token
    claims.submit(s.ctx, agent, task.id, token, commit_sha=SHA, evidence="did it")
    return task.id


def _started(s: Stack) -> list[dict[str, Any]]:
    arns = s.ecs.list_tasks(cluster=s.cluster)["taskArns"]
    return s.ecs.describe_tasks(cluster=s.cluster, tasks=arns)["tasks"] if arns else []


def _commands(s: Stack) -> list[list[str]]:
    return [
        o["command"]
        for t in _started(s)
        for o in t["overrides"]["containerOverrides"]
        if o["name"] == "verifier"
    ]


def _slots(s: Stack, project: str) -> list[tuple[int, Slot]]:
    pk, _ = records.drain_key(project, 0)
    return [(i.version, Slot.model_validate(i.data)) for i in s.ctx.store.query(pk, sk_prefix="SLOT#").items]


def _outcomes(s: Stack) -> list[str]:
    return [line["outcome"] for line in s.output.logs() if line.get("message") == "dispatch"]


def test_a_submission_starts_one_draining_verifier_even_when_its_record_comes_again(cloud: Stack) -> None:
    _project(cloud, "shop", verification_on=True)
    agent = _agent(cloud)
    tid = _submit(cloud, agent, "shop")

    records_ = cloud.new_records()
    delivered = cloud.delivered(records_)
    # The filter passes the submission's record and nothing else that happened on the way
    # (project, keys, config, history, the task's creation and claim).
    assert len(records_) > 10
    assert [r["dynamodb"]["Keys"]["SK"]["S"] for r in delivered] == [records.task_key(tid)[1]]

    result = cloud.invoke(handler, stream_event(delivered))
    assert result == {"batchItemFailures": []}
    assert _commands(cloud) == [drain_command("shop")]
    assert drain_command("shop")[:4] == ["verify", "--project", "shop", "--drain"]
    started = _started(cloud)[0]
    assert started["taskDefinitionArn"] == cloud.task_definition
    assert started["startedBy"] == "taskgate-dispatcher"
    [override] = started["overrides"]["containerOverrides"]
    env, server = override["environment"]
    assert env["name"] == LEASE_VAR
    # The API's URL from the stack's configuration (VerifierServerUrl, by default the API's own).
    assert server == {"name": "TASKGATE_SERVER", "value": os.environ["TASKGATE_VERIFIER_SERVER"]}
    assert server["value"] == "https://abc123.execute-api.us-east-1.amazonaws.com"
    lease = lease_from_value(env["value"])
    assert (lease.project, lease.slot) == ("shop", 0)

    # A retried batch, the same record twice in one batch, on the same warm container: the
    # task already draining the project picks the submission up.
    assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    assert cloud.invoke(handler, stream_event(delivered + delivered)) == {"batchItemFailures": []}
    assert len(_started(cloud)) == 1

    [(_, slot)] = _slots(cloud, "shop")
    assert slot.state is SlotState.STARTING and slot.started == started["taskArn"]
    assert slot.holder == lease.holder
    assert _outcomes(cloud) == ["started", "draining", "draining", "draining"]
    assert cloud.output.metrics()[("VerifierTasksStarted", ())] == 1


def test_a_submission_arriving_while_a_task_drains_is_left_to_it_up_to_the_concurrency() -> None:
    """Concurrency 2: one submission, one task; a second one waiting while the first task
    verifies, a second task; a third, none (both slots live)."""
    with stack(verifier_concurrency=2) as cloud:
        _project(cloud, "shop", verification_on=True)
        agent = _agent(cloud)
        _submit(cloud, agent, "shop")
        cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records())))
        _submit(cloud, agent, "shop")
        cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records())))
        _submit(cloud, agent, "shop")
        cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records())))
        assert _outcomes(cloud) == ["started", "started", "draining"]
        assert sorted(n for _, n in [(v, s.slot) for v, s in _slots(cloud, "shop")]) == [0, 1]
        assert len(_started(cloud)) == 2


def test_with_concurrency_one_every_later_submission_goes_to_the_running_task() -> None:
    with stack(verifier_concurrency=1) as cloud:
        _project(cloud, "shop", verification_on=True)
        agent = _agent(cloud)
        for _ in range(3):
            _submit(cloud, agent, "shop")
            cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records())))
        assert _outcomes(cloud) == ["started", "draining", "draining"]
        assert len(_started(cloud)) == 1


def test_a_projects_own_concurrency_overrides_the_stacks() -> None:
    with stack(verifier_concurrency=1) as cloud:
        _project(cloud, "shop", verification_on=True)
        projects.set_verifier_config(
            cloud.ctx, HUMAN, "shop", {"checks": {"unit": {"command": "pytest"}}, "concurrency": 3}
        )
        agent = _agent(cloud)
        for _ in range(4):
            _submit(cloud, agent, "shop")
        cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records())))
        assert _outcomes(cloud) == ["started", "started", "started", "draining"]


def test_a_concurrency_out_of_range_is_refused_and_changes_nothing(cloud: Stack) -> None:
    from taskgate.domain.errors import TaskgateError

    _project(cloud, "shop", verification_on=True)
    before = cloud.ctx.project("shop").verifier_config
    for bad in (0, 21, "many"):
        with pytest.raises(TaskgateError) as exc:
            projects.set_verifier_config(
                cloud.ctx, HUMAN, "shop", {"checks": {"unit": {"command": "pytest"}}, "concurrency": bad}
            )
        assert exc.value.code == "E_VALIDATION" and "concurrency" in str(exc.value)
    assert cloud.ctx.project("shop").verifier_config == before


def test_nothing_starts_when_verification_is_off(cloud: Stack) -> None:
    _project(cloud, "quiet", verification_on=False)
    tid = _submit(cloud, _agent(cloud), "quiet")
    delivered = cloud.delivered(cloud.new_records())
    assert len(delivered) == 1  # the filter cannot see the project's switch; the function reads it
    assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    assert _started(cloud) == []
    assert _slots(cloud, "quiet") == []
    assert cloud.ctx.task(tid).status is Status.NEEDS_VERIFICATION
    assert _outcomes(cloud) == ["verification_off"]


def test_other_items_and_other_changes_start_nothing(cloud: Stack) -> None:
    _project(cloud, "shop", verification_on=True)
    agent = _agent(cloud)
    tid = _submit(cloud, agent, "shop")
    everything = cloud.new_records()
    assert cloud.invoke(handler, stream_event(everything)) == {"batchItemFailures": []}
    assert len(_started(cloud)) == 1  # of all those records, only the submission

    # A verifier run starting on the waiting task rewrites it in needs_verification: the filter
    # passes it (new image in the queue) and the function sees it did not *enter* the status.
    verifier = acting(
        keys.authenticate(
            cloud.ctx,
            keys.create(
                cloud.ctx, HUMAN, kind=CredentialKind.VERIFIER, name="ci2", verifier_kind=VerifierKind.LOCAL
            ).secret,
        )
    )
    verification.start(cloud.ctx, verifier, task_id=tid)
    later = cloud.delivered(cloud.new_records())
    assert len(later) == 1 and later[0]["dynamodb"]["OldImage"]["GSI1PK"]["S"] == "Q#needs_verification#shop"
    assert cloud.invoke(handler, stream_event(later)) == {"batchItemFailures": []}
    assert len(_started(cloud)) == 1
    skipped = [
        line
        for line in cloud.output.logs()
        if line.get("message") == "not a submission entering verification"
    ]
    assert len(skipped) >= 1


def test_verify_again_after_the_task_left_starts_a_new_verifier(cloud: Stack) -> None:
    _project(cloud, "shop", verification_on=True)
    tid = _submit(cloud, _agent(cloud), "shop")
    cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records())))
    verifier = acting(
        keys.authenticate(
            cloud.ctx,
            keys.create(
                cloud.ctx, HUMAN, kind=CredentialKind.VERIFIER, name="ci2", verifier_kind=VerifierKind.LOCAL
            ).secret,
        )
    )
    while cloud.ctx.task(tid).status is Status.NEEDS_VERIFICATION:  # verifier errors until needs_human
        run = verification.start(cloud.ctx, verifier, task_id=tid).run
        verification.finish(
            cloud.ctx, verifier, tid, run.id, RunReport(checks={}, results={}, error="checkout failed")
        )
    assert cloud.ctx.task(tid).status is Status.NEEDS_HUMAN
    # The task that ran gave its slot back when the queue stayed empty, and exited.
    [override] = _started(cloud)[0]["overrides"]["containerOverrides"]
    dispatch.release(cloud.ctx, lease_from_value(override["environment"][0]["value"]))
    review.resolve(cloud.ctx, HUMAN, tid, review.Resolution.REVERIFY)
    assert cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records()))) == {
        "batchItemFailures": []
    }
    assert _commands(cloud) == [drain_command("shop")] * 2
    [(version, slot)] = _slots(cloud, "shop")
    assert slot.slot == 0 and slot.state is SlotState.STARTING and version >= 3  # taken back over


def test_an_unreadable_record_is_a_partial_batch_failure_and_the_rest_is_done(cloud: Stack) -> None:
    _project(cloud, "shop", verification_on=True)
    agent = _agent(cloud)
    _submit(cloud, agent, "shop")
    [record] = cloud.delivered(cloud.new_records())
    broken = copy.deepcopy(record)
    image = broken["dynamodb"]["NewImage"]
    assert "Z" in image  # a submitted task's body is stored compressed (store/body.py), in base64 here
    image["Z"]["B"] = base64.b64encode(base64.b64decode(image["Z"]["B"])[:40]).decode()  # cut short
    broken["dynamodb"]["SequenceNumber"] = "9" + record["dynamodb"]["SequenceNumber"]
    broken["eventID"] = "broken-1"

    result = cloud.invoke(handler, stream_event([record, broken]))
    assert result == {"batchItemFailures": [{"itemIdentifier": broken["dynamodb"]["SequenceNumber"]}]}
    assert _commands(cloud) == [drain_command("shop")]
    failed = [
        line
        for line in cloud.output.logs()
        if line.get("message") == "not a submission entering verification"
    ]
    assert failed == []  # it failed loudly, it was not quietly skipped
    errors = [line for line in cloud.output.logs() if line.get("level") == "ERROR"]
    assert errors and "unreadable" in json.dumps(errors)


def test_a_start_that_failed_is_retried_and_still_starts_one_verifier(cloud: Stack) -> None:
    _project(cloud, "shop", verification_on=True)
    tid = _submit(cloud, _agent(cloud), "shop")
    delivered = cloud.delivered(cloud.new_records())

    ecs = dispatcher.launcher().client
    refusals = {"left": 1}

    def throttle(**_: Any) -> None:  # ECS answers the first start with an error, as under throttling
        if refusals["left"]:
            refusals["left"] -= 1
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "RunTask"
            )

    ecs.meta.events.register("before-call.ecs.RunTask", throttle)
    try:
        first = cloud.invoke(handler, stream_event(delivered))
        assert first == {
            "batchItemFailures": [{"itemIdentifier": delivered[0]["dynamodb"]["SequenceNumber"]}]
        }
        assert _started(cloud) == []
        # The slot it took is given back at once: a failed start holds no work back.
        [(_, slot)] = _slots(cloud, "shop")
        assert slot.state is SlotState.RELEASED

        # Lambda retries the batch from the failed record.
        assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
        assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    finally:
        ecs.meta.events.unregister("before-call.ecs.RunTask", throttle)
    assert _commands(cloud) == [drain_command("shop")]
    [(_, slot)] = _slots(cloud, "shop")
    assert slot.state is SlotState.STARTING and slot.started == _started(cloud)[0]["taskArn"]
    assert _outcomes(cloud) == ["started", "draining"]
    assert cloud.ctx.task(tid).status is Status.NEEDS_VERIFICATION


def test_the_start_request_carries_a_stable_idempotency_token(cloud: Stack) -> None:
    """A start whose answer was lost is repeated with the same token, so ECS (not moto, which
    ignores it) answers with the task it already started."""
    _project(cloud, "shop", verification_on=True)
    tid = _submit(cloud, _agent(cloud), "shop")
    delivered = cloud.delivered(cloud.new_records())
    with run_task_requests(dispatcher.launcher().client) as sent:
        cloud.invoke(handler, stream_event(delivered))
    [params] = sent
    version = int(delivered[0]["dynamodb"]["NewImage"]["V"]["N"])
    # The slot's holder: the record that asked (task, attempt, version), the slot, its version.
    holder = f"{tid}|1|{version}#0#1"
    assert params["clientToken"] == dispatcher.launcher().token(holder)
    assert len(params["clientToken"]) <= 64
    # On-demand Fargate unless the stack says Spot (VerifierCapacity), as a strategy: ECS takes
    # a capacity provider strategy or a launch type, never both.
    assert params["capacityProviderStrategy"] == [{"capacityProvider": "FARGATE", "weight": 1}]
    assert "launchType" not in params
    assert params["networkConfiguration"]["awsvpcConfiguration"] == {
        "subnets": [cloud.subnet],
        "securityGroups": [cloud.security_group],
        "assignPublicIp": "ENABLED",
    }
    # Keys reach the container from Secrets Manager through the task definition, never here:
    # the variables passed are the slot's lease and the API's URL, which name no secret.
    [override] = params["overrides"]["containerOverrides"]
    assert [e["name"] for e in override["environment"]] == [LEASE_VAR, "TASKGATE_SERVER"]
    assert lease_from_value(override["environment"][0]["value"]).holder == holder
    assert "tgv_" not in json.dumps(params) and "secret" not in json.dumps(params).lower()


def test_the_task_definition_injects_the_keys_from_the_stacks_secret(cloud: Stack) -> None:
    definition = cloud.ecs.describe_task_definition(taskDefinition=cloud.task_definition)["taskDefinition"]
    [container] = definition["containerDefinitions"]
    assert container["name"] == dispatcher.launcher().container
    assert container["entryPoint"] == ["taskgate"]
    assert definition["runtimePlatform"]["cpuArchitecture"] == "ARM64"  # on-demand: Graviton
    # Root only at the start: `taskgate verify` switches to the image's two users itself
    # (verifier_container/Dockerfile), keeping CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_KILL.
    assert container["user"] == "0"
    dropped = set(container["linuxParameters"]["capabilities"]["drop"])
    assert {"DAC_OVERRIDE", "FOWNER", "NET_RAW", "MKNOD", "SETFCAP"} <= dropped
    assert not {"SETUID", "SETGID", "CHOWN", "KILL", "SETPCAP"} & dropped
    secrets = {s["name"]: s["valueFrom"] for s in container["secrets"]}
    assert secrets == {
        "TASKGATE_VERIFIER_KEY": f"{cloud.secret_arn}:verifier_key::",
        "TASKGATE_REVIEWER_KEY": f"{cloud.secret_arn}:reviewer_key::",
        "TASKGATE_GIT_TOKEN": f"{cloud.secret_arn}:git_token::",
    }
    plain = {e["name"]: e["value"] for e in container["environment"]}
    assert set(plain) == {
        "TASKGATE_SERVER",
        "TASKGATE_VERIFIER_IMAGE",
        "TASKGATE_TABLE",
        "TASKGATE_CACHE_BUCKET",
    }
    assert plain["TASKGATE_TABLE"] == cloud.table  # where the task renews its slot
    assert plain["TASKGATE_CACHE_BUCKET"] == cloud.cache_bucket
    assert definition["taskRoleArn"] == cloud.task_role
    assert plain["TASKGATE_SERVER"].startswith("https://")
    assert plain["TASKGATE_VERIFIER_IMAGE"] == container["image"]  # it says which image it is
    # The secret the stack creates holds exactly the JSON keys the task definition reads.
    from tests.functions.stack import resource

    value = json.loads(resource("VerifierSecret")["Properties"]["SecretString"])
    assert set(value) == {"verifier_key", "reviewer_key", "git_token"}


def test_a_spot_stack_starts_its_verifiers_on_fargate_spot_on_x86() -> None:
    """VerifierCapacity=FARGATE_SPOT reaches RunTask as the capacity provider, and the task
    definition runs on X86_64 (Fargate Spot has no ARM64 capacity)."""
    with stack(verifier_capacity="FARGATE_SPOT") as cloud:
        _project(cloud, "shop", verification_on=True)
        tid = _submit(cloud, _agent(cloud), "shop")
        delivered = cloud.delivered(cloud.new_records())
        with run_task_requests(dispatcher.launcher().client) as sent:
            assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
        [params] = sent
        assert params["capacityProviderStrategy"] == [{"capacityProvider": "FARGATE_SPOT", "weight": 1}]
        assert _commands(cloud) == [drain_command("shop")]
        assert cloud.ctx.task(tid).status is Status.NEEDS_VERIFICATION
        definition = cloud.ecs.describe_task_definition(taskDefinition=cloud.task_definition)[
            "taskDefinition"
        ]
        assert definition["runtimePlatform"]["cpuArchitecture"] == "X86_64"
