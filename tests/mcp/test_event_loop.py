"""No tool call stalls the others: on a real `taskgate serve` whose `git` answers slowly (a
script first on the server's PATH that sleeps, then runs the real git), one agent's submit_task
waits on git while another agent's calls go through.

A tool body that ran on the server's event loop would hold every other request until its
subprocesses returned; this measures that the other agent's calls finish while the submit is
still in flight."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.events import VERSIONS
from tests.mcp.live import Live, agent, run, serving

GIT_DELAY_S = 2.0


def _repository(root: Path) -> tuple[Path, str]:
    """A real repository with one commit: (its path, the commit's id)."""
    repo = root / "repo"
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@x"
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    (repo / "f.txt").write_text("work\n")
    subprocess.run(["git", "-C", str(repo), "add", "f.txt"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "--quiet", "-m", "work"], check=True, env=env)
    sha = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    return repo, sha


def _slow_git(root: Path) -> Path:
    """A directory holding `git`: sleeps GIT_DELAY_S, then runs the real one."""
    real = shutil.which("git")
    assert real is not None
    shim = root / "slow-bin"
    shim.mkdir()
    script = shim / "git"
    script.write_text(f'#!/bin/sh\nsleep {GIT_DELAY_S}\nexec {real} "$@"\n')
    script.chmod(0o755)
    return shim


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Live, Path, str]]:
    root = tmp_path_factory.mktemp("slow-git")
    repo, sha = _repository(root)
    path = f"{_slow_git(root)}{os.pathsep}{os.environ.get('PATH', '')}"
    for live in serving(root / "data", env={"PATH": path}):
        yield live, repo, sha


@pytest.mark.parametrize("version", VERSIONS)
def test_a_submit_waiting_on_git_holds_up_no_other_agent(slow: tuple[Live, Path, str], version: str) -> None:
    live, repo, sha = slow
    project = f"slow{version.replace('-', '')}"
    live.ok("POST", "/api/projects", {"name": project, "repo": str(repo)})
    for title in ("first", "second"):
        live.ok(
            "POST", f"/api/projects/{project}/tasks", {"title": title, "criteria": [{"text": "it works"}]}
        )
    slow_key, _ = live.key(f"submitter-{version}", projects=[project])
    other_key, _ = live.key(f"other-{version}", projects=[project])

    async def both() -> tuple[float, list[float], dict[str, object]]:
        async with agent(live.mcp_url, slow_key, version) as a, agent(live.mcp_url, other_key, version) as b:
            mine = await a.ok("claim_task", project=project)
            theirs = await b.ok("claim_task", project=project)
            tid, token = mine["task_id"], mine["claim_token"]
            other_tid, other_token = theirs["task_id"], theirs["claim_token"]
            start = time.monotonic()

            async def submit() -> dict[str, object]:
                return await a.ok(
                    "submit_task", task_id=tid, claim_token=token, commit_sha=sha, evidence="done"
                )

            submitting = asyncio.create_task(submit())
            await asyncio.sleep(0.3)  # the submit is in the server, waiting on git
            others: list[float] = []
            for _ in range(3):
                await b.ok("heartbeat", task_id=other_tid, claim_token=other_token)
                await b.ok("get_task", task_id=other_tid)
                others.append(time.monotonic() - start)
            submitted = await submitting
            return time.monotonic() - start, others, submitted

    submit_took, others, submitted = run(both())
    # The submit did ask git (it waited at least one slow call) and was accepted.
    assert submit_took >= GIT_DELAY_S
    assert submitted["task"]["status"] == "needs_verification"  # type: ignore[index]
    # Every call of the other agent finished while the submit was still waiting on git.
    assert others[-1] < GIT_DELAY_S, (others, submit_took)
