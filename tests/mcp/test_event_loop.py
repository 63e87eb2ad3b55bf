"""No tool call stalls the others: on a real `taskgate serve` whose `git` can be held (a script
first on the server's PATH that, while a hold file exists, says it was called and waits for the
hold to be lifted, then runs the real git), one agent's submit_task waits on git while another
agent's calls go through, answered while that git is still held.

A tool body that ran on the server's event loop would hold every other request until its
subprocesses returned: the other agent's calls would never finish while git is held."""

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

HELD_MAX_S = 120  # the script lets git run after this long held, whatever the test does


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


def _held_git(root: Path) -> Path:
    """A directory holding `git`: while `root/hold` exists, touches `root/called` and waits for
    the hold to go; then runs the real one."""
    real = shutil.which("git")
    assert real is not None
    shim = root / "held-bin"
    shim.mkdir()
    script = shim / "git"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ -e "{root}/hold" ]; then\n'
        f'  touch "{root}/called"\n'
        "  i=0\n"
        f'  while [ -e "{root}/hold" ] && [ $i -lt {HELD_MAX_S * 20} ]; do sleep 0.05; i=$((i+1)); done\n'
        "fi\n"
        f'exec {real} "$@"\n'
    )
    script.chmod(0o755)
    return shim


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Live, Path, str, Path]]:
    root = tmp_path_factory.mktemp("held-git")
    repo, sha = _repository(root)
    path = f"{_held_git(root)}{os.pathsep}{os.environ.get('PATH', '')}"
    for live in serving(root / "data", env={"PATH": path}):
        yield live, repo, sha, root


@pytest.mark.parametrize("version", VERSIONS)
def test_a_submit_waiting_on_git_holds_up_no_other_agent(
    slow: tuple[Live, Path, str, Path], version: str
) -> None:
    live, repo, sha, root = slow
    project = f"slow{version.replace('-', '')}"
    live.ok("POST", "/api/projects", {"name": project, "repo": str(repo)})
    for title in ("first", "second"):
        live.ok(
            "POST", f"/api/projects/{project}/tasks", {"title": title, "criteria": [{"text": "it works"}]}
        )
    slow_key, _ = live.key(f"submitter-{version}", projects=[project])
    other_key, _ = live.key(f"other-{version}", projects=[project])
    hold, called = root / "hold", root / "called"

    async def both() -> tuple[bool, dict[str, object]]:
        async with agent(live.mcp_url, slow_key, version) as a, agent(live.mcp_url, other_key, version) as b:
            mine = await a.ok("claim_task", project=project)
            theirs = await b.ok("claim_task", project=project)
            tid, token = mine["task_id"], mine["claim_token"]
            other_tid, other_token = theirs["task_id"], theirs["claim_token"]
            called.unlink(missing_ok=True)
            hold.touch()
            try:

                async def submit() -> dict[str, object]:
                    return await a.ok(
                        "submit_task", task_id=tid, claim_token=token, commit_sha=sha, evidence="done"
                    )

                submitting = asyncio.create_task(submit())
                deadline = time.monotonic() + 60
                while not called.exists():  # the submit is in the server, held in git
                    assert time.monotonic() < deadline and not submitting.done(), "the submit never ran git"
                    await asyncio.sleep(0.05)

                async def others() -> None:
                    await b.ok("heartbeat", task_id=other_tid, claim_token=other_token)
                    await b.ok("get_task", task_id=other_tid)

                # Had the submit's git held the event loop, these would wait for it to end: for
                # the hold to go, or for the server's git timeout (service/commits.TIMEOUT_S),
                # which also bounds how long the hold can last.
                await asyncio.wait_for(others(), timeout=60)
                held_throughout = not submitting.done()
            finally:
                hold.unlink(missing_ok=True)
            return held_throughout, await submitting

    held_throughout, submitted = run(both())
    # Every call of the other agent finished while the submit was still held in git ...
    assert held_throughout
    # ... and the submit, once git answered, was accepted.
    assert submitted["task"]["status"] == "needs_verification"  # type: ignore[index]
