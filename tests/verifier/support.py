"""End to end: a real `taskgate serve`, real git repositories, an agent over MCP (the SDK's
Client), a human over REST, and `taskgate verify` as a real subprocess running real checks."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run
from tests.support.users import check_python

TASKGATE = str(Path(sys.executable).with_name("taskgate"))
PYTHON = check_python()  # the checks' Python: when the suite runs as root, they run as another user
_n = itertools.count(1)


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


# Two commits whose ids share their first 7 hex digits: git's empty tree, a fixed author and
# date, and the messages below (found by hashing "m0", "m1", ... until two ids met; git writes
# the same objects on every machine).
AMBIGUOUS_PREFIX = "7174d7d"
_AMBIGUOUS_MESSAGES = ("m15700", "m19388")


def ambiguous_commits(repo: Path) -> tuple[str, str]:
    """Write the two commits into `repo` (unreferenced objects) and return their ids."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@b",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@b",
        "GIT_AUTHOR_DATE": "1700000000 +0000",
        "GIT_COMMITTER_DATE": "1700000000 +0000",
    }
    tree = git(repo, "hash-object", "-t", "tree", "-w", "/dev/null")
    made = [
        subprocess.run(
            ["git", "commit-tree", tree, "-m", m],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for m in _AMBIGUOUS_MESSAGES
    ]
    assert all(c.startswith(AMBIGUOUS_PREFIX) for c in made), made
    assert made[0][len(AMBIGUOUS_PREFIX)] != made[1][len(AMBIGUOUS_PREFIX)], (
        made
    )  # one digit more tells them apart
    return made[0], made[1]


@dataclass
class Repo:
    path: Path

    @classmethod
    def create(cls, path: Path, files: dict[str, str]) -> Repo:
        path.mkdir(parents=True)
        git(path, "init", "--quiet", "--initial-branch=main")
        repo = cls(path)
        repo.commit(files, "base")
        return repo

    def write(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(text))

    def commit(self, files: dict[str, str], message: str = "change") -> str:
        self.write(files)
        git(self.path, "add", "-A")
        git(self.path, "commit", "--quiet", "-m", message)
        return git(self.path, "rev-parse", "HEAD")

    def branch(self, name: str) -> None:
        git(self.path, "checkout", "--quiet", "-b", name)


@dataclass
class Gate:
    """One project on the shared server, with an executor agent, a local verifier key and a
    reviewer key, and the human (admin token) who configures it."""

    live: Live
    project: str
    repo: Repo
    agent_key: str
    verifier_key: str
    verifier_key_id: str
    reviewer_key: str
    tasks: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, live: Live, repo: Repo, config: dict[str, Any], *, url: str | None = None) -> Gate:
        """`url`: the project's repository as the verifier reaches it (default: repo's path)."""
        project = f"v{next(_n)}-{os.getpid()}"
        live.ok("POST", "/api/projects", {"name": project, "repo": url or str(repo.path)})
        agent_key, _ = live.key(f"exec-{project}", projects=[project])
        verifier_key, verifier_id = live.key(
            f"ci-{project}", kind="verifier", verifier_kind="local", projects=[project]
        )
        reviewer_key, _ = live.key(
            f"rev-{project}", kind="verifier", verifier_kind="reviewer", projects=[project]
        )
        gate = cls(live, project, repo, agent_key, verifier_key, verifier_id, reviewer_key)
        gate.configure(config)
        live.ok("PUT", f"/api/projects/{project}/verification", {"on": True})
        return gate

    def configure(self, config: dict[str, Any]) -> None:
        self.live.ok("PUT", f"/api/projects/{self.project}/verifier-config", config)

    def spec(self, criteria: list[dict[str, Any]], *, risk: str = "low", approve: bool = True) -> str:
        spec = self.live.ok(
            "POST",
            f"/api/projects/{self.project}/specs",
            {"title": "Slugs", "body": "Titles become URL slugs.", "risk": risk, "criteria": criteria},
        )
        if approve:
            self.live.ok("POST", f"/api/projects/{self.project}/specs/{spec['id']}/approve")
        return str(spec["id"])

    def task(self, criteria: list[dict[str, Any]], *, risk: str = "low") -> str:
        """A ready task holding an approved spec's criteria."""
        spec_id = self.spec(criteria, risk=risk)
        out = self.live.ok(
            "POST", f"/api/projects/{self.project}/tasks", {"title": "Add slugify", "spec_id": spec_id}
        )
        assert out["task"]["status"] == "ready", out
        self.tasks.append(out["task"]["id"])
        return str(out["task"]["id"])

    def submit(self, task_id: str, sha: str, self_report: dict[str, str] | None = None) -> dict[str, Any]:
        """The executor claims the task and submits `sha`, over MCP."""

        async def go() -> dict[str, Any]:
            async with agent(self.live.mcp_url, self.agent_key, MODERN) as a:
                claimed = await a.ok("claim_task", project=self.project, task_id=task_id)
                args: dict[str, Any] = {
                    "task_id": task_id,
                    "claim_token": claimed["claim_token"],
                    "commit_sha": sha,
                    "evidence": "implemented; tests pass locally",
                }
                if self_report:
                    args["self_report"] = self_report
                return await a.ok("submit_task", **args)

        return run(go())

    def brief_after_claim(self, task_id: str) -> dict[str, Any]:
        async def go() -> dict[str, Any]:
            async with agent(self.live.mcp_url, self.agent_key, MODERN) as a:
                claimed = await a.ok("claim_task", project=self.project, task_id=task_id)
                return dict(claimed["brief"])

        return run(go())

    def detail(self, task_id: str) -> dict[str, Any]:
        out: dict[str, Any] = self.live.ok("GET", f"/api/tasks/{task_id}")
        return out

    def verify_env(self, *, reviewer: bool = True) -> dict[str, str]:
        """The environment `taskgate verify` runs with: this project's server and keys."""
        base = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
        base |= {"TASKGATE_SERVER": self.live.base, "TASKGATE_VERIFIER_KEY": self.verifier_key}
        if reviewer:
            base["TASKGATE_REVIEWER_KEY"] = self.reviewer_key
        return base

    def verify(
        self, *args: str, reviewer: bool = True, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """`taskgate verify` in its own process, as a person or a service would run it."""
        return subprocess.run(
            [TASKGATE, "verify", *(args or ("--once", "--project", self.project, "--json"))],
            env=self.verify_env(reviewer=reviewer) | (env or {}),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def verify_json(self, **kw: Any) -> list[dict[str, Any]]:
        done = self.verify(**kw)
        assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


# -- small projects whose checks really run ---------------------------------------------------

SLUGIFY = """\
import re


def slugify(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
"""

SLUGIFY_TESTS = """\
import pytest

from slug import slugify


class TestSlugify:
    def test_keeps_digits(self):
        assert slugify("Route 66") == "route-66"

    def test_lowercases(self):
        assert slugify("Hello World") == "hello-world"


def test_empty():
    assert slugify("") == ""
"""

BROKEN = SLUGIFY.replace("a-z0-9", "a-z")  # drops digits: test_keeps_digits fails
# A test criterion on the tests above, by its full name.
KEEPS_DIGITS = {
    "text": "digits are kept",
    "kind": "test",
    "verify_ref": "test_slug.TestSlugify.test_keeps_digits",
}

PYTEST_CHECK = {
    # Plugin autoload off: this venv's test plugins would make a one-second run take eight.
    "command": f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PYTHON} -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml",
    "report": {"path": "reports/junit.xml", "format": "junit"},
}


def pytest_runner() -> str:
    """The runner line (domain/runners.py) pytest's header gives for the checks' Python."""
    code = (
        "import platform, pytest, pluggy; "
        "print(f'pytest {pytest.__version__} (Python {platform.python_version()}, pluggy {pluggy.__version__})')"
    )
    return subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def pytest_config(**extra: Any) -> dict[str, Any]:
    return {"check_timeout_minutes": 2, "checks": {"unit": PYTEST_CHECK}, **extra}
