"""The verifier image, built and run for real (podman + runc), as the cloud runs it.

Not part of the suite (the file name is not test_*.py): scripts/container-check.sh runs it after
it, and CI runs that script. It makes the base image locally from Debian's packages (cached by
podman between runs on a machine), builds verifier_container/Dockerfile as written on that base,
builds the derived node image (verifier_container/Dockerfile.node), lints both, and runs the
containers the way template.yaml's task definition runs them against a real `taskgate serve` on
this machine, each cloning a real repository by URL from a `git daemon` on 127.0.0.1 (the
shallow fetch of a remote, as in the cloud). Every phase prints how long it took.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from taskgate.cloud.ecs import project_command, task_command
from tests.container.engine import ROOT, Podman, Ran, TaskDefinition, Timings, run_as_ecs, verifier_base
from tests.mcp.live import Live, serving
from tests.support.server import free_port
from tests.verifier.support import Gate, Repo

pytestmark = pytest.mark.timeout(1800)
DOCKERFILE = ROOT / "verifier_container" / "Dockerfile"
NODE_DOCKERFILE = ROOT / "verifier_container" / "Dockerfile.node"
VERIFIER_TAG = "localhost/taskgate-verifier:check"
NODE_TAG = "localhost/taskgate-verifier:check-node"
HADOLINT = Path(sys.executable).with_name("hadolint")
_n = itertools.count(1)

# A Python project in the image's own terms (Python and git only): its check writes a JSON
# report and exits as its tests did.
CHECK_PY = """\
import json, os, sys, unittest

os.makedirs("reports", exist_ok=True)
suite = unittest.defaultTestLoader.discover(".", pattern="test_*.py")
tests = []


class Record(unittest.TextTestResult):
    def addSuccess(self, test):
        super().addSuccess(test)
        tests.append({"id": test.id(), "status": "passed"})

    def addFailure(self, test, err):
        super().addFailure(test, err)
        tests.append({"id": test.id(), "status": "failed", "message": str(err[1])})

    def addError(self, test, err):
        super().addError(test, err)
        tests.append({"id": test.id(), "status": "failed", "message": str(err[1])})


ok = unittest.TextTestRunner(resultclass=Record, verbosity=2).run(suite).wasSuccessful()
json.dump({"tests": tests}, open("reports/results.json", "w"))
sys.exit(0 if ok else 1)
"""
SLUG_PY = (
    'import re\n\n\ndef slugify(text):\n    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")\n'
)
BROKEN_SLUG_PY = SLUG_PY.replace("a-z0-9", "a-z")
TEST_SLUG_PY = """\
import unittest

from slug import slugify


class TestSlugify(unittest.TestCase):
    def test_keeps_digits(self):
        self.assertEqual(slugify("Route 66"), "route-66")
"""
PY_CONFIG: dict[str, Any] = {
    "check_timeout_minutes": 2,
    "checks": {
        "unit": {"command": "python3 check.py", "report": {"path": "reports/results.json", "format": "json"}}
    },
}
PY_DIGITS = {
    "text": "digits are kept",
    "kind": "test",
    "verify_ref": "test_slug.TestSlugify.test_keeps_digits",
}

SLUG_TEST_JS = """\
const { describe, it } = require('node:test');
const assert = require('node:assert');
const slugify = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');
describe('slugify', () => {
  it('keeps digits', () => assert.strictEqual(slugify('Route 66'), 'route-66'));
});
"""
NODE_CHECKS: dict[str, Any] = {
    "unit": {
        "command": "mkdir -p reports && node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml",
        "report": {"path": "reports/junit.xml", "format": "junit"},
    }
}
# The test holds its own slugify: it passes before the change too, so it is a guard, and a
# guard's test is the baseline's (one the submission adds is a spec error).
NODE_DIGITS = {
    "text": "digits are kept",
    "kind": "test",
    "verify_ref": "slugify > keeps digits",
    "guard": True,
}


@dataclass
class Images:
    base: str
    verifier: str
    node: str


# The task definition's table (a draining task's lease) and cache bucket: these runs verify one
# task each (`--task`) with no dependency cache configured, so neither is used; empty, as unset.
NO_DRAIN = {"TASKGATE_TABLE": "", "TASKGATE_CACHE_BUCKET": ""}


@pytest.fixture(scope="module")
def timings() -> Iterator[Timings]:
    began = time.monotonic()
    t = Timings([])
    yield t
    t.add("the whole container check", time.monotonic() - began)


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Podman:
    found = subprocess.run(["podman", "--version"], capture_output=True, text=True, check=False)
    assert found.returncode == 0, "podman is missing: scripts/container-check.sh installs it (apt)"
    return Podman.configured(tmp_path_factory.mktemp("podman"))


@pytest.fixture(scope="module")
def images(podman: Podman, timings: Timings) -> Images:
    base, cached, seconds = verifier_base(podman)
    timings.add(f"base image {base} ({'cached' if cached else 'made with debootstrap'})", seconds)
    timings.add("verifier image built", podman.build(DOCKERFILE, ROOT, VERIFIER_TAG, BASE=base))
    timings.add(
        "node image built",
        podman.build(NODE_DOCKERFILE, NODE_DOCKERFILE.parent, NODE_TAG, VERIFIER=VERIFIER_TAG),
    )
    for tag in (base, VERIFIER_TAG, NODE_TAG):
        print(f"container check: {tag}: {podman.size(tag) / 1e6:.0f} MB", flush=True)
    return Images(base, VERIFIER_TAG, NODE_TAG)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-data"))


@dataclass
class Daemon:
    root: Path
    port: int

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """`git daemon` on 127.0.0.1 serving every repository under its root, read-only."""
    root = tmp_path_factory.mktemp("served")
    port = free_port()
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            f"--base-path={root}",
            "--export-all",
            "--reuseaddr",
            "--informative-errors",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(root),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"git daemon exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("git daemon did not listen within 20 s") from None
            time.sleep(0.05)
    try:
        yield Daemon(root, port)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _gate(live: Live, daemon: Daemon, files: dict[str, str], config: dict[str, Any]) -> Gate:
    """A project whose repository is a URL the container clones from (the git daemon)."""
    name = f"c{next(_n)}-{os.getpid()}"
    repo = Repo.create(daemon.root / name, files)
    repo.branch("work")  # submissions come from a branch: main stays their baseline
    live.ok("POST", "/api/projects", {"name": name, "repo": daemon.url(name)})
    agent_key, _ = live.key(f"exec-{name}", projects=[name])
    verifier_key, verifier_id = live.key(
        f"ci-{name}", kind="verifier", verifier_kind="local", projects=[name]
    )
    reviewer_key, _ = live.key(f"rev-{name}", kind="verifier", verifier_kind="reviewer", projects=[name])
    gate = Gate(live, name, repo, agent_key, verifier_key, verifier_id, reviewer_key)
    gate.configure(config)
    live.ok("PUT", f"/api/projects/{name}/verification", {"on": True})
    return gate


def _run(podman: Podman, gate: Gate, image: str, command: list[str], timings: Timings, what: str) -> Ran:
    """The container as ECS starts it: the server's URL and the image as the task definition's
    environment, the stack's secret document holding this project's verifier key."""
    ran = run_as_ecs(
        podman,
        image,
        command,
        values={"TASKGATE_SERVER": gate.live.base, "TASKGATE_VERIFIER_IMAGE": image, **NO_DRAIN},
        secret={"verifier_key": gate.verifier_key, "reviewer_key": "", "git_token": ""},
    )
    timings.add(f"{what} ({' '.join(command)})", ran.seconds)
    assert ran.leftovers == [], f"the container left {ran.leftovers} behind"
    return ran


def test_the_dockerfiles_pass_hadolint() -> None:
    for dockerfile in (DOCKERFILE, NODE_DOCKERFILE):
        done = subprocess.run([str(HADOLINT), str(dockerfile)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, (dockerfile, done.stdout + done.stderr)


def test_the_run_follows_the_task_definition_in_template_yaml() -> None:
    td = TaskDefinition.from_template()
    assert td.entry_point == ["taskgate"]
    assert set(td.secrets) == {"TASKGATE_VERIFIER_KEY", "TASKGATE_REVIEWER_KEY", "TASKGATE_GIT_TOKEN"}
    assert "TASKGATE_SERVER" in td.environment


def test_a_passing_and_a_failing_submission_end_verified_and_ready(
    podman: Podman, images: Images, live: Live, daemon: Daemon, timings: Timings
) -> None:
    gate = _gate(
        live,
        daemon,
        {
            "check.py": CHECK_PY,
            "slug.py": BROKEN_SLUG_PY,
            "test_slug.py": TEST_SLUG_PY,
            ".gitignore": "reports/\n",
        },
        PY_CONFIG,
    )
    passing, failing = gate.task([PY_DIGITS]), gate.task([PY_DIGITS])
    broken = gate.repo.commit({"NOTES": "slug keeps digits next\n"}, "notes only")
    gate.submit(passing, gate.repo.commit({"slug.py": SLUG_PY}, "keep digits"))
    gate.submit(failing, broken)  # not the branch's tip: fetched by its hash, shallow

    ran = _run(podman, gate, images.verifier, task_command(passing), timings, "dispatched run, passing")
    assert ran.done.returncode == 0, ran.output
    assert f"{passing}: passed -> verified" in ran.output, ran.output
    assert f"from {daemon.url(gate.project)}" in ran.output  # the checkout fetched the URL
    assert gate.detail(passing)["task"]["status"] == "verified"

    ran = _run(podman, gate, images.verifier, project_command(gate.project), timings, "nightly run, failing")
    assert ran.done.returncode == 0, ran.output
    assert f"{failing}: failed -> ready" in ran.output, ran.output
    task = gate.detail(failing)["task"]
    assert task["status"] == "ready" and task["attempts_used"] == 1
    [run] = gate.detail(failing)["runs"]
    [evidence] = run["evidence"].values()  # the second task's spec: AC-2.1
    assert evidence["result"] == "fail" and run["commit_sha"] == broken


def test_the_derived_node_image_verifies_a_node_test_repository(
    podman: Podman, images: Images, live: Live, daemon: Daemon, timings: Timings
) -> None:
    assert podman.user(images.node) == podman.user(images.verifier)  # the checks' user is unchanged
    gate = _gate(
        live,
        daemon,
        {"package.json": '{"name": "slug", "private": true}\n', "slug.test.js": SLUG_TEST_JS},
        {"checks": NODE_CHECKS, "image": images.node},
    )
    tid = gate.task([NODE_DIGITS])
    gate.submit(tid, gate.repo.commit({"README.md": "Slugs keep their digits.\n"}))
    ran = _run(podman, gate, images.node, task_command(tid), timings, "node image, dispatched run")
    assert ran.done.returncode == 0 and f"{tid}: passed -> verified" in ran.output, ran.output
    [run] = gate.detail(tid)["runs"]
    assert run["evidence"]["AC-1.1"]["source"] == {
        "check": "unit",
        "report": "reports/junit.xml",
        "ref": "slugify > keeps digits",
    }


def test_the_verifier_image_without_node_says_so_and_uses_no_attempt(
    podman: Podman, images: Images, live: Live, daemon: Daemon, timings: Timings
) -> None:
    gate = _gate(
        live, daemon, {"package.json": '{"name": "slug", "private": true}\n'}, {"checks": NODE_CHECKS}
    )
    tid = gate.task([NODE_DIGITS])
    gate.submit(tid, gate.repo.commit({"slug.test.js": SLUG_TEST_JS}))
    ran = _run(podman, gate, images.verifier, task_command(tid), timings, "verifier image, node check")
    assert ran.done.returncode == 0 and f"{tid}: error -> needs_verification" in ran.output, ran.output
    task = gate.detail(tid)["task"]
    assert task["status"] == "needs_verification" and task["attempts_used"] == 0
    [run] = gate.detail(tid)["runs"]
    assert run["summary"].startswith("the verifier's image has no `node`: check unit"), run["summary"]


# The hostile check (the verifier's keys never reach the code it
# runs): the executor's own code, run as the check, looks for anything shaped like a taskgate key
# or the git token in every process's environment and command line and in every file it can
# read. It records where it found one and the sha256 of what it found (never the value itself,
# which would then travel in the report), and ends passed only when it found nothing.
HOSTILE_PY = r"""
import hashlib, json, os, re, stat, sys

KEY = re.compile(rb"tgv_[0-9a-f]{12}_[A-Za-z0-9_-]{32}|tggit_[0-9a-f]{32}")
found, scanned = [], {"environ": 0, "cmdline": 0, "files": 0}


def look(where, data):
    for m in set(KEY.findall(data)):
        found.append({"where": where, "sha256": hashlib.sha256(m).hexdigest()})


for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    for part in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{part}", "rb") as f:
                look(f"/proc/{pid}/{part}", f.read())
            scanned[part] += 1
        except OSError:
            pass
for top, dirs, files in os.walk("/", followlinks=False):
    if top == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for name in files:
        path = os.path.join(top, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > 64 * 1024 * 1024:
                continue
            with open(path, "rb") as f:
                look(path, f.read())
            scanned["files"] += 1
        except OSError:
            pass
os.makedirs("reports", exist_ok=True)
message = json.dumps({"found": found, "scanned": scanned})
status = "failed" if found else "passed"
json.dump({"tests": [{"id": "hostile.finds_no_key", "status": status, "message": message}]}, open("reports/results.json", "w"))
print(message)
sys.exit(1 if found else 0)
"""


def test_a_hostile_check_in_the_container_finds_no_key_anywhere_it_can_read(
    podman: Podman, images: Images, live: Live, daemon: Daemon, timings: Timings
) -> None:
    import hashlib

    config = {
        "check_timeout_minutes": 5,
        "checks": {
            "scan": {
                "command": "python3 hostile.py",
                "report": {"path": "reports/results.json", "format": "json"},
            }
        },
    }
    # The check runs hostile.py by path: it is the harness, so the grading run takes the
    # baseline's. It is there from the start; the submission changes something else.
    gate = _gate(live, daemon, {"README": "scan\n", "hostile.py": HOSTILE_PY}, config)
    tid = gate.task([{"text": "no key readable", "kind": "test", "verify_ref": "hostile.finds_no_key"}])
    gate.submit(tid, gate.repo.commit({"README": "scan again\n"}))
    git_token = "tggit_" + hashlib.sha256(gate.project.encode()).hexdigest()[:32]
    ran = run_as_ecs(
        podman,
        images.verifier,
        task_command(tid),
        values={"TASKGATE_SERVER": gate.live.base, "TASKGATE_VERIFIER_IMAGE": images.verifier, **NO_DRAIN},
        secret={"verifier_key": gate.verifier_key, "reviewer_key": gate.reviewer_key, "git_token": git_token},
    )
    timings.add("hostile check", ran.seconds)
    assert ran.leftovers == []
    [run] = gate.detail(tid)["runs"]
    # What it found, as it printed it (the check's output tail, as the server keeps it).
    report = json.loads(run["checks"]["scan"]["output_tail"].strip().splitlines()[-1])
    keys = {
        hashlib.sha256(k.encode()).hexdigest(): n
        for n, k in (
            ("verifier key", gate.verifier_key),
            ("reviewer key", gate.reviewer_key),
            ("git token", git_token),
        )
    }
    leaked = [(f["where"], keys.get(f["sha256"], "another key")) for f in report["found"]]
    assert leaked == [], f"the check read {leaked}"
    # It really looked: every process it may see, and the image's files.
    assert report["scanned"]["environ"] >= 1 and report["scanned"]["files"] > 5000, report["scanned"]
    # Its report is the evidence the run earned: nothing readable, so the criterion passes.
    assert (run["status"], gate.detail(tid)["task"]["status"]) == ("passed", "verified"), ran.output
    assert [e["result"] for e in run["evidence"].values()] == ["pass"], run["evidence"]


def test_a_second_run_reuses_the_cached_base(podman: Podman, images: Images, timings: Timings) -> None:
    base, cached, seconds = verifier_base(podman)
    timings.add("base image again", seconds)
    assert (base, cached) == (images.base, True)
    assert seconds < 30
