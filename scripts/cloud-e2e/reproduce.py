"""Minimal reproductions of the ministack bugs scripts/cloud-e2e/ministack.patch fixes, one per
hunk, each against a running ministack (no taskgate involved):

    python scripts/cloud-e2e/reproduce.py --endpoint http://127.0.0.1:4566 --image IMAGE

IMAGE: any local image with python3 (its ECS tasks run it; nothing is pulled). ministack needs a
Docker API (DOCKER_HOST) for the two ECS reproductions and runs on the host, not in a container.
Prints one line per hunk, `bug` (the reproduction shows it) or `fixed`, and exits 0 only when
all are fixed. Against an unpatched 1.5.33 every line says `bug`.

1. provisioners.py, _normalize_container_defs: a CloudFormation task definition's container
   `Secrets` keep their template casing (Name, ValueFrom) where ECS reads name/valueFrom, so
   RunTask starts the container without them.
2. ecs.py, _start_task_worker: Fargate puts AWS_REGION (and AWS_DEFAULT_REGION) in every
   container's environment; ministack puts neither, and an SDK in the task has no region.
3. ecs.py, _start_task_worker: ministack on the host (not in a container) runs an awsvpc task on
   the default bridge, pointing it at host.docker.internal with `host-gateway`: under podman 4.3
   the name does not resolve in the container; under Docker it does, but botocore refuses a
   container credentials URL over http that is not loopback. Host networking, as for
   networkMode host, reaches the endpoints on 127.0.0.1.

The task containers stay in the Docker API's list after they exit (`podman ps --all`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid

import boto3

# What the task prints: its region and whether its credentials endpoint answered.
PROBE = (
    "import os, json, urllib.request\n"
    "r = {'region': os.environ.get('AWS_REGION'), 'secret': os.environ.get('PROBE_SECRET')}\n"
    "try:\n"
    "    q = urllib.request.Request(os.environ['AWS_CONTAINER_CREDENTIALS_FULL_URI'],\n"
    "        headers={'Authorization': os.environ.get('AWS_CONTAINER_AUTHORIZATION_TOKEN', '')})\n"
    "    r['credentials'] = 'AccessKeyId' in json.load(urllib.request.urlopen(q, timeout=5))\n"
    "except Exception as e:\n"
    "    r['credentials'] = repr(e)[:200]\n"
    "print('PROBE ' + json.dumps(r), flush=True)\n"
)


def template(image: str) -> str:
    return json.dumps(
        {
            "Resources": {
                "Secret": {"Type": "AWS::SecretsManager::Secret", "Properties": {"SecretString": "s3cret"}},
                "Logs": {"Type": "AWS::Logs::LogGroup"},
                "Cluster": {"Type": "AWS::ECS::Cluster"},
                "Task": {
                    "Type": "AWS::ECS::TaskDefinition",
                    "Properties": {
                        "RequiresCompatibilities": ["FARGATE"],
                        "NetworkMode": "awsvpc",
                        "Cpu": "256",
                        "Memory": "512",
                        "ContainerDefinitions": [
                            {
                                "Name": "probe",
                                "Image": image,
                                "Command": ["python3", "-c", PROBE],
                                "Secrets": [
                                    {"Name": "PROBE_SECRET", "ValueFrom": {"Fn::GetAtt": ["Secret", "Id"]}}
                                ],
                                "LogConfiguration": {
                                    "LogDriver": "awslogs",
                                    "Options": {
                                        "awslogs-group": {"Ref": "Logs"},
                                        "awslogs-region": "us-east-1",
                                        "awslogs-stream-prefix": "probe",
                                    },
                                },
                            }
                        ],
                    },
                },
            },
            "Outputs": {
                "Task": {"Value": {"Ref": "Task"}},
                "Cluster": {"Value": {"Ref": "Cluster"}},
                "Logs": {"Value": {"Ref": "Logs"}},
            },
        }
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--endpoint", default="http://127.0.0.1:4566")
    parser.add_argument("--image", required=True)
    args = parser.parse_args()
    aws = {
        "endpoint_url": args.endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
    }
    cfn, ecs, logs = (boto3.client(s, **aws) for s in ("cloudformation", "ecs", "logs"))
    name = f"repro-{uuid.uuid4().hex[:8]}"
    cfn.create_stack(StackName=name, TemplateBody=template(args.image))
    cfn.get_waiter("stack_create_complete").wait(
        StackName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
    )
    out = {
        o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks(StackName=name)["Stacks"][0]["Outputs"]
    }

    results: dict[str, str] = {}
    secrets = ecs.describe_task_definition(taskDefinition=out["Task"])["taskDefinition"][
        "containerDefinitions"
    ][0].get("secrets", [])
    results["1 task definition Secrets (CloudFormation)"] = (
        "fixed" if secrets and "name" in secrets[0] else f"bug: {secrets}"
    )

    task = ecs.run_task(
        cluster=out["Cluster"],
        taskDefinition=out["Task"],
        launchType="FARGATE",
        networkConfiguration={
            "awsvpcConfiguration": {"subnets": ["subnet-12345678"], "assignPublicIp": "ENABLED"}
        },
    )["tasks"][0]
    probe: dict[str, object] | None = None
    deadline = time.monotonic() + 120
    while probe is None and time.monotonic() < deadline:
        time.sleep(2)
        described = ecs.describe_tasks(cluster=out["Cluster"], tasks=[task["taskArn"]])["tasks"][0]
        for stream in logs.describe_log_streams(logGroupName=out["Logs"]).get("logStreams", []):
            for event in logs.get_log_events(logGroupName=out["Logs"], logStreamName=stream["logStreamName"])[
                "events"
            ]:
                if event["message"].startswith("PROBE "):
                    probe = json.loads(event["message"][6:])
        if probe is None and described["lastStatus"] == "STOPPED":
            probe = {"stopped": described.get("stoppedReason", "")}
    probe = probe or {"stopped": "no output within 120 s"}
    results["2 AWS_REGION in the task (ECS)"] = (
        "fixed" if probe.get("region") == "us-east-1" else f"bug: {probe}"
    )
    results["3 the task reaches its credentials endpoint (ECS, ministack on the host)"] = (
        "fixed" if probe.get("credentials") is True else f"bug: {probe}"
    )
    cfn.delete_stack(StackName=name)
    for what, verdict in results.items():
        print(f"{what}: {verdict}")
    return 0 if all(v == "fixed" for v in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
