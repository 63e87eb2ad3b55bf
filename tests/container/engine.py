"""Podman as these machines run it, and the verifier container run as ECS runs it.

Facts measured here (root without CAP_SYS_RESOURCE, hybrid cgroups): crun refuses hybrid
cgroups, so `runc`; systemd cannot manage the cgroups, so `cgroupfs`; raising a limit is
refused, so no default ulimits and explicit ones at today's values on `build` and `run`. No
registry is reachable: the base image is made locally (scripts/verifier-base.sh). pip in a build
reaches the package index only with this machine's CA bundle, mounted read-only.

The container is started the way template.yaml's task definition starts it: its entry point,
the command the dispatcher or the nightly run puts in the override (taskgate.cloud.ecs), and
the environment and secret names the task definition declares, read from the template when the
check runs. Values are passed to podman by name only (`--env NAME`, the value in podman's own
environment), never on a command line `ps` shows.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.functions.stack import resource

ROOT = Path(__file__).resolve().parents[2]
CONF = """\
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"

[containers]
default_ulimits = []
"""
ULIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
LABEL = "taskgate.container-check"


@dataclass
class Podman:
    conf: Path

    @classmethod
    def configured(cls, directory: Path) -> Podman:
        directory.mkdir(parents=True, exist_ok=True)
        conf = directory / "containers.conf"
        conf.write_text(CONF)
        return cls(conf)

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, "CONTAINERS_CONF": str(self.conf), **(extra or {})}

    def __call__(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 1200, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["podman", *args], env=self.env(env), capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"podman {' '.join(args[:3])} exited {done.returncode}: {done.stderr[-3000:]}"
            )
        return done

    def build(self, dockerfile: Path, context: Path, tag: str, **build_args: str) -> float:
        """Seconds it took. Host networking and this machine's CA bundle, so apt and pip reach
        their archives; the layer cache makes an unchanged rebuild quick."""
        began = time.monotonic()
        args = ["build", "--runtime", "runc", *ULIMITS, "--network", "host"]
        args += ["-v", f"{CA_BUNDLE}:{CA_BUNDLE}:ro", "--label", f"{LABEL}=1"]
        ignore = dockerfile.with_name(dockerfile.name + ".dockerignore")
        if ignore.exists():  # BuildKit's per-Dockerfile ignore file; this podman needs it named
            args += ["--ignorefile", str(ignore)]
        for k, v in build_args.items():
            args += ["--build-arg", f"{k}={v}"]
        self(*args, "-f", str(dockerfile), "-t", tag, str(context))
        return time.monotonic() - began

    def size(self, image: str) -> int:
        return int(self("image", "inspect", "--format", "{{.Size}}", image).stdout.strip())

    def user(self, image: str) -> str:
        return self("image", "inspect", "--format", "{{.Config.User}}", image).stdout.strip()

    def leftovers(self, run_label: str) -> list[str]:
        out = self("ps", "--all", "--quiet", "--filter", f"label={LABEL}.run={run_label}").stdout
        return out.split()


def verifier_base(podman: Podman) -> tuple[str, bool, float]:
    """The local base image (scripts/verifier-base.sh): its name, whether it was cached, seconds."""
    began = time.monotonic()
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "verifier-base.sh")],
        env=podman.env(),
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip(), "is cached" in done.stderr, time.monotonic() - began


# -- the task definition, read from template.yaml when the check runs --------------------------


# The container definition's fields this check turns into podman's arguments, and the ones that
# do not change how the container runs here (logs go to CloudWatch, the image is the one built).
# A field outside both fails the check: it must learn to run the container that way too.
_UNDERSTOOD = {
    "Name",
    "Image",
    "Essential",
    "EntryPoint",
    "Command",
    "Environment",
    "Secrets",
    "User",
    "LinuxParameters",
    "ReadonlyRootFilesystem",
}
_NOT_HERE = {"LogConfiguration"}


@dataclass(frozen=True)
class TaskDefinition:
    entry_point: list[str]
    environment: list[str]  # names of plain values
    secrets: dict[str, str]  # variable name -> the key of the stack's JSON secret it comes from
    secret_keys: set[str]  # the keys the stack's secret holds
    run_args: list[str]  # User, capabilities, a read-only root, as podman arguments

    @classmethod
    def from_template(cls) -> TaskDefinition:
        [container] = resource("VerifierTaskDefinition")["Properties"]["ContainerDefinitions"]
        unknown = set(container) - _UNDERSTOOD - _NOT_HERE
        assert not unknown, f"the container check does not know how ECS runs {sorted(unknown)}"
        args: list[str] = []
        if "User" in container:
            args += ["--user", str(container["User"])]
        linux = dict(container.get("LinuxParameters") or {})
        caps = dict(linux.pop("Capabilities", None) or {})
        assert not linux and set(caps) <= {"Add", "Drop"}, f"LinuxParameters {linux} {caps} not understood"
        args += [a for c in caps.get("Drop", []) for a in ("--cap-drop", str(c))]
        args += [a for c in caps.get("Add", []) for a in ("--cap-add", str(c))]
        if container.get("ReadonlyRootFilesystem"):
            args += ["--read-only"]
        secrets_: dict[str, str] = {}
        for s in container["Secrets"]:
            value_from = s["ValueFrom"]["Fn::Sub"] if isinstance(s["ValueFrom"], dict) else s["ValueFrom"]
            m = re.fullmatch(r"\$\{VerifierSecret\.Id\}:([A-Za-z0-9_]+)::", value_from)
            assert m, f"secret {s['Name']} comes from {value_from}, not a key of the stack's secret"
            secrets_[s["Name"]] = m.group(1)
        stored = json.loads(resource("VerifierSecret")["Properties"]["SecretString"])
        return cls(
            entry_point=list(container["EntryPoint"]),
            environment=[e["Name"] for e in container["Environment"]],
            secrets=secrets_,
            secret_keys=set(stored),
            run_args=args,
        )


@dataclass
class Ran:
    done: subprocess.CompletedProcess[str]
    seconds: float
    leftovers: list[str]

    @property
    def output(self) -> str:
        return self.done.stdout + self.done.stderr


def run_as_ecs(
    podman: Podman,
    image: str,
    command: list[str],
    *,
    values: dict[str, str],
    secret: dict[str, str],
    timeout: float = 300,
) -> Ran:
    """Run `image` as the task definition does: its entry point, `command` as the override,
    each environment variable it declares (its value from `values`: one the check does not know
    fails it), each secret from the stack's JSON secret document `secret`. Host networking, so
    127.0.0.1 is this machine's (the server, the git daemon)."""
    td = TaskDefinition.from_template()
    assert set(secret) == td.secret_keys, (set(secret), td.secret_keys)
    unknown = [n for n in td.environment if n not in values]
    assert not unknown, f"the task definition sets {unknown}; the container check has no value for it"
    env = {n: values[n] for n in td.environment} | {n: secret[k] for n, k in td.secrets.items()}
    run_label = secrets.token_hex(6)
    args = ["run", "--rm", "--runtime", "runc", *ULIMITS, "--network", "host"]
    args += ["--name", f"taskgate-check-{run_label}", "--label", f"{LABEL}.run={run_label}"]
    args += [*td.run_args, "--entrypoint", json.dumps(td.entry_point)]
    for name in env:
        args += ["--env", name]
    began = time.monotonic()
    done = podman(*args, image, *command, env=env, timeout=timeout, check=False)
    return Ran(done, time.monotonic() - began, podman.leftovers(run_label))


@dataclass
class Timings:
    lines: list[tuple[str, float]]

    def add(self, what: str, seconds: float) -> None:
        self.lines.append((what, seconds))
        print(f"container check: {what}: {seconds:.1f} s", flush=True)


def describe(data: Any) -> str:
    return json.dumps(data, indent=1, sort_keys=True)[:4000]
