"""template.yaml agrees with the code it deploys: what the functions read from their
environment, the key shapes the stream filter matches, the routes and who may call them, the
same-origin CloudFront paths, and where SnapStart is on."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import taskgate.api.app  # noqa: F401  (the route modules register ROUTES on import)
from taskgate.api.access import ROUTES, Access
from taskgate.domain.models import Status
from taskgate.service import records
from tests.functions.stack import CONDITIONS, resolve, resource, template

ROOT = Path(__file__).resolve().parents[2]
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"


def _env(name: str) -> dict[str, Any]:
    return dict(resource(name)["Properties"].get("Environment", {}).get("Variables", {}))


def test_the_stream_filter_matches_the_queue_key_of_a_waiting_task() -> None:
    event = resource("DispatcherFunction")["Properties"]["Events"]["Submissions"]["Properties"]
    [pattern, moves, queue] = [json.loads(f["Pattern"]) for f in event["FilterCriteria"]["Filters"]]
    # The third: a project's LANDING item (its landing queue), by its key.
    [queue_pk] = queue["dynamodb"]["Keys"]["PK"]["S"]
    pk, sk = records.landing_key("shop")
    assert pk.startswith(queue_pk["prefix"]) and queue["dynamodb"]["Keys"]["SK"]["S"] == [sk]
    [rule] = pattern["dynamodb"]["NewImage"]["GSI1PK"]["S"]
    # The second: a project's BASE-MOVED item, by its key (every project's, no other item).
    [pk_rule] = moves["dynamodb"]["Keys"]["PK"]["S"]
    pk, sk = records.base_moved_key("shop")
    assert pk.startswith(pk_rule["prefix"]) and moves["dynamodb"]["Keys"]["SK"]["S"] == [sk]
    assert sk not in {records.project_key("shop")[1], records.counter_key("shop")[1]}
    assert records.queue_pk("shop", Status.NEEDS_VERIFICATION).startswith(rule["prefix"])
    for status in Status:
        if status is not Status.NEEDS_VERIFICATION:
            assert not records.queue_pk("shop", status).startswith(rule["prefix"])
    assert resource("Table")["Properties"]["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert event["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert event["MaximumRetryAttempts"] >= 1 and "OnFailure" in event["DestinationConfig"]


def test_the_environment_the_code_reads_is_the_one_the_template_sets() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "src" / "taskgate" / "cloud").glob("*.py"))
    read = set(
        re.findall(
            r'env(?:iron)?(?:\.get\(|\[)"(TASKGATE_(?:ECS_[A-Z_]+|VERIFIER_CONCURRENCY|DRAIN_IDLE_S|VERIFIER_SERVER))"',
            source,
        )
    )
    assert read == set(_env("DispatcherFunction")) - {"TASKGATE_STORE", "TASKGATE_TABLE"}
    [container] = resource("VerifierTaskDefinition")["Properties"]["ContainerDefinitions"]
    assert _env("DispatcherFunction")["TASKGATE_ECS_CONTAINER"] == container["Name"]
    # The API function registers a project image's revision of the same task definition.
    api_env = _env("ApiFunction")
    assert api_env == {
        "TASKGATE_ECS_TASK_DEFINITION": {"Ref": "VerifierTaskDefinition"},
        "TASKGATE_ECS_CONTAINER": container["Name"],
        "TASKGATE_KMS_KEY_ID": {"Ref": "AttestationKey"},  # decided runs and acceptances are signed
    }
    assert _env("DispatcherFunction")["TASKGATE_ECS_TASK_DEFINITION"] == {"Ref": "VerifierTaskDefinition"}
    # The nightly schedule invokes the dispatcher, which starts one container per project.
    target = resource("NightlyVerification")["Properties"]["Target"]
    assert target["Arn"] == {"Fn::GetAtt": ["DispatcherFunction", "Arn"]} and "EcsParameters" not in target
    nightly = json.loads(target["Input"])
    assert nightly == {
        "nightly": True,
        "execution_id": "<aws.scheduler.execution-id>",
        "scheduled_time": "<aws.scheduler.scheduled-time>",
    }
    [invoke] = [
        st
        for policy in resource("NightlyScheduleRole")["Properties"]["Policies"]
        for st in policy["PolicyDocument"]["Statement"]
    ]
    assert invoke["Action"] == "lambda:InvokeFunction" and invoke["Resource"] == target["Arn"]
    # The sweep of lost verifier tasks invokes the dispatcher the same way, with its own flag.
    drain_sweep = resource("VerifierSweep")["Properties"]
    assert drain_sweep["Target"]["Arn"] == target["Arn"]
    assert drain_sweep["Target"]["RoleArn"] == target["RoleArn"]
    assert drain_sweep["ScheduleExpression"] == {"Ref": "VerifierSweepSchedule"}
    assert json.loads(drain_sweep["Target"]["Input"]) == {
        "sweep": True,
        "execution_id": "<aws.scheduler.execution-id>",
        "scheduled_time": "<aws.scheduler.scheduled-time>",
    }
    sweep_input = json.loads(resource("SweeperSchedule")["Properties"]["Target"]["Input"])
    assert set(sweep_input) == {"execution_id", "scheduled_time"}  # cloud/sweeper.py's correlation id
    globals_ = template()["Globals"]["Function"]["Environment"]["Variables"]
    assert globals_["TASKGATE_STORE"] == "dynamodb" and globals_["TASKGATE_TABLE"] == {"Ref": "Table"}


def _routes() -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["RouteKey"]: r["Properties"]
        for r in template()["Resources"].values()
        if r["Type"] == "AWS::ApiGatewayV2::Route"
    }


def test_every_route_has_the_authorizer_its_callers_need() -> None:
    routes = _routes()
    assert routes["ANY /mcp"]["AuthorizerId"] == {"Ref": "AgentKeyAuthorizer"}
    assert routes["ANY /api/{proxy+}"]["AuthorizerId"] == {"Ref": "HumanJwtAuthorizer"}
    assert routes["ANY /api/verifier/{proxy+}"]["AuthorizerId"] == {"Ref": "AgentKeyAuthorizer"}
    public = {f"{r.method} {r.path}" for r in ROUTES if r.access is Access.PUBLIC}
    unauthenticated = {key for key, r in routes.items() if r["AuthorizationType"] == "NONE"}
    assert unauthenticated == public
    for spec in ROUTES:
        if spec.access in (Access.LOCAL_VERIFIER, Access.REVIEWER):
            assert spec.path.startswith("/api/verifier/"), spec.path  # reaches the key authorizer
        elif spec.access is Access.HUMAN:
            assert spec.path.startswith("/api/") and not spec.path.startswith("/api/verifier/"), spec.path


def test_cloudfront_serves_the_board_and_sends_api_and_mcp_to_the_api_uncached() -> None:
    config = resource("Distribution")["Properties"]["DistributionConfig"]
    origins = {o["Id"]: o for o in config["Origins"]}
    assert "OriginAccessControlId" in origins["board"]
    assert config["DefaultCacheBehavior"]["TargetOriginId"] == "board"
    behaviours = {b["PathPattern"]: b for b in config["CacheBehaviors"]}
    assert set(behaviours) == {"/api/*", "/mcp"}
    for b in behaviours.values():
        assert b["TargetOriginId"] == "api"
        assert b["CachePolicyId"] == CACHING_DISABLED
        assert b["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST  # with caching off, Authorization too
        assert b["ViewerProtocolPolicy"] == "https-only"
        assert {"POST", "PUT", "DELETE"} <= set(b["AllowedMethods"])
    mcp_env = _env("McpFunction")
    assert "${Distribution.DomainName}" in mcp_env["TASKGATE_ALLOWED_ORIGINS"]["Fn::Sub"]
    own_host = "${HttpApi}.execute-api.${AWS::Region}.amazonaws.com"
    assert mcp_env["TASKGATE_ALLOWED_HOSTS"] == {
        "Fn::If": [
            "NoExtraMcpHosts",
            {"Fn::Sub": own_host},
            {"Fn::Sub": own_host + ",${McpExtraAllowedHosts}"},
        ]
    }
    bucket = resource("BoardBucket")["Properties"]["PublicAccessBlockConfiguration"]
    assert all(bucket.values())


def test_snapstart_is_on_the_mcp_and_rest_functions_only() -> None:
    functions = {k: v for k, v in template()["Resources"].items() if v["Type"] == "AWS::Serverless::Function"}
    with_snapstart = {k for k, v in functions.items() if "SnapStart" in v["Properties"]}
    assert with_snapstart == {"McpFunction", "ApiFunction"}
    for name in with_snapstart:
        assert functions[name]["Properties"]["SnapStart"] == {"ApplyOn": {"Ref": "SnapStart"}}
        assert functions[name]["Properties"]["AutoPublishAlias"] == "live"  # SnapStart needs versions
    assert template()["Parameters"]["SnapStart"]["Default"] == "PublishedVersions"


def _walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [d for n in node for d in _walk(n)]
    if isinstance(node, dict):
        return [node, *(d for v in node.values() for d in _walk(v))]
    return []


def test_each_condition_compares_a_parameter_itself() -> None:
    """No `Fn::Join` (or other function) inside a condition: a condition over a parameter as
    given means the same on AWS and in the emulators the cloud e2e runs on (one evaluates a
    condition over `Fn::Join` wrongly, and the stack silently loses its own network)."""
    tpl = template()
    for name, condition in tpl["Conditions"].items():
        [(function, (left, right))] = condition.items()
        assert function == "Fn::Equals", name
        assert set(left) == {"Ref"} and left["Ref"] in tpl["Parameters"], name
        assert isinstance(right, str), name
    # Without subnets the stack's own network, with them the ones given, as one string.
    assert tpl["Parameters"]["VerifierSubnets"]["Type"] == "String"
    subnets = _env("DispatcherFunction")["TASKGATE_ECS_SUBNETS"]
    refs = {
        "VerifierSubnetA": "subnet-a",
        "VerifierSubnetB": "subnet-b",
        "VerifierSubnets": "subnet-1,subnet-2",
    }
    assert resolve(subnets, refs, {**CONDITIONS, "OwnNetwork": True}) == "subnet-a,subnet-b"
    assert resolve(subnets, refs, {**CONDITIONS, "OwnNetwork": False}) == "subnet-1,subnet-2"
    pattern = re.compile(tpl["Parameters"]["VerifierSubnets"]["AllowedPattern"])
    for good in ("", "subnet-0a1b", "subnet-0a1b,subnet-2c3d", "subnet-0a1b, subnet-2c3d"):
        assert pattern.fullmatch(good), good
    for bad in ("subnet-0a1b subnet-2c3d", "sg-0a1b", "subnet-0a1b,"):
        assert not pattern.fullmatch(bad), bad


def test_the_secret_is_named_by_its_arn_everywhere() -> None:
    """The verifier's secret as `!GetAtt VerifierSecret.Id` (its ARN, as its Ref is on AWS; an
    emulator gives the Ref as the name, which ECS cannot resolve): never a bare Ref."""
    refs = [d for d in _walk(template()["Resources"]) if d.get("Ref") == "VerifierSecret"]
    subs = [d for d in _walk(template()) if "${VerifierSecret}" in json.dumps(d.get("Fn::Sub", ""))]
    assert refs == [] and subs == []
    [container] = resource("VerifierTaskDefinition")["Properties"]["ContainerDefinitions"]
    assert {s["ValueFrom"]["Fn::Sub"].split(":")[0] for s in container["Secrets"]} == {"${VerifierSecret.Id}"}
    assert template()["Outputs"]["VerifierSecretArn"]["Value"] == {"Fn::GetAtt": ["VerifierSecret", "Id"]}


def test_the_verifier_tasks_server_url_is_configuration() -> None:
    """The task definition's TASKGATE_SERVER and the URL the dispatcher passes to each task it
    starts are one value: VerifierServerUrl, or the API's own URL when it is empty."""
    [container] = resource("VerifierTaskDefinition")["Properties"]["ContainerDefinitions"]
    in_task = next(e["Value"] for e in container["Environment"] if e["Name"] == "TASKGATE_SERVER")
    passed = _env("DispatcherFunction")["TASKGATE_VERIFIER_SERVER"]
    assert in_task == passed
    refs = {"HttpApi": "abc123", "AWS::Region": "eu-west-1", "VerifierServerUrl": "https://api.example.com"}
    assert resolve(passed, refs, CONDITIONS) == "https://abc123.execute-api.eu-west-1.amazonaws.com"
    given = {**CONDITIONS, "ApiOwnUrlForVerifiers": False}
    assert resolve(passed, refs, given) == "https://api.example.com"
    assert template()["Parameters"]["VerifierServerUrl"]["Default"] == ""


def test_the_image_entry_point_is_the_task_definitions() -> None:
    """`taskgate` in both, and the whole subcommand in the command: a runner that ignores the
    task definition's EntryPoint still runs `taskgate verify ...`, never `taskgate verify verify`."""
    dockerfile = (ROOT / "verifier_container" / "Dockerfile").read_text()
    [entry] = re.findall(r"^ENTRYPOINT (.+)$", dockerfile, re.M)
    [command] = re.findall(r"^CMD (.+)$", dockerfile, re.M)
    [container] = resource("VerifierTaskDefinition")["Properties"]["ContainerDefinitions"]
    assert json.loads(entry) == container["EntryPoint"] == ["taskgate"]
    assert json.loads(command) == container["Command"] == ["verify", "--once"]
