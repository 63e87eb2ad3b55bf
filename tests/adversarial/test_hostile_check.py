"""The gated agent's own code, running as the verifier's check, goes for the verifier's keys.

The agent's repository carries a `conftest.py` (hostile_scan.py) that the project's honest
`pytest` check imports. It reads `/proc/*/environ`, `/proc/*/cmdline` and the memory of every
process it can, tries ptrace on the verifier, reads every file of the verifier's run directory
(and its HOME and TMPDIR), then calls the verifier endpoints with every key it found and, with
any run id seen in the verifier's memory, finishes its own run as passed. Its real tests fail.

Three ways the verifier runs, each through a real `taskgate serve` and `taskgate verify --once`:
- started as root (CI, a server): the checks run as the check user;
- started as an unprivileged user: the checks run as that same user, and the verifier being
  non-dumpable is what keeps them out of its environment and memory;
- the container's entrypoint (the Dockerfile's ENTRYPOINT, CMD, ENV and users): root at the
  start, then the worker as taskgate-verifier and the checks as taskgate-check.
In each: nothing of the verifier's is found, no call with anything found succeeds, and the run's
verdict is the one its real tests earn (failed).
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from taskgate.verifier import hardening
from taskgate.verifier.sandbox import default_check_user
from tests.mcp.live import Live, serving
from tests.support.container import Image
from tests.support.users import (
    IS_ROOT,
    TEST_WORKER,
    check_python,
    ensure_user,
    shared_tmp,
    taskgate_command,
)
from tests.verifier.support import SLUGIFY, SLUGIFY_TESTS, TASKGATE, Gate, Repo, pytest_config

pytestmark = pytest.mark.skipif(not IS_ROOT, reason="switching users needs the suite to run as root")

SCANNER = Path(__file__).with_name("hostile_scan.py")
BROKEN = SLUGIFY.replace("a-z0-9", "a-z")  # drops digits: the real test fails
REF = "test_slug.TestSlugify.test_keeps_digits"
KEEPS_DIGITS = {"text": "digits are kept", "kind": "test", "verify_ref": REF}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-data"))


@pytest.fixture
def where() -> Iterator[Path]:
    yield from shared_tmp()


@dataclass
class Hostile:
    gate: Gate
    task_id: str
    out: Path
    secrets: dict[str, str]  # every credential in play, by name

    def env(self) -> dict[str, str]:
        """What the verifier is given: its keys, a git token, and cloud credentials."""
        return {
            "TASKGATE_SERVER": self.gate.live.base,
            "TASKGATE_VERIFIER_KEY": self.gate.verifier_key,
            "TASKGATE_REVIEWER_KEY": self.gate.reviewer_key,
            "TASKGATE_GIT_TOKEN": self.secrets["git_token"],
            "AWS_SECRET_ACCESS_KEY": self.secrets["aws"],
        }


def hostile(live: Live, where: Path, *, owner: int | None = None, url: bool = False) -> Hostile:
    repo = Repo.create(
        where / "repo", {"slug.py": BROKEN, "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"}
    )
    gate = Gate.create(live, repo, pytest_config(), url=f"file://{repo.path}" if url else None)
    tid = gate.task([KEEPS_DIGITS])
    out = where / "found.json"
    config = {
        "server": live.base,
        "task_id": tid,
        "check": "unit",
        "report": "reports/junit.xml",
        "criteria": {"AC-1.1": REF},
        "out": str(out),
    }
    sha = repo.commit({"conftest.py": SCANNER.read_text(), "hostile.json": json.dumps(config)})
    if owner is not None:  # the repository belongs to whoever serves it
        subprocess.run(["chown", "-R", f"{owner}:{owner}", str(repo.path)], check=True)
    gate.submit(tid, sha)
    found = {
        "verifier_key": gate.verifier_key,
        "reviewer_key": gate.reviewer_key,
        "agent_key": gate.agent_key,
        "admin_token": live.admin_token,
        "git_token": f"gittoken-{secrets.token_hex(16)}",
        "aws": f"awssecret-{secrets.token_hex(16)}",
    }
    return Hostile(gate, tid, out, found)


def finish(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    try:
        out, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"taskgate verify did not end:\n{out}\n{err}") from None
    assert proc.returncode == 0, (proc.returncode, out, err)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def judge(h: Hostile, lines: list[dict[str, Any]], worker_pid: int) -> dict[str, Any]:
    """What every mode must show; returns the scan for the mode's own checks."""
    assert h.out.exists(), ("the hostile check never ran", lines)
    scan: dict[str, Any] = json.loads(h.out.read_text())
    text = json.dumps(scan)
    for name, value in h.secrets.items():
        assert value not in text, f"the check found the {name}"
    # It looked where it meant to: at this verifier, whose environment and memory it could not read.
    assert scan["verifier"] == str(worker_pid), (scan["verifier"], worker_pid, scan["ancestors"])
    me = scan["procs"][str(scan["pid"])]
    assert me["environ"] == "read" and me["mem"] == "read"  # reading works where it is allowed
    verifier = scan["procs"][str(worker_pid)]
    assert verifier["environ"].startswith("refused"), verifier
    assert verifier["mem"].startswith("refused"), verifier
    assert scan["ptrace"].startswith("refused"), scan["ptrace"]
    # Nothing of the verifier's anywhere: no key in any environment, memory or file it could
    # read (a key in some unrelated process's command line is no key of this verifier's, and
    # every call with one is tried below).
    assert [f for f in scan["found"] if not f["where"].endswith("/cmdline")] == [], scan["found"]
    assert [f for f in scan["found"] if f["where"] == f"/proc/{worker_pid}/cmdline"] == []
    assert scan["files_read"] > 0 and str(scan["run_dir"]).startswith("/tmp/taskgate-verify-")
    assert [c for c in scan["calls"] if 200 <= c["status"] < 300] == [], scan["calls"]
    assert scan["runs_seen"] == []  # no run id reached it
    assert not {"TASKGATE_VERIFIER_KEY", "TASKGATE_REVIEWER_KEY", "TASKGATE_GIT_TOKEN"} & set(
        scan["env_names"]
    )
    # The scanner is a conftest.py committed on main: where the baseline shows it (a remote
    # repository: the claim-time tip is unknown, so the empty tree), it is a change to the
    # harness that a human decides, no attempt used; where it was on main before the claim, the
    # baseline holds it and the run fails on its real tests. Either way the evidence is recorded.
    [line] = lines
    detail = h.gate.detail(h.task_id)
    if line["verdict"] == "needs_human":
        assert line["task_status"] == "needs_human", line
        assert line["needs_human"].startswith("the submission changes protected paths: conftest.py"), line
        assert [r["status"] for r in detail["runs"]] == ["needs_human"]
        assert detail["task"]["attempts_used"] == 0
    else:
        assert (line["task_id"], line["verdict"], line["task_status"]) == (h.task_id, "failed", "ready"), line
        assert [r["status"] for r in detail["runs"]] == ["failed"]
        assert detail["task"]["attempts_used"] == 1
    assert detail["runs"][0]["evidence"]["AC-1.1"]["result"] == "fail"
    assert not Path(scan["run_dir"]).exists()  # taken back and removed, whoever owned what
    return scan


def own_home(scan: dict[str, Any]) -> None:
    """Run as the check user, a check's HOME and TMPDIR are its run's own, removed with it."""
    for d in (scan["home"], scan["tmpdir"]):
        assert Path(d).parent == Path(scan["run_dir"]), (d, scan["run_dir"])


def test_a_root_verifier_runs_the_hostile_check_as_the_check_user(live: Live, where: Path) -> None:
    h = hostile(live, where)
    proc = subprocess.Popen(
        [TASKGATE, "verify", "--once", "--project", h.gate.project, "--json"],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}, **h.env()},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    scan = judge(h, finish(proc), proc.pid)
    check = pwd.getpwnam(default_check_user())
    assert (scan["uid"], scan["gid"], scan["groups"]) == (check.pw_uid, check.pw_gid, [])
    assert scan["procs"][str(proc.pid)]["uid"] == ["0"]  # the worker stayed root; the check did not
    own_home(scan)


def test_an_unprivileged_verifier_keeps_its_keys_from_a_check_of_its_own_user(
    live: Live, where: Path
) -> None:
    user = ensure_user(TEST_WORKER)
    h = hostile(live, where, owner=user.pw_uid)
    python = check_python()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(where), "LANG": "C.UTF-8", **h.env()}
    proc = subprocess.Popen(
        [taskgate_command(python), "verify", "--once", "--project", h.gate.project, "--json"],
        env=env,
        cwd=str(where),
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    scan = judge(h, finish(proc), proc.pid)
    assert scan["uid"] == user.pw_uid  # the same user as the verifier: only non-dumpable stands between
    assert scan["procs"][str(proc.pid)]["uid"] == [str(user.pw_uid)]


def test_the_containers_entrypoint_runs_worker_and_checks_as_two_users(live: Live, where: Path) -> None:
    image = Image.read()
    image.create_users()
    users = dict(image.users)
    worker_uid = users[image.env["TASKGATE_WORKER_USER"]]
    check_uid = users[image.env["TASKGATE_CHECK_USER"]]
    h = hostile(live, where, owner=worker_uid, url=True)  # remote, as in the cloud
    proc = image.popen(h.env(), [*image.cmd, "--project", h.gate.project, "--json"])
    scan = judge(h, finish(proc), proc.pid)
    assert scan["uid"] == check_uid and scan["groups"] == []
    worker = scan["procs"][str(proc.pid)]
    assert worker["uid"] == [str(worker_uid)]
    keep = sum(1 << c for c in hardening.KEEP)  # CAP_CHOWN, CAP_KILL, CAP_SETGID, CAP_SETUID
    assert [int(worker[k], 16) for k in ("capeff", "capprm", "capbnd", "capinh", "capamb")] == [keep] * 3 + [
        0,
        0,
    ]
    assert worker["no_new_privs"] == "1"
    me = scan["procs"][str(scan["pid"])]
    assert (int(me["capeff"], 16), int(me["capprm"], 16), me["no_new_privs"]) == (0, 0, "1")
    own_home(scan)


def test_even_root_finds_no_key_in_the_running_verifiers_environment_block(live: Live, where: Path) -> None:
    """/proc/<pid>/environ shows the block a process started with, whatever os.environ says
    later: the verifier overwrites its keys there once read. Root reads it despite non-dumpable,
    so what root sees is what any later slip (a core dump, a debugger) would."""
    marker = where / "started"
    repo = Repo.create(where / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS})
    config = pytest_config()
    config["checks"]["wait"] = {"command": f"touch {marker}; sleep 2"}
    gate = Gate.create(live, repo, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, repo.commit({"README": "x\n"}))
    keys = {
        "TASKGATE_VERIFIER_KEY": gate.verifier_key,
        "TASKGATE_REVIEWER_KEY": gate.reviewer_key,
        "TASKGATE_GIT_TOKEN": f"gittoken-{secrets.token_hex(16)}",
        "AWS_SECRET_ACCESS_KEY": f"awssecret-{secrets.token_hex(16)}",
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    proc = subprocess.Popen(
        [TASKGATE, "verify", "--once", "--project", gate.project, "--json"],
        env={**base, "TASKGATE_SERVER": live.base, **keys},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
    block = Path(f"/proc/{proc.pid}/environ").read_bytes()
    [line] = finish(proc)
    assert line["verdict"] == "passed", line
    assert b"PATH=" in block  # the block is there, the rest of it intact
    for name, value in keys.items():
        assert value.encode() not in block, name


def test_with_jobs_the_job_that_runs_the_check_and_its_parent_keep_their_keys(
    live: Live, where: Path
) -> None:
    """`--jobs 2`: the check runs under a forked job, which must be as closed to it as a
    single verifier is (non-dumpable, no key in reach), and so must the parent holding the keys."""
    h = hostile(live, where)
    proc = subprocess.Popen(
        [TASKGATE, "verify", "--once", "--jobs", "2", "--project", h.gate.project, "--json"],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}, **h.env()},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = finish(proc)
    scan = json.loads(h.out.read_text())
    job = int(scan["verifier"])
    assert job != proc.pid and str(proc.pid) in scan["ancestors"], (job, proc.pid, scan["ancestors"])
    judge(h, lines, job)
    parent = scan["procs"][str(proc.pid)]
    assert parent["environ"].startswith("refused") and parent["mem"].startswith("refused"), parent
    check = pwd.getpwnam(default_check_user())
    assert (scan["uid"], scan["gid"], scan["groups"]) == (check.pw_uid, check.pw_gid, [])
    own_home(scan)
