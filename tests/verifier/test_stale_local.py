"""Stale verdicts with no verifier running: `main` of the project's local
repository moves by a plain git commit, nobody calls the push webhook and `taskgate verify` has
exited; `taskgate serve` reads the tip itself. The task detail and `taskgate task show` say the
verdict is stale, and `taskgate task accept` warns before the person confirms and after. A real
`taskgate serve` on a real SQLite file, real git, `taskgate verify --once` and the CLI as real
subprocesses, the person at a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.mcp.live import Live
from tests.support.conf_project import USE, USE_PY, USES
from tests.support.terminal import at_terminal, no_terminal
from tests.verifier.support import TASKGATE, Gate, Repo, git, pytest_config

CONF = "LIMIT = 10\n"
CONF_TEST = "import conf\n\n\ndef test_limit():\n    assert conf.LIMIT == 10\n"


def _verified(live: Live, tmp_path: Path) -> tuple[Gate, str, str]:
    """A task verified on main's tip by one `taskgate verify --once`, which has exited since."""
    repo = Repo.create(
        tmp_path / "repo", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    gate = Gate.create(live, repo, pytest_config())
    tip0 = git(repo.path, "rev-parse", "HEAD")
    tid = gate.task([USE])
    git(repo.path, "checkout", "--quiet", "-b", "use")
    sha = repo.commit({"use.py": USE_PY, "test_use.py": USES}, "use")
    git(repo.path, "checkout", "--quiet", "main")
    gate.submit(tid, sha)
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"]
    task = gate.detail(tid)["task"]
    assert (task["status"], task["stale"]) == ("verified", False)
    assert task["verified_on"] == f"the commit merged onto main at {tip0[:12]}"
    return gate, tid, tip0


def _env(live: Live, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    return {**env, "TASKGATE_SERVER": live.base, "TASKGATE_TOKEN": live.admin_token, **extra}


def _show(live: Live, tid: str) -> str:
    done = subprocess.run(
        [TASKGATE, "task", "show", tid], env=_env(live), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_git_commit_on_main_makes_the_card_stale_and_the_accept_warns(live: Live, tmp_path: Path) -> None:
    gate, tid, tip0 = _verified(live, tmp_path)
    # On main; no webhook, no verifier. Read a moment ago on tip0: the ref's files changed since.
    tip1 = gate.repo.commit({"README": "hello\n"}, "docs")
    stale = f"stale: main is at {tip1[:12]} now; it is verified again on that tip"
    task = gate.detail(tid)["task"]
    assert (task["stale"], task["stale_note"]) == (True, stale)
    assert f"  verified on the commit merged onto main at {tip0[:12]} ({stale})\n" in _show(live, tid)
    [moved] = [
        e
        for e in live.ok("GET", f"/api/projects/{gate.project}/history")["items"]
        if e["action"] == "base_moved"
    ][:1]
    assert (moved["actor"], moved["detail"]["tip"], moved["detail"]["previous"]) == (
        "system:taskgate",
        tip1,
        tip0,
    )

    # The person at the terminal reads the warning before typing the id, and again after.
    said = (
        f"{tid} was verified on the commit merged onto main at {tip0[:12]}, and main is at {tip1[:12]} now: "
        "its verdict is stale"
    )
    r = at_terminal([TASKGATE, "task", "accept", tid], _env(live), answer=tid)
    assert r.returncode == 0, (r.stdout, r.stderr, r.terminal)
    asked = r.terminal.split("to confirm")[0]
    assert (
        f"warning: its verdict is stale ({stale}): it was verified on the commit merged onto main at {tip0[:12]}"
        in asked
    ), r.terminal
    assert r.stdout.splitlines() == [f"{tid} is done", f"warning: {said}"]
    detail = gate.detail(tid)
    assert detail["task"]["status"] == "done"
    [accepted] = [e for e in detail["history"] if e["action"] == "accept"]
    assert accepted["detail"]["stale"] is True


def test_an_accept_right_after_the_commit_reads_the_tip_afresh(live: Live, tmp_path: Path) -> None:
    """Right after the commit, with nothing shown since: the accept reads the tip itself."""
    gate, tid, tip0 = _verified(live, tmp_path)
    assert gate.detail(tid)["task"]["stale"] is False  # a read of tip0 just now
    tip1 = gate.repo.commit({"README": "hello\n"}, "docs")
    r = no_terminal([TASKGATE, "task", "accept", tid, "--yes", "--json"], _env(live))
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["status"] == "done"
    assert out["warnings"] == [
        f"{tid} was verified on the commit merged onto main at {tip0[:12]}, and main is at {tip1[:12]} now: "
        "its verdict is stale"
    ]


def test_a_project_that_accepts_only_fresh_verdicts_refuses_the_stale_accept(
    live: Live, tmp_path: Path
) -> None:
    gate, tid, _ = _verified(live, tmp_path)
    gate.configure(pytest_config(accept_stale=False))
    tip1 = gate.repo.commit({"README": "hello\n"}, "docs")
    r = no_terminal([TASKGATE, "task", "accept", tid, "--yes"], _env(live))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert (
        f"and main is at {tip1[:12]} now: its verdict is stale; this project accepts only after" in r.stderr
    )
    assert gate.detail(tid)["task"]["status"] == "verified"
