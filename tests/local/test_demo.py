"""`taskgate demo` end to end, as a person runs it: a real subprocess that starts its own
`taskgate serve`, makes a git repository, drives an agent over MCP and `taskgate verify`.
The verdicts are asserted from its JSON result and read back from the kept server over REST;
then `--clean` stops that server and removes everything."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgate.demo.tour import NO_WAIT
from tests.support.server import TASKGATE
from tests.support.users import shared_tmp


@pytest.fixture
def where() -> Iterator[Path]:
    # Started as root, the demo's verifier runs checks as an unprivileged user: the demo's
    # directory must sit where that user can reach it (pytest's tmp_path is 0700).
    yield from shared_tmp()


def demo(
    *args: str, timeout: float = 240, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")} | (env or {})
    return subprocess.run(
        [TASKGATE, "demo", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )


def get(url: str, token: str, path: str) -> dict[str, object]:
    import urllib.request

    req = urllib.request.Request(url + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        out: dict[str, object] = json.loads(resp.read())
        return out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def test_the_demo_verifies_one_task_fails_the_other_then_the_fix_passes(where: Path) -> None:
    root = where / "demo"
    try:
        done = demo("--dir", str(root), "--keep", "--json")
        assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
        result = json.loads(done.stdout)
        assert result["tasks"] == {"demo-1": "verified", "demo-2": "verified"}
        verdicts = [(r["task_id"], r["verdict"], r["task_status"]) for r in result["runs"]]
        assert verdicts == [
            ("demo-1", "passed", "verified"),
            ("demo-2", "failed", "ready"),
            ("demo-2", "passed", "verified"),
        ]
        failed = result["runs"][1]["criteria"]
        assert (failed["AC-1.2"]["result"], failed["AC-1.4"]["result"]) == ("fail", "fail")
        assert result["runs"][0]["criteria"]["AC-1.3"]["result"] == "pass"  # the command criterion ran
        # the broken attempt's findings reached the agent in its next brief: the failing test by name
        first, second, third = result["agent"]
        assert (first["brief_findings"], second["brief_findings"]) == ([], [])
        assert third["task_id"] == "demo-2" and third["commit_sha"] != second["commit_sha"]
        [seen] = third["brief_findings"]
        failed = {c["id"]: c for c in seen["criteria"]}
        assert set(failed) == {"AC-1.2", "AC-1.4"} and seen["attempt"] == 1
        assert failed["AC-1.2"]["tests"][0]["name"].endswith("test_cuts_at_word_boundary")

        # The kept server answers, and holds what the demo said: the broken attempt's findings name
        # the failing test, and the second attempt's brief carried them (a second attempt was made).
        token = (root / "data" / "admin-token").read_text().strip()
        pid = int((root / "serve.pid").read_text())
        task = get(result["server"], token, "/api/tasks/demo-2")["task"]
        assert isinstance(task, dict)
        assert [a["ending"] for a in task["attempts"]] == ["verification_failed", None]
        [finding] = task["findings"]
        [test] = next(c for c in finding["criteria"] if c["id"] == "AC-1.2")["tests"]
        assert test["name"].endswith("test_cuts_at_word_boundary")
        assert result["sign_in"].startswith(result["server"] + "/#sign-in=")

        # A second demo into the same directory is refused and changes nothing
        again = demo("--dir", str(root))
        assert again.returncode == 1 and "--clean" in again.stderr
        assert alive(pid)

        cleaned = demo("--dir", str(root), "--clean")
        assert cleaned.returncode == 0, cleaned.stderr
        assert not root.exists()
        assert not alive(pid)
    finally:  # a failed run must not leave the kept server behind
        if root.exists():
            demo("--dir", str(root), "--clean")


def test_clean_removes_only_a_directory_the_demo_made(where: Path) -> None:
    mine = where / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    done = demo("--dir", str(mine), "--clean")
    assert done.returncode == 1 and "not made by `taskgate demo`" in done.stderr
    assert (mine / "notes.txt").read_text() == "keep me"


def test_without_a_terminal_the_demo_says_its_board_stops_now(where: Path) -> None:
    root = where / "demo"
    # Run as the README first runs it, before `taskgate` is on the PATH: the commands it prints
    # name the program by the path it was started by, which works from where the person is.
    done = demo("--dir", str(root), env={"PATH": "/usr/local/bin:/usr/bin:/bin"}, cwd=where)
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    said = done.stdout
    link = next(line for line in said.splitlines() if "/#sign-in=" in line)
    assert said.index(NO_WAIT) > said.index(link)  # said right after the links it makes dead
    assert f"{TASKGATE} demo --keep --dir {root}" in said
    assert f"{TASKGATE} task show demo-2 --server " in said and " taskgate task show" not in said
    assert f"removed {root} and stopped its server" in said
    assert not root.exists()
    server = link.split()[-1].split("/#sign-in=")[0]
    with pytest.raises(OSError):  # the server is gone, as the line said
        get(server, "tgh_x", "/api/health")
