"""The dispatcher function on the table's real stream (moto): records read from DynamoDB
Streams, filtered by template.yaml's FilterCriteria, handed to the handler in-process; the
verifier container started on ECS (moto), from the task definition template.yaml defines.

One Fargate task per submission, whatever the stream does (a retried batch, a record twice in
a batch, a warm container seeing it again); none when verification is off; none for any other
item; a record that cannot be processed comes back in batchItemFailures and nothing else fails.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from taskgate.cloud import dispatcher
from taskgate.cloud.dispatcher import handler
from taskgate.domain.models import CredentialKind, CriterionInput, Status, VerifierKind
from taskgate.domain.principals import Acting, acting, human
from taskgate.service import claims, keys, projects, records, review, tasks, verification
from taskgate.service.dispatch import Dispatch, State
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


def test_a_submission_starts_exactly_one_verifier_even_when_its_record_comes_again(cloud: Stack) -> None:
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
    assert _commands(cloud) == [["verify", "--task", tid]]
    started = _started(cloud)[0]
    assert started["taskDefinitionArn"] == cloud.task_definition
    assert started["startedBy"] == "taskgate-dispatcher"

    # A retried batch, the same record twice in one batch, on the same warm container.
    assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    assert cloud.invoke(handler, stream_event(delivered + delivered)) == {"batchItemFailures": []}
    assert len(_started(cloud)) == 1

    marker = cloud.ctx.store.query(records.task_pk(tid), sk_prefix="D#").items
    assert len(marker) == 1
    dispatch = Dispatch.model_validate(marker[0].data)
    assert dispatch.state is State.STARTED and dispatch.started == started["taskArn"]
    outcomes = [line.get("outcome") for line in cloud.output.logs() if line.get("message") == "dispatch"]
    assert outcomes == ["started", "duplicate", "duplicate", "duplicate"]
    assert cloud.output.metrics()[("VerifierTasksStarted", ())] == 1


def test_each_submission_gets_its_own_verifier(cloud: Stack) -> None:
    _project(cloud, "shop", verification_on=True)
    agent = _agent(cloud)
    first, second = _submit(cloud, agent, "shop"), _submit(cloud, agent, "shop")
    delivered = cloud.delivered(cloud.new_records())
    assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    assert sorted(_commands(cloud)) == sorted([["verify", "--task", first], ["verify", "--task", second]])


def test_nothing_starts_when_verification_is_off(cloud: Stack) -> None:
    _project(cloud, "quiet", verification_on=False)
    tid = _submit(cloud, _agent(cloud), "quiet")
    delivered = cloud.delivered(cloud.new_records())
    assert len(delivered) == 1  # the filter cannot see the project's switch; the function reads it
    assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    assert _started(cloud) == []
    assert cloud.ctx.store.query(records.task_pk(tid), sk_prefix="D#").items == []
    assert [line["outcome"] for line in cloud.output.logs() if line.get("message") == "dispatch"] == [
        "verification_off"
    ]


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


def test_verify_again_after_needs_human_starts_a_new_verifier_for_the_same_attempt(cloud: Stack) -> None:
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
        verification.finish(cloud.ctx, verifier, tid, run.id, checks={}, results={}, error="checkout failed")
    assert cloud.ctx.task(tid).status is Status.NEEDS_HUMAN
    review.resolve(cloud.ctx, HUMAN, tid, review.Resolution.REVERIFY)
    assert cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records()))) == {
        "batchItemFailures": []
    }
    assert _commands(cloud) == [["verify", "--task", tid]] * 2
    assert len(cloud.ctx.store.query(records.task_pk(tid), sk_prefix="D#").items) == 2


def test_an_unreadable_record_is_a_partial_batch_failure_and_the_rest_is_done(cloud: Stack) -> None:
    _project(cloud, "shop", verification_on=True)
    agent = _agent(cloud)
    good = _submit(cloud, agent, "shop")
    [record] = cloud.delivered(cloud.new_records())
    broken = copy.deepcopy(record)
    image = broken["dynamodb"]["NewImage"]
    assert "Z" in image  # a submitted task's body is stored compressed (store/body.py), in base64 here
    image["Z"]["B"] = base64.b64encode(base64.b64decode(image["Z"]["B"])[:40]).decode()  # cut short
    broken["dynamodb"]["SequenceNumber"] = "9" + record["dynamodb"]["SequenceNumber"]
    broken["eventID"] = "broken-1"

    result = cloud.invoke(handler, stream_event([record, broken]))
    assert result == {"batchItemFailures": [{"itemIdentifier": broken["dynamodb"]["SequenceNumber"]}]}
    assert _commands(cloud) == [["verify", "--task", good]]
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
        [marker] = cloud.ctx.store.query(records.task_pk(tid), sk_prefix="D#").items
        assert Dispatch.model_validate(marker.data).state is State.STARTING

        # Lambda retries the batch from the failed record.
        assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
        assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    finally:
        ecs.meta.events.unregister("before-call.ecs.RunTask", throttle)
    assert _commands(cloud) == [["verify", "--task", tid]]
    [marker] = cloud.ctx.store.query(records.task_pk(tid), sk_prefix="D#").items
    assert Dispatch.model_validate(marker.data).state is State.STARTED


def test_the_start_request_carries_a_stable_idempotency_token(cloud: Stack) -> None:
    """A start whose answer was lost is repeated with the same token, so ECS (not moto, which
    ignores it) answers with the task it already started."""
    _project(cloud, "shop", verification_on=True)
    tid = _submit(cloud, _agent(cloud), "shop")
    delivered = cloud.delivered(cloud.new_records())
    with run_task_requests(dispatcher.launcher().client) as sent:
        cloud.invoke(handler, stream_event(delivered))
    [params] = sent
    pk, sk = records.dispatch_key(tid, 1, int(delivered[0]["dynamodb"]["NewImage"]["V"]["N"]))
    assert params["clientToken"] == dispatcher.launcher().token(f"{pk}|{sk}")
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
    # Keys reach the container from Secrets Manager through the task definition, never here.
    assert "environment" not in json.dumps(params["overrides"])


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
    assert set(plain) == {"TASKGATE_SERVER", "TASKGATE_VERIFIER_IMAGE"}
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
        assert _commands(cloud) == [["verify", "--task", tid]]
        definition = cloud.ecs.describe_task_definition(taskDefinition=cloud.task_definition)[
            "taskDefinition"
        ]
        assert definition["runtimePlatform"]["cpuArchitecture"] == "X86_64"
