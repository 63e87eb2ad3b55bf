"""Start the verifier container on Fargate: one `taskgate verify --task <id>` per dispatch.

Settings come from the stack (template.yaml sets them on the dispatcher):

  TASKGATE_ECS_CLUSTER          cluster name or ARN
  TASKGATE_ECS_TASK_DEFINITION  task definition ARN (the one revision the role may run)
  TASKGATE_ECS_CONTAINER        the container's name in it
  TASKGATE_ECS_SUBNETS          comma-separated subnet ids
  TASKGATE_ECS_SECURITY_GROUPS  comma-separated security group ids
  TASKGATE_ECS_PUBLIC_IP        ENABLED (public subnets, no NAT) or DISABLED

The container's entry point is `taskgate`; the command chooses what it verifies. Its keys and
the git token reach it from Secrets Manager through the task definition, never from here.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

STARTED_BY = "taskgate-dispatcher"


class LaunchFailed(RuntimeError):
    """ECS did not start the task (capacity, a bad setting): the dispatch is retried."""


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


@dataclass(frozen=True)
class EcsLauncher:
    client: Any
    cluster: str
    task_definition: str
    container: str
    subnets: tuple[str, ...]
    security_groups: tuple[str, ...]
    public_ip: str = "ENABLED"

    @classmethod
    def from_env(cls, client: Any | None = None) -> EcsLauncher:
        env = os.environ
        if client is None:
            import boto3

            client = boto3.client("ecs")
        return cls(
            client=client,
            cluster=env["TASKGATE_ECS_CLUSTER"],
            task_definition=env["TASKGATE_ECS_TASK_DEFINITION"],
            container=env.get("TASKGATE_ECS_CONTAINER", "verifier"),
            subnets=tuple(_csv(env["TASKGATE_ECS_SUBNETS"])),
            security_groups=tuple(_csv(env.get("TASKGATE_ECS_SECURITY_GROUPS", ""))),
            public_ip=env.get("TASKGATE_ECS_PUBLIC_IP", "ENABLED"),
        )

    def token(self, dispatch_id: str) -> str:
        """RunTask's idempotency token (<= 64 printable chars): the same dispatch in the same
        cluster always sends the same token, so ECS answers a repeated start with the task the
        first one started."""
        return hashlib.sha256(f"{self.cluster}|{dispatch_id}".encode()).hexdigest()

    def launch(self, dispatch_id: str, task_id: str) -> str:
        """Start `taskgate verify --task <task_id>`; the started task's ARN."""
        network: dict[str, Any] = {"subnets": list(self.subnets), "assignPublicIp": self.public_ip}
        if self.security_groups:
            network["securityGroups"] = list(self.security_groups)
        response = self.client.run_task(
            cluster=self.cluster,
            taskDefinition=self.task_definition,
            launchType="FARGATE",
            count=1,
            startedBy=STARTED_BY,
            clientToken=self.token(dispatch_id),
            networkConfiguration={"awsvpcConfiguration": network},
            overrides={
                "containerOverrides": [{"name": self.container, "command": ["verify", "--task", task_id]}]
            },
        )
        tasks = response.get("tasks") or []
        if not tasks:
            reasons = "; ".join(
                f"{f.get('arn', '')} {f.get('reason', '')} {f.get('detail', '')}".strip()
                for f in response.get("failures") or []
            )
            raise LaunchFailed(f"ECS started no task for {task_id}: {reasons or 'no reason given'}")
        return str(tasks[0]["taskArn"])
