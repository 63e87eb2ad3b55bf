"""The stack the Lambda handlers run in, on moto: the table with its stream, the verifier's ECS
cluster and task definition (registered from template.yaml's own definition), its secret, and
each function's environment as template.yaml sets it. Plus the tools to drive the handlers as
Lambda does: a context object, the stream records as the event source mapping's filter would
deliver them, and the JSON lines the functions print (logs and EMF metrics).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.config import Config
from cfnlint.decode import decode
from moto import mock_aws
from moto.events.models import EventPattern

from taskgate import runtime
from taskgate.service.context import Context
from taskgate.store.schema import dynamodb_table_definition
from tests.support.dynamo import REGION, _fake_aws_env, _session

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
ACCOUNT = "123456789012"


def template() -> dict[str, Any]:
    tpl, errors = decode(str(TEMPLATE))
    assert not errors, errors
    assert tpl is not None
    return dict(tpl)


def resource(name: str) -> dict[str, Any]:
    return dict(template()["Resources"][name])


# The test stack stands for a deployment given its own subnets and security group.
CONDITIONS = {
    "OwnNetwork": False,
    "SpotVerifier": False,
    "RsaAttestationKey": True,
    "ApiOwnUrlForVerifiers": True,
    "NoExtraMcpHosts": True,
}


def parameter_default(name: str) -> Any:
    return template()["Parameters"][name]["Default"]


def resolve(node: Any, refs: dict[str, str], conditions: dict[str, bool] = CONDITIONS) -> Any:
    """Template values with intrinsic functions replaced by test values (`refs`: logical id or
    "Id.Attr" -> value). Enough of CloudFormation's functions for the resources used here."""
    if isinstance(node, list):
        return [resolve(n, refs, conditions) for n in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"Fn::If"}:
        name, yes, no = node["Fn::If"]
        return resolve(yes if conditions[name] else no, refs, conditions)
    if set(node) == {"Ref"}:
        return refs[node["Ref"]]
    if set(node) == {"Fn::GetAtt"}:
        target = node["Fn::GetAtt"]
        return refs[target if isinstance(target, str) else ".".join(target)]
    if set(node) == {"Fn::Sub"}:
        text, extra = (node["Fn::Sub"], {}) if isinstance(node["Fn::Sub"], str) else node["Fn::Sub"]
        own = {k: resolve(v, refs, conditions) for k, v in extra.items()}
        return re.sub(
            r"\$\{([^}]+)\}", lambda m: own[m.group(1)] if m.group(1) in own else refs[m.group(1)], text
        )
    if set(node) == {"Fn::Join"}:
        sep, parts = node["Fn::Join"]
        return sep.join(resolve(parts, refs, conditions))
    return {k: resolve(v, refs, conditions) for k, v in node.items()}


def _camel(key: str) -> str:
    return key[0].lower() + key[1:]


def _api_shape(node: Any) -> Any:
    """CloudFormation's PascalCase properties as the ECS API's camelCase parameters."""
    if isinstance(node, list):
        return [_api_shape(n) for n in node]
    if isinstance(node, dict):
        return {_camel(k): _api_shape(v) for k, v in node.items()}
    return node


@dataclass
class LambdaContext:
    """What the Lambda runtime passes as `context` (the attributes Powertools reads)."""

    function_name: str = "taskgate-test"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:taskgate-test"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@dataclass
class Output:
    """Everything the functions printed: Powertools log lines and EMF metric documents."""

    buffer: io.StringIO = field(default_factory=io.StringIO)

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.buffer.getvalue().splitlines():
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def logs(self) -> list[dict[str, Any]]:
        return [d for d in self.lines() if "_aws" not in d]

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Sum of every EMF metric printed, by (name, its dimensions other than service)."""
        totals: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for doc in self.lines():
            if "_aws" not in doc:
                continue
            for block in doc["_aws"]["CloudWatchMetrics"]:
                dims = sorted({d for ds in block["Dimensions"] for d in ds} - {"service"})
                key_dims = tuple((d, str(doc[d])) for d in dims)
                for m in block["Metrics"]:
                    values = doc[m["Name"]]
                    total = sum(values) if isinstance(values, list) else values
                    totals[(m["Name"], key_dims)] = totals.get((m["Name"], key_dims), 0) + total
        return totals

    def text(self) -> str:
        return self.buffer.getvalue()


@dataclass
class Stack:
    table: str
    stream_arn: str
    cluster: str
    task_definition: str
    secret_arn: str
    execution_role: str
    subnet: str
    security_group: str
    output: Output
    dynamodb: Any
    ecs: Any
    streams: Any
    kms_key_arn: str = ""
    task_role: str = ""
    cache_bucket: str = ""
    _iterators: dict[str, str] = field(default_factory=dict)

    @property
    def ctx(self) -> Context:
        return runtime.context()

    def invoke(self, handler: Callable[[dict[str, Any], Any], Any], event: dict[str, Any]) -> Any:
        """One invocation as Lambda makes it: a new context object, stdout captured."""
        from taskgate.cloud import observe

        # Counts made outside any invocation (other tests' service calls in this process, this
        # test's own setup) would ride on this invocation's flush: on Lambda there are none.
        observe.metrics.clear_metrics()
        handler_stream = observe.logger.registered_handler
        previous = handler_stream.setStream(self.output.buffer)  # type: ignore[attr-defined]
        try:
            with contextlib.redirect_stdout(self.output.buffer):
                return handler(event, LambdaContext())
        finally:
            handler_stream.setStream(previous)  # type: ignore[attr-defined]

    # -- the stream --------------------------------------------------------------------------

    def new_records(self) -> list[dict[str, Any]]:
        """Stream records written since the last call, as Lambda hands them to a function."""
        shards = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        out: list[dict[str, Any]] = []
        for shard in shards:
            sid = shard["ShardId"]
            it = (
                self._iterators.get(sid)
                or self.streams.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=sid, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            )
            resp = self.streams.get_records(ShardIterator=it)
            self._iterators[sid] = resp["NextShardIterator"]
            for rec in resp["Records"]:
                rec = json.loads(json.dumps(rec, default=_as_lambda_json))
                rec["eventSourceARN"] = self.stream_arn
                out.append(rec)
        return out

    def delivered(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records the dispatcher's event source mapping passes (its FilterCriteria, as in
        template.yaml, evaluated by moto's implementation of the event pattern language)."""
        return [r for r in records if any(p.matches_event(r) for p in dispatcher_filters())]


def _as_lambda_json(value: Any) -> str:
    """Values the SDK hands back that JSON lacks, as Lambda's event JSON carries them: binary
    attributes in base64, times as text."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    return str(value)


def dispatcher_filters() -> list[EventPattern]:
    event = resource("DispatcherFunction")["Properties"]["Events"]["Submissions"]["Properties"]
    patterns = [f["Pattern"] for f in event["FilterCriteria"]["Filters"]]
    return [EventPattern(p, json.loads(p)) for p in patterns]


def stream_event(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Records": records}


@contextlib.contextmanager
def stack(
    extra_env: dict[str, str] | None = None,
    verifier_capacity: str = "FARGATE",
    attestation_key_spec: str | None = None,
    verifier_concurrency: int | None = None,
) -> Iterator[Stack]:
    """The stack on moto, with the functions' environment set as template.yaml sets it
    (`verifier_capacity`, `attestation_key_spec`, `verifier_concurrency`: those parameters;
    None: the default)."""
    if verifier_concurrency is None:
        verifier_concurrency = int(parameter_default("VerifierConcurrency"))
    key_spec = attestation_key_spec or parameter_default("AttestationKeySpec")
    conditions = {
        **CONDITIONS,
        "SpotVerifier": verifier_capacity == "FARGATE_SPOT",
        "RsaAttestationKey": key_spec == "RSA_2048",
    }
    saved = dict(os.environ)
    with _fake_aws_env(), mock_aws():
        session = _session()
        ddb = session.client("dynamodb", region_name=REGION)
        table = f"taskgate-{uuid.uuid4().hex[:10]}"
        ddb.create_table(
            **dynamodb_table_definition(table),
            StreamSpecification={"StreamEnabled": True, "StreamViewType": _stream_view()},
        )
        stream_arn = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        # DynamoDB Streams' account-based endpoint (<account>.streams-ddb...) is not one moto serves.
        streams = session.client(
            "dynamodbstreams", region_name=REGION, config=Config(account_id_endpoint_mode="disabled")
        )
        ecs = session.client("ecs", region_name=REGION)
        iam = session.client("iam", region_name=REGION)
        secrets = session.client("secretsmanager", region_name=REGION)
        ec2 = session.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.72.0.0/16")["Vpc"]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})  # as the stack's own VPC
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.72.0.0/20")["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName=f"{table}-verifier", Description="verifier", VpcId=vpc)[
            "GroupId"
        ]

        secret_props = resource("VerifierSecret")["Properties"]
        secret_arn = secrets.create_secret(
            Name=f"{table}-verifier", SecretString=secret_props["SecretString"]
        )["ARN"]
        role = iam.create_role(
            RoleName=f"{table}-exec",
            AssumeRolePolicyDocument=json.dumps(
                resource("VerifierExecutionRole")["Properties"]["AssumeRolePolicyDocument"], default=str
            ),
        )["Role"]["Arn"]
        task_role = iam.create_role(
            RoleName=f"{table}-task",
            AssumeRolePolicyDocument=json.dumps(
                resource("VerifierTaskRole")["Properties"]["AssumeRolePolicyDocument"], default=str
            ),
        )["Role"]["Arn"]
        cache_bucket = f"{table}-cache"
        session.client("s3", region_name=REGION).create_bucket(Bucket=cache_bucket)
        cluster = ecs.create_cluster(
            clusterName=f"{table}-verifiers",
            capacityProviders=resource("VerifierCluster")["Properties"]["CapacityProviders"],
        )["cluster"]["clusterArn"]
        key_props = resource("AttestationKey")["Properties"]
        assert key_props["KeySpec"] == {"Ref": "AttestationKeySpec"}
        kms_key = session.client("kms", region_name=REGION).create_key(
            KeySpec=key_spec, KeyUsage=key_props["KeyUsage"]
        )["KeyMetadata"]
        api_host = "abc123.execute-api.us-east-1.amazonaws.com"
        refs = {
            "AWS::StackName": table,
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "VerifierCpu": "1024",
            "VerifierMemory": "2048",
            "VerifierImageTag": "latest",
            "VerifierRepository.RepositoryUri": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/verifier",
            "VerifierExecutionRole.Arn": role,
            "VerifierTaskRole.Arn": task_role,
            "Table": table,
            "CacheBucket": cache_bucket,
            "VerifierSecret.Id": secret_arn,
            "VerifierLogs": f"/ecs/{table}",
            "HttpApi": api_host.split(".")[0],
        }
        definition = _api_shape(resolve(resource("VerifierTaskDefinition")["Properties"], refs, conditions))
        for container in definition["containerDefinitions"]:
            # moto sums container-level memory to place a task and fails without it; Fargate
            # needs only the task-level value, which is what the template sets.
            container.setdefault("memory", int(definition["memory"]))
        task_definition = ecs.register_task_definition(**definition)["taskDefinition"]["taskDefinitionArn"]

        env = resolve(
            {
                **template()["Globals"]["Function"]["Environment"]["Variables"],
                **resource("DispatcherFunction")["Properties"]["Environment"]["Variables"],
            },
            {
                "Table": table,
                "VerifierCluster": cluster,
                "VerifierTaskDefinition": task_definition,
                "VerifierSubnets": subnet,
                "HttpApi": api_host.split(".")[0],
                "AWS::Region": REGION,
                "VerifierSecurityGroup": group,
                "VerifierAssignPublicIp": "ENABLED",
                "VerifierCapacity": verifier_capacity,
                "VerifierConcurrency": str(verifier_concurrency),
                "VerifierIdleSeconds": str(parameter_default("VerifierIdleSeconds")),
            },
            conditions,
        )
        # The attestation key, as the functions that sign (API, MCP, sweeper) are given it.
        env["TASKGATE_KMS_KEY_ID"] = resolve(
            resource("ApiFunction")["Properties"]["Environment"]["Variables"]["TASKGATE_KMS_KEY_ID"],
            {"AttestationKey": kms_key["KeyId"]},
        )
        env.update(
            {
                "AWS_LAMBDA_FUNCTION_NAME": "",  # not in Lambda: Powertools leaves tracing off
                "TASKGATE_ALLOWED_HOSTS": api_host,
                "TASKGATE_ALLOWED_ORIGINS": f"https://{api_host}",
                **(extra_env or {}),
            }
        )
        os.environ.update(env)
        os.environ.pop("TASKGATE_DYNAMODB_ENDPOINT", None)
        runtime.reset()
        from taskgate.cloud import dispatcher

        dispatcher._launcher = None  # built from this environment on first use
        try:
            yield Stack(
                table=table,
                stream_arn=stream_arn,
                cluster=cluster,
                task_definition=task_definition,
                secret_arn=secret_arn,
                execution_role=role,
                subnet=subnet,
                security_group=group,
                output=Output(),
                dynamodb=ddb,
                ecs=ecs,
                streams=streams,
                kms_key_arn=kms_key["Arn"],
                task_role=task_role,
                cache_bucket=cache_bucket,
            )
        finally:
            runtime.reset()
            dispatcher._launcher = None
            os.environ.clear()
            os.environ.update(saved)


def _stream_view() -> str:
    return str(resource("Table")["Properties"]["StreamSpecification"]["StreamViewType"])


@contextlib.contextmanager
def run_task_requests(client: Any) -> Iterator[list[dict[str, Any]]]:
    """The parameters of every ecs:RunTask the client sends while inside, as botocore sends them
    (moto ignores some, e.g. clientToken and the capacity provider strategy)."""
    sent: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append(dict(params))

    client.meta.events.register("provide-client-params.ecs.RunTask", record)
    try:
        yield sent
    finally:
        client.meta.events.unregister("provide-client-params.ecs.RunTask", record)
