"""The brief, `get_task` over MCP and `taskgate task show` say what the board shows about a verdict's base: which base
it holds for, that it is stale and where the base branch is now, each run's base (a
re-verification marked), and a conflict's branch, tip and paths. A real `taskgate serve`, real
git, `taskgate verify` and the CLI as real subprocesses, the agent over MCP."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run
from tests.support.conf_project import USE, USE_PY, USES
from tests.verifier.support import TASKGATE, Gate, Repo, git, pytest_config

CONF = "LIMIT = 10\n"
CONF_TEST = "import conf\n\n\ndef test_limit():\n    assert conf.LIMIT == 10\n"


def _gate(live: Live, tmp_path: Path) -> Gate:
    repo = Repo.create(
        tmp_path / "repo", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    return Gate.create(live, repo, pytest_config())


def _show(live: Live, tid: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": live.base, "TASKGATE_TOKEN": live.admin_token}
    done = subprocess.run(
        [TASKGATE, "task", "show", tid], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _brief(gate: Gate, tid: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            return dict((await a.ok("get_task_brief", task_id=tid))["brief"])

    return run(go())


def _get_task(gate: Gate, tid: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            return dict((await a.ok("get_task", task_id=tid))["task"])

    return run(go())


def _on_branch(repo: Repo, name: str, start: str, files: dict[str, str]) -> str:
    git(repo.path, "checkout", "--quiet", "-b", name, start)
    sha = repo.commit(files, name)
    git(repo.path, "checkout", "--quiet", "main")
    return sha


def test_a_stale_verdict_is_said_in_the_brief_and_task_show(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    repo = gate.repo
    tip0 = git(repo.path, "rev-parse", "HEAD")
    tid = gate.task([USE])
    gate.submit(tid, _on_branch(repo, "use", tip0, {"use.py": USE_PY, "test_use.py": USES}))
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"]
    checks = _brief(gate, tid)["verifier_checks"]
    assert checks["verified_on"] == f"the commit merged onto main at {tip0[:12]}"
    assert "stale" not in checks
    seen = _get_task(gate, tid)
    assert (seen["verified_on"], seen["stale"]) == (f"the commit merged onto main at {tip0[:12]}", None)
    assert f"  verified on the commit merged onto main at {tip0[:12]}\n" in _show(live, tid)

    tip1 = repo.commit({"README": "hello\n"}, "docs")
    push = {"ref": "refs/heads/main", "after": tip1}
    moved = live.rest("POST", f"/api/verifier/projects/{gate.project}/base", push, token=gate.verifier_key)
    assert moved.status_code == 200 and moved.json()["stale"] == [tid], moved.text
    stale = f"stale: main is at {tip1[:12]} now; it is verified again on that tip"
    task = gate.detail(tid)["task"]
    assert (task["stale"], task["stale_note"]) == (True, stale)
    assert _brief(gate, tid)["verifier_checks"]["stale"] == stale
    assert _get_task(gate, tid)["stale"] == stale
    shown = _show(live, tid)
    assert f"  verified on the commit merged onto main at {tip0[:12]} ({stale})\n" in shown

    lines = gate.verify_json()
    assert [(x["task_id"], x["verdict"]) for x in lines] == [(tid, "passed")]
    assert "stale" not in _brief(gate, tid)["verifier_checks"]
    task = gate.detail(tid)["task"]
    assert (task["stale"], task["stale_note"]) == (False, None)
    seen = _get_task(gate, tid)
    assert (seen["verified_on"], seen["stale"]) == (f"the commit merged onto main at {tip1[:12]}", None)
    shown = _show(live, tid)
    assert "stale" not in shown.split("criteria")[0]
    run_ids = [r["id"] for r in gate.detail(tid)["runs"]]
    runs_said = [line for line in shown.splitlines() if line.startswith(tuple(f"  {r} " for r in run_ids))]
    assert len(runs_said) == 2, shown
    assert f"on the commit merged onto main at {tip0[:12]}" in runs_said[0]
    assert "re-verification" not in runs_said[0]
    assert f": passed re-verification on the commit merged onto main at {tip1[:12]}" in runs_said[1]


def test_task_show_names_a_conflicts_base_and_paths(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    repo = gate.repo
    fork = git(repo.path, "rev-parse", "HEAD")
    tid = gate.task([USE])
    tip = repo.commit({"conf.py": "LIMIT = 20\n"}, "main moves")
    sha = _on_branch(repo, "old", fork, {"conf.py": "LIMIT = 30\n", "use.py": USE_PY, "test_use.py": USES})
    gate.submit(tid, sha)
    assert [x["verdict"] for x in gate.verify_json()] == ["conflict"]
    shown = _show(live, tid)
    assert f" conflict with main at {tip[:12]} in conf.py" in shown, shown
