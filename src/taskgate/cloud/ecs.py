"""Start the verifier container on Fargate: `taskgate verify --project <p> --drain`, which verifies
the project's waiting work until none is left and exits (service/dispatch.py decides when one
starts); and register the task definition revision of a project's verifier image
(service/images.py).

Settings come from the stack (template.yaml sets them on the dispatcher; the API function, which
registers revisions, gets the task definition and the container name):

  TASKGATE_ECS_CLUSTER          cluster name or ARN
  TASKGATE_ECS_TASK_DEFINITION  the stack's verifier task definition (ARN): what runs without an
                                image, and what a project's image revision copies
  TASKGATE_ECS_CONTAINER        the container's name in it
  TASKGATE_ECS_SUBNETS          comma-separated subnet ids
  TASKGATE_ECS_SECURITY_GROUPS  comma-separated security group ids
  TASKGATE_ECS_PUBLIC_IP        ENABLED (public subnets, no NAT) or DISABLED
  TASKGATE_ECS_CAPACITY_PROVIDER  FARGATE (default) or FARGATE_SPOT: the capacity provider the
                                task runs on (a Spot task stopped by AWS ends its run as an error,
                                which the rules retry like any other)
  TASKGATE_VERIFIER_CONCURRENCY draining tasks per project at once, unless its verifier config
                                says otherwise (default 2)
  TASKGATE_DRAIN_IDLE_S         how long a draining task waits for more work before it exits
  TASKGATE_VERIFIER_SERVER      the API's URL, passed to every task it starts as its
                                TASKGATE_SERVER (the stack's VerifierServerUrl, by default the
                                HTTP API's own URL)

The container's entry point is `taskgate` (the image's and the task definition's); the command
chooses what it verifies. Its keys and
the git token reach it from Secrets Manager through the task definition, never from here.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from taskgate.domain.verifier_config import IMAGE_VAR
from taskgate.service.dispatch import DEFAULT_CONCURRENCY, Lease
from taskgate.service.images import ImageRefused

STARTED_BY = "taskgate-dispatcher"
# The draining task's slot, passed in the container's environment (not a secret: a name).
LEASE_VAR = "TASKGATE_DRAIN_LEASE"
# Where the started task calls the API (the CLI's own variable).
SERVER_VAR = "TASKGATE_SERVER"
DRAIN_IDLE_S = 30.0
# Between looks at the queue while draining: a submission waits at most this long for a task
# that is already running (the API answers an empty queue in one cheap index read).
DRAIN_POLL_S = 2.0
# What DescribeTaskDefinition returns that RegisterTaskDefinition takes back: a revision of a
# project's image is the stack's own with only the image changed.
_REGISTERABLE = (
    "family",
    "taskRoleArn",
    "executionRoleArn",
    "networkMode",
    "containerDefinitions",
    "volumes",
    "placementConstraints",
    "requiresCompatibilities",
    "cpu",
    "memory",
    "pidMode",
    "ipcMode",
    "proxyConfiguration",
    "inferenceAccelerators",
    "ephemeralStorage",
    "runtimePlatform",
)


def task_command(task_id: str) -> list[str]:
    """The container's command for one submission (the entry point is `taskgate`): what a
    person runs by hand in the image; the dispatcher starts draining tasks."""
    return ["verify", "--task", task_id]


def project_command(project: str) -> list[str]:
    """The container's command for everything waiting in one project, once."""
    return ["verify", "--once", "--project", project]


def drain_command(project: str, idle_s: float = DRAIN_IDLE_S) -> list[str]:
    """The container's command for a task draining one project's queue."""
    return [
        "verify",
        "--project",
        project,
        "--drain",
        "--idle-exit",
        f"{idle_s:g}",
        "--interval",
        f"{DRAIN_POLL_S:g}",
    ]


def lease_value(lease: Lease) -> str:
    return json.dumps({"project": lease.project, "slot": lease.slot, "holder": lease.holder})


def lease_from_value(value: str) -> Lease:
    raw = json.loads(value)
    return Lease(project=str(raw["project"]), slot=int(raw["slot"]), holder=str(raw["holder"]))


def _repository(image: str) -> str:
    """An image reference without its tag or digest."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


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
    server: str
    public_ip: str = "ENABLED"
    capacity_provider: str = "FARGATE"
    concurrency: int = DEFAULT_CONCURRENCY
    idle_s: float = DRAIN_IDLE_S

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
            server=env["TASKGATE_VERIFIER_SERVER"],
            public_ip=env.get("TASKGATE_ECS_PUBLIC_IP", "ENABLED"),
            capacity_provider=env.get("TASKGATE_ECS_CAPACITY_PROVIDER") or "FARGATE",
            concurrency=int(env.get("TASKGATE_VERIFIER_CONCURRENCY") or DEFAULT_CONCURRENCY),
            idle_s=float(env.get("TASKGATE_DRAIN_IDLE_S") or DRAIN_IDLE_S),
        )

    def token(self, dispatch_id: str) -> str:
        """RunTask's idempotency token (<= 64 printable chars): the same dispatch in the same
        cluster always sends the same token, so ECS answers a repeated start with the task the
        first one started."""
        return hashlib.sha256(f"{self.cluster}|{dispatch_id}".encode()).hexdigest()

    def launch_drain(self, start_id: str, project: str, task_definition: str, lease: Lease) -> str:
        """Start a task draining `project`'s queue under `lease`; the started task's ARN."""
        return self._run(
            start_id,
            drain_command(project, self.idle_s),
            task_definition,
            f"project {project}",
            env={LEASE_VAR: lease_value(lease), SERVER_VAR: self.server},
        )

    def _run(
        self,
        start_id: str,
        command: list[str],
        task_definition: str | None,
        what: str,
        env: dict[str, str] | None = None,
    ) -> str:
        network: dict[str, Any] = {"subnets": list(self.subnets), "assignPublicIp": self.public_ip}
        if self.security_groups:
            network["securityGroups"] = list(self.security_groups)
        extra: dict[str, Any] = {}
        if env:
            extra["environment"] = [{"name": k, "value": v} for k, v in sorted(env.items())]
        response = self.client.run_task(
            cluster=self.cluster,
            taskDefinition=task_definition or self.task_definition,
            # A capacity provider strategy, not launchType (ECS takes one or the other), so a
            # stack can put its verifiers on Fargate Spot.
            capacityProviderStrategy=[{"capacityProvider": self.capacity_provider, "weight": 1}],
            count=1,
            startedBy=STARTED_BY,
            clientToken=self.token(start_id),
            networkConfiguration={"awsvpcConfiguration": network},
            overrides={"containerOverrides": [{"name": self.container, "command": command, **extra}]},
        )
        tasks = response.get("tasks") or []
        if not tasks:
            reasons = "; ".join(
                f"{f.get('arn', '')} {f.get('reason', '')} {f.get('detail', '')}".strip()
                for f in response.get("failures") or []
            )
            raise LaunchFailed(f"ECS started no task for {what}: {reasons or 'no reason given'}")
        return str(tasks[0]["taskArn"])


@dataclass
class EcsTaskDefinitions:
    """The registrar of service/images.py: a revision of the stack's verifier task definition
    with another image. The image must be in the stack's verifier repository, the only one the
    tasks' execution role may pull from."""

    base: str
    container: str = "verifier"
    client: Any = None
    _described: dict[str, Any] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_env(cls, client: Any | None = None) -> EcsTaskDefinitions:
        env = os.environ
        return cls(
            base=env["TASKGATE_ECS_TASK_DEFINITION"],
            container=env.get("TASKGATE_ECS_CONTAINER", "verifier"),
            client=client,
        )

    def _ecs(self) -> Any:
        if self.client is None:
            import boto3  # only a save that names an image pays for it

            self.client = boto3.client("ecs")
        return self.client

    def _base(self) -> dict[str, Any]:
        """The stack's task definition, read once per process (the revision never changes)."""
        with self._lock:
            if self._described is None:
                out = self._ecs().describe_task_definition(taskDefinition=self.base)
                self._described = dict(out["taskDefinition"])
            return self._described

    def register(self, image: str) -> str:
        base = self._base()
        params = {k: copy.deepcopy(base[k]) for k in _REGISTERABLE if k in base}
        [container] = [c for c in params["containerDefinitions"] if c["name"] == self.container]
        repository = _repository(str(container["image"]))
        if _repository(image) != repository:
            raise ImageRefused(
                f"it must be in the stack's verifier repository {repository} (the verifier tasks may "
                f"pull from there only): push it as {repository}:<tag> (docs/deploy.md)"
            )
        container["image"] = image
        env = [e for e in container.get("environment", []) if e["name"] != IMAGE_VAR]
        container["environment"] = [*env, {"name": IMAGE_VAR, "value": image}]
        from botocore.exceptions import ClientError

        try:
            out = self._ecs().register_task_definition(**params)
        except ClientError as exc:
            raise ImageRefused(f"ECS refused to register its task definition: {exc}") from exc
        return str(out["taskDefinition"]["taskDefinitionArn"])
