"""Least privilege, read from template.yaml and held against what each function really does.

Static: no wildcard action anywhere, no `*` resource except for actions that have no resource
type, one role per function and no SAM policy templates (they attach managed policies), the
specific limits the design asks for (the sweeper cannot delete, the authorizer only reads keys,
the dispatcher only runs the one task definition and passes its one role), and the verifier
task without AWS credentials.

Observed: each function runs a realistic workload in-process against moto while a botocore
hook records every AWS request it makes; each request is evaluated against the function's
role (actions, resource ARNs, and the conditions used here: dynamodb:LeadingKeys, ecs:cluster,
iam:PassedToService). Every request must be allowed, and every (statement, action, resource)
the role grants must be used by some request, except the few that AWS itself exercises on the
function's behalf (log delivery, X-Ray, the stream's event source mapping, its failure queue):
a grant nothing uses is broader than the function's use.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from taskgate.cloud import api, authorizer, board, dispatcher, mcp, sweeper
from taskgate.domain.clock import ManualClock
from taskgate.domain.models import CredentialKind, CriterionInput, CriterionKind, VerifierKind
from taskgate.domain.principals import acting, human
from taskgate.domain.run_report import Evidence
from taskgate.service import claims, keys, projects, specs, staleness, tasks
from taskgate.service.context import Context
from tests.functions.stack import ACCOUNT, CONDITIONS, Stack, resolve, resource, stack, stream_event, template
from tests.mcp.events import LEGACY, mcp_headers, rpc, v2_event
from tests.support.board_publisher import CloudFormation
from tests.support.board_publisher import board_files as _web
from tests.support.board_publisher import bucket_and_distribution as _setup
from tests.support.board_publisher import custom_resource_request as _request
from tests.support.evidence import BASE0, CONFIG, TIP1, run_verifier
from tests.support.gateway_events import authorizer_event, behind_authorizer, jwt_event
from tests.support.sweeps import abandoned_run, scheduler_event
from tests.support.world import SHA

REGION = "us-east-1"
REPOSITORY = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/verifier"  # the stack's (tests/functions/stack.py)
HUMAN = acting(human("alice"))

FUNCTIONS = {
    "AuthorizerFunction": "AuthorizerRole",
    "McpFunction": "McpRole",
    "ApiFunction": "ApiRole",
    "SweeperFunction": "SweeperRole",
    "DispatcherFunction": "DispatcherRole",
    "BoardPublisherFunction": "BoardPublisherRole",
}
# Actions IAM defines with no resource type: a statement can only name "*" for them.
NO_RESOURCE_TYPE = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "ecr:GetAuthorizationToken",
    "dynamodb:ListStreams",
    "ecs:DescribeTaskDefinition",
    "ecs:RegisterTaskDefinition",
}
# Used by AWS for the function, never by its code: Lambda's log delivery, the X-Ray daemon,
# the event source mapping reading the stream and sending what it gives up on to the queue.
EXERCISED_BY_AWS = {
    "logs:CreateLogStream",
    "logs:PutLogEvents",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
    "sqs:SendMessage",
}


def _statements(role: str, refs: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for policy in resource(role)["Properties"].get("Policies", []):
        for st in resolve(policy["PolicyDocument"], refs)["Statement"]:
            st = dict(st)
            st["Action"] = [st["Action"]] if isinstance(st["Action"], str) else st["Action"]
            st["Resource"] = [st["Resource"]] if isinstance(st["Resource"], str) else st["Resource"]
            out.append(st)
    return out


def _all_allow_statements() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, res in template()["Resources"].items():
        if res["Type"] != "AWS::IAM::Role":
            continue
        for policy in res["Properties"].get("Policies", []):
            for st in policy["PolicyDocument"]["Statement"]:
                if st["Effect"] == "Allow":
                    yield name, st


# -- static ---------------------------------------------------------------------------------


def test_no_wildcard_action_and_no_star_resource_where_an_arn_is_known() -> None:
    seen = 0
    for role, st in _all_allow_statements():
        actions = [st["Action"]] if isinstance(st["Action"], str) else st["Action"]
        resources = [st["Resource"]] if isinstance(st["Resource"], (str, dict)) else st["Resource"]
        for action in actions:
            seen += 1
            assert "*" not in action, f"{role}: wildcard action {action}"
            if "*" in resources:
                assert action in NO_RESOURCE_TYPE, f"{role}: {action} on '*' although its resource has an ARN"
    assert seen > 40


def test_each_function_has_its_own_role_and_no_policy_templates() -> None:
    resources = template()["Resources"]
    functions = {k: v for k, v in resources.items() if v["Type"] == "AWS::Serverless::Function"}
    assert set(functions) == set(FUNCTIONS)
    for name, fn in functions.items():
        props = fn["Properties"]
        assert "Policies" not in props, name
        assert props["Role"] == {"Fn::GetAtt": [FUNCTIONS[name], "Arn"]}, name
    assert len(set(FUNCTIONS.values())) == len(FUNCTIONS)
    for name, role in FUNCTIONS.items():
        trust = resources[role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert trust == [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ], name
        assert "ManagedPolicyArns" not in resources[role]["Properties"], name


def _actions(role: str) -> set[str]:
    return {a for st in _statements(role, _FakeRefs()) for a in st["Action"]}


class _FakeRefs(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def test_the_limits_the_design_names() -> None:
    assert not {"dynamodb:DeleteItem", "dynamodb:UpdateItem", "dynamodb:Scan"} & _actions("SweeperRole")
    assert {a for a in _actions("AuthorizerRole") if a.startswith("dynamodb:")} == {
        "dynamodb:GetItem",
        "dynamodb:Query",
    }
    for st in _statements("AuthorizerRole", _FakeRefs()):
        if any(a.startswith("dynamodb:") for a in st["Action"]):
            assert "dynamodb:LeadingKeys" in json.dumps(st["Condition"])  # only the keys' partitions
    nothing_deletes = ["McpRole", "ApiRole", "SweeperRole", "DispatcherRole", "AuthorizerRole"]
    for role in nothing_deletes:
        assert "dynamodb:DeleteItem" not in _actions(role), role
    # Revisions of the verifier's family only (the stack's, and one per project image), in its cluster.
    runs = [st for st in _statements("DispatcherRole", _FakeRefs()) if "ecs:RunTask" in st["Action"]]
    family = (
        "arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task-definition/<AWS::StackName>-verifier:*"
    )
    assert [st["Resource"] for st in runs] == [[family]]
    assert runs[0]["Condition"] == {"ArnEquals": {"ecs:cluster": "<VerifierCluster.Arn>"}}
    assert resource("VerifierTaskDefinition")["Properties"]["Family"] == {
        "Fn::Sub": "${AWS::StackName}-verifier"
    }
    # Only the API (a human saving a config) registers; only the dispatcher starts; each may pass
    # the verifier's execution role and no other, to ECS tasks only.
    for role in FUNCTIONS.values():
        registers = "ecs:RegisterTaskDefinition" in _actions(role)
        assert registers == (role == "ApiRole"), role
        assert ("ecs:RunTask" in _actions(role)) == (role == "DispatcherRole"), role
        passes = [st for st in _statements(role, _FakeRefs()) if "iam:PassRole" in st["Action"]]
        if role in ("ApiRole", "DispatcherRole"):
            assert [st["Resource"] for st in passes] == [
                ["<VerifierExecutionRole.Arn>", "<VerifierTaskRole.Arn>"]
            ], role
            assert passes[0]["Condition"] == {
                "StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}
            }
        else:
            assert passes == [], role
    [register] = [
        st for st in _statements("ApiRole", _FakeRefs()) if "ecs:RegisterTaskDefinition" in st["Action"]
    ]
    assert register["Condition"] == {
        "ForAllValues:StringEquals": {"ecs:compute-compatibility": ["FARGATE"]},
        "BoolIfExists": {"ecs:privileged": "false"},
        "StringEqualsIfExists": {"ecs:task-cpu": "<VerifierCpu>", "ecs:task-memory": "<VerifierMemory>"},
    }
    nightly = _statements("NightlyScheduleRole", _FakeRefs())
    assert [(st["Action"], st["Resource"]) for st in nightly] == [
        (["lambda:InvokeFunction"], ["<DispatcherFunction.Arn>"])
    ]


def test_only_the_functions_that_decide_or_accept_may_sign_and_only_with_the_attestation_key() -> None:
    key = resource("AttestationKey")["Properties"]
    assert (key["KeySpec"], key["KeyUsage"]) == ({"Ref": "AttestationKeySpec"}, "SIGN_VERIFY")
    spec = template()["Parameters"]["AttestationKeySpec"]
    # RSA 2048 by default: KMS charges its requests a fifth of other asymmetric keys' (bench/cost.py).
    assert (spec["Default"], spec["AllowedValues"]) == ("RSA_2048", ["RSA_2048", "ECC_NIST_P256"])
    assert template()["Conditions"]["RsaAttestationKey"] == {
        "Fn::Equals": [{"Ref": "AttestationKeySpec"}, "RSA_2048"]
    }
    signers = {}
    for role in set(FUNCTIONS.values()) | {"VerifierExecutionRole"}:
        sts = [st for st in _statements(role, _FakeRefs()) if any(a.startswith("kms:") for a in st["Action"])]
        if sts:
            signers[role] = sts
    # The API (a verifier's finish, a revoked key's runs, a human's acceptance), MCP (a delegated
    # agent's acceptance) and the sweeper (a run nobody finished, ended as an error) decide.
    assert set(signers) == {"ApiRole", "McpRole", "SweeperRole"}
    for sts in signers.values():
        assert sorted(a for st in sts for a in st["Action"]) == ["kms:GetPublicKey", "kms:Sign"]
        for st in sts:
            assert st["Resource"] == ["<AttestationKey.Arn>"]
            if "kms:Sign" in st["Action"]:
                assert st["Condition"] == {"StringEquals": {"kms:SigningAlgorithm": "RSASSA_PSS_SHA_256"}}
    # With the P-256 key, the same statements allow only ECDSA.
    p256 = {**CONDITIONS, "RsaAttestationKey": False}
    for role in signers:
        docs = [
            resolve(p["PolicyDocument"], _FakeRefs(), p256) for p in resource(role)["Properties"]["Policies"]
        ]
        signs = [st for doc in docs for st in doc["Statement"] if st["Action"] == "kms:Sign"]
        assert [st["Condition"] for st in signs] == [
            {"StringEquals": {"kms:SigningAlgorithm": "ECDSA_SHA_256"}}
        ]
    for function, role in FUNCTIONS.items():
        env = resource(function)["Properties"].get("Environment", {}).get("Variables", {})
        # A function that may sign is given the key (its runtime context builds the KMS
        # attestor from it); no other function is.
        assert env.get("TASKGATE_KMS_KEY_ID") == ({"Ref": "AttestationKey"} if role in signers else None), (
            function
        )


def test_the_verifier_task_role_reaches_its_slots_and_the_caches_only() -> None:
    props = resource("VerifierTaskDefinition")["Properties"]
    assert props["TaskRoleArn"] == {"Fn::GetAtt": ["VerifierTaskRole", "Arn"]}
    [container] = props["ContainerDefinitions"]
    assert [e["Name"] for e in container["Environment"]] == [
        "TASKGATE_SERVER",
        "TASKGATE_VERIFIER_IMAGE",
        "TASKGATE_TABLE",
        "TASKGATE_CACHE_BUCKET",
    ]
    assert {s["Name"] for s in container["Secrets"]} == {
        "TASKGATE_VERIFIER_KEY",
        "TASKGATE_REVIEWER_KEY",
        "TASKGATE_GIT_TOKEN",
    }
    execution = _statements("VerifierExecutionRole", _FakeRefs())
    secret_reads = [st for st in execution if "secretsmanager:GetSecretValue" in st["Action"]]
    assert [st["Resource"] for st in secret_reads] == [["<VerifierSecret.Id>"]]
    # The task's own role: read and write its drain slot (no delete, no query, no other
    # partition), read and write cache objects; nothing else in AWS.
    task = _statements("VerifierTaskRole", _FakeRefs())
    assert sorted((tuple(st["Action"]), tuple(st["Resource"])) for st in task) == [
        (("dynamodb:GetItem", "dynamodb:PutItem"), ("<Table.Arn>",)),
        (("s3:GetObject", "s3:PutObject"), ("<CacheBucket.Arn>/cache/*",)),
        (("s3:ListBucket",), ("<CacheBucket.Arn>",)),
    ]
    [table] = [st for st in task if "dynamodb:GetItem" in st["Action"]]
    assert table["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["DRAIN#*"]}}
    # No function's role may write the cache: the bucket policy refuses every writer but the
    # verifier task's role, whatever an identity policy grants.
    for role in FUNCTIONS.values():
        assert not any(
            a.startswith("s3:") and "Cache" in json.dumps(st["Resource"])
            for st in _statements(role, _FakeRefs())
            for a in st["Action"]
        ), role
    policy = resolve(resource("CacheBucketPolicy")["Properties"]["PolicyDocument"], _FakeRefs())
    [deny] = [st for st in policy["Statement"] if st.get("Sid") == "OnlyTheVerifierTaskWrites"]
    assert deny["Effect"] == "Deny" and deny["Principal"] == "*"
    assert set(deny["Action"]) == {"s3:PutObject", "s3:DeleteObject"}
    assert deny["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": "<VerifierTaskRole.Arn>"}}


# -- observed -------------------------------------------------------------------------------


@dataclass
class Request:
    action: str
    resource: str
    context: dict[str, list[str]] = field(default_factory=dict)


def _dynamodb(op: str, params: dict[str, Any], table_arn: Callable[[str], str]) -> list[Request]:
    def pk(key: dict[str, Any]) -> str:
        return str(key["PK"]["S"])

    if op in ("GetItem", "DeleteItem", "UpdateItem"):
        return [
            Request(
                f"dynamodb:{op}",
                table_arn(params["TableName"]),
                {"dynamodb:LeadingKeys": [pk(params["Key"])]},
            )
        ]
    if op == "PutItem":
        return [
            Request(
                "dynamodb:PutItem",
                table_arn(params["TableName"]),
                {"dynamodb:LeadingKeys": [pk(params["Item"])]},
            )
        ]
    if op == "BatchGetItem":
        return [
            Request(
                "dynamodb:BatchGetItem",
                table_arn(name),
                {"dynamodb:LeadingKeys": sorted({pk(k) for k in spec["Keys"]})},
            )
            for name, spec in params["RequestItems"].items()
        ]
    if op == "Query":
        arn = table_arn(params["TableName"]) + (
            f"/index/{params['IndexName']}" if params.get("IndexName") else ""
        )
        return [
            Request(
                "dynamodb:Query",
                arn,
                {"dynamodb:LeadingKeys": [params["ExpressionAttributeValues"][":pk"]["S"]]},
            )
        ]
    if op == "TransactWriteItems":
        out = []
        for item in params["TransactItems"]:
            [(kind, body)] = item.items()
            action = {
                "Put": "PutItem",
                "ConditionCheck": "ConditionCheckItem",
                "Delete": "DeleteItem",
                "Update": "UpdateItem",
            }[kind]
            key = body["Item"] if kind == "Put" else body["Key"]
            out.append(
                Request(
                    f"dynamodb:{action}", table_arn(body["TableName"]), {"dynamodb:LeadingKeys": [pk(key)]}
                )
            )
        return out
    raise AssertionError(f"unexpected DynamoDB call {op}")


@dataclass
class Recorder:
    stack: Stack
    execution_role: str
    task_role: str = ""
    active: bool = False
    requests: list[Request] = field(default_factory=list)

    def table_arn(self, name: str) -> str:
        return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if not self.active:
            return
        service, op = model.service_model.endpoint_prefix, model.name
        if service in ("dynamodb", "streams.dynamodb") and service == "dynamodb":
            self.requests += _dynamodb(op, params, self.table_arn)
        elif service == "ecs" and op == "DescribeTaskDefinition":
            self.requests.append(Request("ecs:DescribeTaskDefinition", params["taskDefinition"]))
        elif service == "ecs" and op == "RegisterTaskDefinition":
            # Registering names no existing resource; IAM evaluates it on "*" with these keys.
            privileged = any(c.get("privileged") for c in params["containerDefinitions"])
            self.requests.append(
                Request(
                    "ecs:RegisterTaskDefinition",
                    f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{params['family']}",
                    {
                        "ecs:compute-compatibility": list(params.get("requiresCompatibilities", [])),
                        "ecs:privileged": [str(privileged).lower()],
                        "ecs:task-cpu": [str(params["cpu"])],
                        "ecs:task-memory": [str(params["memory"])],
                    },
                )
            )
            for arn in (params.get("executionRoleArn"), params.get("taskRoleArn")):
                if arn:
                    self.requests.append(
                        Request("iam:PassRole", arn, {"iam:PassedToService": ["ecs-tasks.amazonaws.com"]})
                    )
        elif service == "ecs" and op == "RunTask":
            self.requests.append(
                Request("ecs:RunTask", params["taskDefinition"], {"ecs:cluster": [params["cluster"]]})
            )
            # ECS checks that the caller may pass the roles the task definition names.
            for role in (self.execution_role, self.task_role):
                self.requests.append(
                    Request("iam:PassRole", role, {"iam:PassedToService": ["ecs-tasks.amazonaws.com"]})
                )
        elif service == "s3" and op in (
            "PutObject",
            "CreateMultipartUpload",
            "UploadPart",
            "CompleteMultipartUpload",
            "AbortMultipartUpload",
        ):
            self.requests.append(Request("s3:PutObject", f"arn:aws:s3:::{params['Bucket']}/{params['Key']}"))
        elif service == "s3" and op in ("GetObject", "HeadObject"):
            self.requests.append(Request("s3:GetObject", f"arn:aws:s3:::{params['Bucket']}/{params['Key']}"))
            # S3 answers a missing key with 404 rather than 403 only if the caller may list.
            self.requests.append(Request("s3:ListBucket", f"arn:aws:s3:::{params['Bucket']}"))
        elif service == "s3" and op == "ListObjectsV2":
            self.requests.append(Request("s3:ListBucket", f"arn:aws:s3:::{params['Bucket']}"))
        elif service == "s3" and op == "DeleteObjects":
            for obj in params["Delete"]["Objects"]:
                self.requests.append(
                    Request("s3:DeleteObject", f"arn:aws:s3:::{params['Bucket']}/{obj['Key']}")
                )
        elif service == "kms" and op in ("Sign", "GetPublicKey"):
            arn = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{params['KeyId']}"
            context = {"kms:SigningAlgorithm": [params["SigningAlgorithm"]]} if op == "Sign" else {}
            self.requests.append(Request(f"kms:{op}", arn, context))
        elif service == "cloudfront" and op == "CreateInvalidation":
            arn = f"arn:aws:cloudfront::{ACCOUNT}:distribution/{params['DistributionId']}"
            self.requests.append(Request("cloudfront:CreateInvalidation", arn))
        else:
            raise AssertionError(f"unexpected AWS call {service}:{op}")

    def run(self, handler: Callable[[dict[str, Any], Any], Any], event: dict[str, Any]) -> Any:
        self.active = True
        try:
            return self.stack.invoke(handler, event)
        finally:
            self.active = False


def _condition_holds(condition: dict[str, Any], request: Request) -> bool:
    for operator, tests in condition.items():
        for key, wanted in tests.items():
            wanted = [wanted] if isinstance(wanted, str) else wanted
            values = request.context.get(key)
            if values is None:
                # IAM: a set operator over no values, or an ...IfExists test, holds; anything else fails.
                if operator.startswith("ForAllValues:") or operator.endswith("IfExists"):
                    continue
                return False
            operator = operator.removesuffix("IfExists")
            if operator == "ForAllValues:StringEquals":
                ok = all(v in wanted for v in values)
            elif operator == "ForAllValues:StringLike":
                ok = all(any(fnmatch.fnmatchcase(v, w) for w in wanted) for v in values)
            elif operator in ("StringEquals", "ArnEquals", "Bool"):
                ok = all(v in wanted for v in values)
            else:
                raise AssertionError(f"this evaluator does not know the condition operator {operator}")
            if not ok:
                return False
    return True


def _allows(st: dict[str, Any], request: Request, resource_pattern: str | None = None) -> bool:
    if st["Effect"] != "Allow" or request.action not in st["Action"]:
        return False
    patterns = [resource_pattern] if resource_pattern else st["Resource"]
    if not any(fnmatch.fnmatchcase(request.resource, p) for p in patterns):
        return False
    return _condition_holds(st.get("Condition", {}), request)


@pytest.fixture
def observed() -> Iterator[tuple[Stack, Recorder]]:
    with stack() as s:
        boto3.setup_default_session(region_name=REGION)  # the functions' clients are made from it
        recorder = Recorder(s, s.execution_role, s.task_role)
        assert boto3.DEFAULT_SESSION is not None
        boto3.DEFAULT_SESSION.events.register("before-parameter-build", recorder)
        yield s, recorder


def _refs(s: Stack, bucket: str = "board-bucket", distribution: str = "E0000000000000") -> dict[str, Any]:
    return _FakeRefs(
        {
            "AWS::Partition": "aws",
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::StackName": s.table,
            "VerifierCpu": "1024",
            "VerifierMemory": "2048",
            "Table.Arn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{s.table}",
            "Table.StreamArn": s.stream_arn,
            "VerifierTaskDefinition": s.task_definition,
            "VerifierCluster.Arn": s.cluster,
            "VerifierExecutionRole.Arn": s.execution_role,
            "VerifierTaskRole.Arn": s.task_role,
            "CacheBucket.Arn": f"arn:aws:s3:::{s.cache_bucket}",
            "BoardBucket.Arn": f"arn:aws:s3:::{bucket}",
            "Distribution": distribution,
            "AttestationKey.Arn": s.kms_key_arn,
        }
    )


def _check(role: str, refs: dict[str, Any], recorder: Recorder) -> None:
    statements = _statements(role, refs)
    assert recorder.requests, "the workload made no AWS request"
    for request in recorder.requests:
        assert any(_allows(st, request) for st in statements), f"{role} does not allow {request}"
    for st in statements:
        for action in st["Action"]:
            if action in EXERCISED_BY_AWS:
                continue
            for pattern in st["Resource"]:
                probe = [r for r in recorder.requests if r.action == action]
                assert any(_allows({**st, "Action": [action]}, r, pattern) for r in probe), (
                    f"{role} grants {action} on {pattern} but the function never uses it: broader than its use"
                )


CRITERIA = [CriterionInput(text="unit tests pass", kind=CriterionKind.TEST, verify_ref="tests.test_x")]


def _setup_project(s: Stack, name: str = "shop") -> None:
    projects.create(s.ctx, HUMAN, name, repo=f"https://git.example.com/{name}.git")


def test_authorizer_role_allows_exactly_what_it_does(observed: tuple[Stack, Recorder]) -> None:
    s, rec = observed
    key = keys.create(s.ctx, HUMAN, kind=CredentialKind.AGENT, name="builder").secret
    assert rec.run(authorizer.handler, authorizer_event(key))["isAuthorized"] is True
    assert rec.run(authorizer.handler, authorizer_event("tga_an-older-key-format"))["isAuthorized"] is False
    _check("AuthorizerRole", _refs(s), rec)


def test_mcp_role_allows_exactly_what_it_does(observed: tuple[Stack, Recorder]) -> None:
    s, rec = observed
    _setup_project(s)
    key = keys.create(s.ctx, HUMAN, kind=CredentialKind.AGENT, name="builder").secret
    blocker = tasks.create(s.ctx, HUMAN, "shop", title="first", criteria=[CriterionInput(text="ok")]).task

    def tool(name: str, arguments: dict[str, Any], k: str = key) -> dict[str, Any]:
        body = rpc("tools/call", {"name": name, "arguments": arguments}, version=LEGACY)
        event = v2_event(body, headers=mcp_headers(k, LEGACY, body))
        event["requestContext"]["authorizer"] = {
            "lambda": {"actor": "agent:builder", "credential_id": "x", "kind": "agent"}
        }
        response: dict[str, Any] = rec.run(mcp.handler, event)
        return response

    assert tool("list_projects", {})["statusCode"] == 200
    created = tool(
        "create_task",
        {"project": "shop", "title": "second", "criteria": [{"text": "works"}], "blocked_by": [blocker.id]},
    )
    assert json.loads(created["body"])["result"]["isError"] is False, created
    tool("get_next_tasks", {"project": "shop"})
    claimed = json.loads(tool("claim_task", {"project": "shop"})["body"])["result"]["structuredContent"]
    token, tid = claimed["claim_token"], claimed["brief"]["task"]["id"]
    tool("heartbeat", {"task_id": tid, "claim_token": token})
    tool("submit_task", {"task_id": tid, "claim_token": token, "commit_sha": SHA, "evidence": "done"})
    assert (
        json.loads(tool("claim_task", {"project": "shop"})["body"])["result"]["isError"] is True
    )  # none ready
    # A delegated agent accepts it for the human: the acceptance's summary is signed (kms:Sign).
    lead = keys.create(
        s.ctx, HUMAN, kind=CredentialKind.AGENT, name="lead", delegations=["human:alice"]
    ).secret
    answer = s.invoke(authorizer.handler, authorizer_event(lead))
    body = rpc(
        "tools/call",
        {
            "name": "accept_tasks",
            "arguments": {"project": "shop", "task_ids": [tid], "on_behalf_of": "human:alice"},
        },
        version=LEGACY,
    )
    accepted = rec.run(
        mcp.handler, behind_authorizer(v2_event(body, headers=mcp_headers(lead, LEGACY, body)), answer)
    )
    assert json.loads(accepted["body"])["result"]["isError"] is False, accepted
    assert tasks.get(s.ctx, HUMAN, tid).attestation_head is not None
    # A task under an approved spec: its create is conditioned on the spec (a ConditionCheck).
    spec = specs.create(s.ctx, HUMAN, "shop", title="s", criteria=[CriterionInput(text="ok")])
    specs.approve(s.ctx, HUMAN, "shop", spec.id)
    under = tool("create_task", {"project": "shop", "title": "third", "spec_id": spec.id})
    assert json.loads(under["body"])["result"]["isError"] is False, under
    assert tool("list_projects", {}, k="tga_an-older-key-format")["statusCode"] == 401
    _check("McpRole", _refs(s), rec)


def test_api_role_allows_exactly_what_it_does(observed: tuple[Stack, Recorder]) -> None:
    s, rec = observed

    def human_call(method: str, path: str, body: Any = None) -> dict[str, Any]:
        response: dict[str, Any] = rec.run(api.handler, jwt_event(method, path, body))
        assert response["statusCode"] < 300, response
        return response

    human_call("POST", "/api/projects", {"name": "shop", "repo": "https://git.example.com/shop.git"})
    verifier_key = json.loads(
        human_call("POST", "/api/keys", {"kind": "verifier", "name": "ci", "verifier_kind": "local"})["body"]
    )["key"]
    agent_key = json.loads(human_call("POST", "/api/keys", {"kind": "agent", "name": "builder"})["body"])[
        "key"
    ]
    human_call("PUT", "/api/projects/shop/verifier-config", {"checks": {"unit": {"command": "pytest"}}})
    # An image of the stack's repository: its task definition is registered on the first save.
    node = {"checks": {"unit": {"command": "npm test"}}, "image": f"{REPOSITORY}:node22"}
    human_call("PUT", "/api/projects/shop/verifier-config", node)
    human_call("PUT", "/api/projects/shop/verifier-config", node)
    elsewhere = jwt_event(
        "PUT", "/api/projects/shop/verifier-config", {**node, "image": "docker.io/library/node:22"}
    )
    assert rec.run(api.handler, elsewhere)["statusCode"] == 422
    human_call("PUT", "/api/projects/shop/verification", {"on": True})
    first = json.loads(
        human_call("POST", "/api/projects/shop/tasks", {"title": "a", "criteria": [{"text": "ok"}]})["body"]
    )
    human_call(
        "POST",
        "/api/projects/shop/tasks",
        {"title": "b", "criteria": [{"text": "ok"}], "blocked_by": [first["task"]["id"]]},
    )
    human_call("GET", "/api/projects/shop/tasks", None)
    by_status = jwt_event("GET", "/api/projects/shop/tasks")
    by_status["rawQueryString"], by_status["queryStringParameters"] = "status=ready", {"status": "ready"}
    assert rec.run(api.handler, by_status)["statusCode"] == 200
    tid = first["task"]["id"]
    builder = acting(keys.authenticate(s.ctx, agent_key))
    token = claims.claim(s.ctx, builder, "shop", task_id=tid).token
    claims.submit(s.ctx, builder, tid, token, commit_sha=SHA, evidence="done")
    human_call("GET", f"/api/tasks/{tid}")
    answer = s.invoke(authorizer.handler, authorizer_event(verifier_key, route="POST /api/verifier/runs"))
    event = behind_authorizer(
        v2_event(
            {"task_id": tid},
            method="POST",
            path="/api/verifier/runs",
            headers={"authorization": f"Bearer {verifier_key}"},
        ),
        answer,
    )
    started = rec.run(api.handler, event)
    assert started["statusCode"] == 201
    # The verifier's finish: the server decides and signs the run's statement (kms:Sign).
    run_id = json.loads(started["body"])["run_id"]
    finish = behind_authorizer(
        v2_event(
            {"checks": {"unit": {"exit_code": 0}}, "results": {}},
            method="POST",
            path=f"/api/verifier/runs/{tid}/{run_id}/finish",
            headers={"authorization": f"Bearer {verifier_key}"},
        ),
        s.invoke(
            authorizer.handler,
            authorizer_event(verifier_key, route=f"POST /api/verifier/runs/{tid}/{run_id}/finish"),
        ),
    )
    finished = rec.run(api.handler, finish)
    assert finished["statusCode"] == 200, finished
    assert json.loads(finished["body"])["run"]["attestation"]["signatures"]
    key = rec.run(api.handler, v2_event(None, method="GET", path="/api/attestations/key"))
    assert key["statusCode"] == 200 and json.loads(key["body"])["scheme"] == "rsassa-pss-sha256"
    # A task under an approved spec: its create is conditioned on the spec (a ConditionCheck).
    spec = specs.create(s.ctx, HUMAN, "shop", title="s", criteria=[CriterionInput(text="ok")])
    specs.approve(s.ctx, HUMAN, "shop", spec.id)
    under = human_call("POST", "/api/projects/shop/tasks", {"title": "c", "spec_id": spec.id})
    assert under["statusCode"] == 201, under
    refused = v2_event(
        None, method="GET", path="/api/projects", headers={"authorization": "Bearer tga_an-older-key-format"}
    )
    assert rec.run(api.handler, refused)["statusCode"] == 401
    _check("ApiRole", _refs(s), rec)


def test_sweeper_role_allows_exactly_what_it_does(observed: tuple[Stack, Recorder]) -> None:
    from datetime import UTC, datetime, timedelta

    s, rec = observed
    now = datetime.now(UTC)
    past = Context(s.ctx.store, ManualClock(now - timedelta(minutes=30)))
    projects.create(past, HUMAN, "shop", repo="https://git.example.com/shop.git")
    agent = acting(
        keys.authenticate(past, keys.create(past, HUMAN, kind=CredentialKind.AGENT, name="b").secret)
    )
    blocker = tasks.create(past, HUMAN, "shop", title="a", criteria=[CriterionInput(text="ok")]).task
    tasks.create(
        past, HUMAN, "shop", title="b", criteria=[CriterionInput(text="ok")], blocked_by=[blocker.id]
    )
    claims.claim(past, agent, "shop", task_id=blocker.id, lease_minutes=5)
    # A spec approved whose cascade a crash cut short after its first task: the sweeper
    # finishes it (each move conditioned on the spec, a ConditionCheck in the transaction).
    spec = specs.create(past, HUMAN, "shop", title="s", criteria=[CriterionInput(text="ok")])
    waiting = [
        tasks.create(past, HUMAN, "shop", title=f"w{i}", spec_id=spec.id, spec_criteria=["AC-1.1"]).task.id
        for i in range(2)
    ]

    def crash(point: str) -> None:
        raise _Crash(point)

    past.checkpoint = crash
    with pytest.raises(_Crash):
        specs.approve(past, HUMAN, "shop", spec.id)
    # A verification run nobody finished (started hours ago): the sweeper ends it as an error
    # and signs that (kms:Sign, and kms:GetPublicKey for the key id).
    long_ago = Context(s.ctx.store, ManualClock(now - timedelta(hours=6)))
    submitted, _ = abandoned_run(long_ago, "site", agent, SHA)
    report = rec.run(sweeper.handler, scheduler_event(now))
    assert report["expired"] == [blocker.id]
    assert set(report["cascaded"]) >= {waiting[1]}
    assert report["abandoned_runs"] == [submitted]
    [ended] = tasks.runs(s.ctx, HUMAN, submitted)
    assert ended.status == "error" and ended.attestation is not None and ended.attestation["signatures"]
    _check("SweeperRole", _refs(s), rec)


class _Crash(BaseException):
    """A process dying at a checkpoint (nothing catches a BaseException)."""


def test_dispatcher_role_allows_exactly_what_it_does(observed: tuple[Stack, Recorder]) -> None:
    s, rec = observed
    _setup_project(s)
    keys.create(s.ctx, HUMAN, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL)
    projects.set_verifier_config(s.ctx, HUMAN, "shop", {"checks": {"unit": {"command": "pytest"}}})
    projects.set_verification(s.ctx, HUMAN, "shop", True)
    agent = acting(
        keys.authenticate(s.ctx, keys.create(s.ctx, HUMAN, kind=CredentialKind.AGENT, name="b").secret)
    )
    task = tasks.create(s.ctx, HUMAN, "shop", title="a", criteria=[CriterionInput(text="ok")]).task
    token = claims.claim(s.ctx, agent, "shop", task_id=task.id).token
    claims.submit(s.ctx, agent, task.id, token, commit_sha=SHA, evidence="done")
    # The project runs in an image of its own (its revision registered by the config save).
    projects.set_verifier_config(
        s.ctx, HUMAN, "shop", {"checks": {"unit": {"command": "npm test"}}, "image": f"{REPOSITORY}:node22"}
    )
    delivered = s.delivered(s.new_records())
    rec.run(dispatcher.handler, stream_event(delivered))
    rec.run(dispatcher.handler, stream_event(delivered))  # a task already drains: reads the slots only
    assert len(s.ecs.list_tasks(cluster=s.cluster)["taskArns"]) == 1
    # The nightly run: the project directory, each project's slots, whether work waits, its
    # image. "site" has work whose record never reached the dispatcher: it starts a task there.
    _setup_project(s, "idle")
    _setup_project(s, "site")
    projects.set_verifier_config(s.ctx, HUMAN, "site", {"checks": {"unit": {"command": "pytest"}}})
    projects.set_verification(s.ctx, HUMAN, "site", True)
    other = tasks.create(s.ctx, HUMAN, "site", title="b", criteria=[CriterionInput(text="ok")]).task
    claims.submit(
        s.ctx,
        agent,
        other.id,
        claims.claim(s.ctx, agent, "site", task_id=other.id).token,
        commit_sha=SHA,
        evidence="d",
    )
    rec.run(
        dispatcher.handler, {"nightly": True, "execution_id": "e-1", "scheduled_time": "2026-01-01T02:00:00Z"}
    )
    assert len(s.ecs.list_tasks(cluster=s.cluster)["taskArns"]) == 2
    # Stale verdicts: "moved" holds a task verified on main's old tip. Its base moving reaches
    # the dispatcher as the BASE-MOVED item's record (it reads the verified queue), and the next
    # nightly run reads the verified queue of "held", whose verdict holds for a tip.
    for name in ("moved", "held"):
        _setup_project(s, name)
        ci = acting(
            keys.authenticate(
                s.ctx,
                keys.create(
                    s.ctx,
                    HUMAN,
                    kind=CredentialKind.VERIFIER,
                    name=f"{name}-ci",
                    verifier_kind=VerifierKind.LOCAL,
                ).secret,
            )
        )
        projects.set_verifier_config(s.ctx, HUMAN, name, CONFIG)
        projects.set_verification(s.ctx, HUMAN, name, True)
        verified = tasks.create(s.ctx, HUMAN, name, title="c", criteria=CRITERIA).task
        claims.submit(
            s.ctx,
            agent,
            verified.id,
            claims.claim(s.ctx, agent, name, task_id=verified.id).token,
            commit_sha=SHA,
            evidence="d",
        )
        run_verifier(s.ctx, ci, verified.id, Evidence.PASS, base=BASE0)
        if name == "moved":
            staleness.base_moved(s.ctx, ci, name, ref="refs/heads/main", tip=TIP1)
            rec.run(dispatcher.handler, stream_event(s.delivered(s.new_records())))
    assert len(s.ecs.list_tasks(cluster=s.cluster)["taskArns"]) == 3
    rec.run(
        dispatcher.handler, {"nightly": True, "execution_id": "e-2", "scheduled_time": "2026-01-02T02:00:00Z"}
    )
    assert len(s.ecs.list_tasks(cluster=s.cluster)["taskArns"]) == 4
    _check("DispatcherRole", _refs(s), rec)


def test_verifier_task_role_allows_exactly_what_the_task_does(
    observed: tuple[Stack, Recorder], tmp_path: Any
) -> None:
    """The draining task's lease (renew, give back, take back) and the S3 cache (a miss, a save,
    a restore), made as the container makes them, against the task role."""
    from taskgate.cloud.drain_lease import lease_from_env
    from taskgate.cloud.ecs import LEASE_VAR, lease_value
    from taskgate.service import dispatch
    from taskgate.verifier import cache_s3

    s, rec = observed
    _setup_project(s)
    projects.set_verifier_config(s.ctx, HUMAN, "shop", {"checks": {"unit": {"command": "pytest"}}})
    keys.create(s.ctx, HUMAN, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL)
    projects.set_verification(s.ctx, HUMAN, "shop", True)
    leases: list[dispatch.Lease] = []

    def launch(_start: str, _project: str, _definition: str, lease: dispatch.Lease) -> str:
        leases.append(lease)
        return "arn:aws:ecs:task/1"

    dispatch.ensure(s.ctx, "shop", launch, base=s.task_definition, start_id="t")
    env = {
        "TASKGATE_TABLE": s.table,
        LEASE_VAR: lease_value(leases[0]),
        "TASKGATE_CACHE_BUCKET": s.cache_bucket,
    }
    rec.active = True
    try:
        slot = lease_from_env(env)
        slot.every_s = 0.01
        assert slot.held() is True
        slot.release()
        assert slot.reacquire() is True
        slot.release()
        cache = cache_s3.from_env(env)
        assert cache is not None
        assert cache.restore("deps-abc", tmp_path / "none") is False
        (tmp_path / "venv").mkdir()
        (tmp_path / "venv" / "marker").write_text("x")
        cache.save("deps-abc", tmp_path / "venv")
        assert cache.restore("deps-abc", tmp_path / "back") is True
    finally:
        rec.active = False
    assert (tmp_path / "back" / "marker").read_text() == "x"
    _check("VerifierTaskRole", _refs(s), rec)


def test_board_publisher_role_allows_exactly_what_it_does(
    observed: tuple[Stack, Recorder], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, rec = observed
    monkeypatch.setenv("LAMBDA_TASK_ROOT", str(tmp_path))
    _web(tmp_path, {"index.html": "<!doctype html>", "app.js": "1"})
    _s3, _, bucket, distribution = _setup(s)
    cfn = CloudFormation()
    try:
        rec.run(board.handler, _request("Create", cfn, bucket, distribution))
        (tmp_path / "web" / "app.js").unlink()
        rec.run(
            board.handler, _request("Update", cfn, bucket, distribution, PhysicalResourceId=f"board:{bucket}")
        )
        rec.run(
            board.handler, _request("Delete", cfn, bucket, distribution, PhysicalResourceId=f"board:{bucket}")
        )
    finally:
        cfn.close()
    assert [a["Status"] for a in cfn.answers] == ["SUCCESS"] * 3
    _check("BoardPublisherRole", _refs(s, bucket, distribution), rec)
