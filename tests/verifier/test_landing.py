"""Landing, end to end: a bare repository as the project's repository, a real `taskgate serve`,
`taskgate verify` as real subprocesses running pytest and pushing with git. Accepted tasks wait
in the landing queue; the verifier builds them as one chain on main's tip, tests each on top of
the ones ahead, pushes the longest passing prefix by fast-forward, and sends the one that breaks
with the others back to ready without using an attempt."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run
from tests.support.conf_project import (
    CONF,
    CONF_TEST,
    RENAME,
    RENAMED,
    RENAMED_TEST,
    USE,
    USE_PY,
    USES,
    on_branch,
    own_change,
)
from tests.support.users import IS_ROOT, NOBODY, ensure_user
from tests.verifier.support import PYTEST_CHECK, TASKGATE, Gate, Repo, git, pytest_config


def bare_gate(live: Live, tmp_path: Path, **config: Any) -> tuple[Gate, Path]:
    """The project's repository is a bare one (as on a git host); the executors work in a clone
    and push their branches there."""
    repo = Repo.create(
        tmp_path / "work", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(repo.path), str(bare))
    git(repo.path, "remote", "add", "origin", str(bare))
    gate = Gate.create(live, repo, {**pytest_config(**config), "land": True}, url=str(bare))
    return gate, bare


def submitted(gate: Gate, name: str, start: str, change: tuple[dict[str, str], dict[str, Any]]) -> str:
    files, criterion = change
    tid = gate.task([criterion])
    sha = on_branch(gate.repo, name, start, files)
    git(gate.repo.path, "push", "--quiet", "origin", name)
    gate.submit(tid, sha)
    return tid


def accept(live: Live, tid: str) -> dict[str, Any]:
    out: dict[str, Any] = live.ok("POST", f"/api/tasks/{tid}/accept")
    return out


def cli(live: Live, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": live.base, "TASKGATE_TOKEN": live.admin_token}
    return subprocess.run([TASKGATE, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def mcp_task(gate: Gate, tid: str) -> dict[str, Any]:
    """The task as an agent reads it with get_task over MCP."""

    async def go() -> dict[str, Any]:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            return dict((await a.ok("get_task", task_id=tid))["task"])

    return run(go())


def landing_lines(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in lines if "landing" in x]


def passes_at(bare: Path, commit: str, where: Path) -> bool:
    """The project's own tests, run on `commit` in a fresh clone (pytest's exit status)."""
    git(where.parent, "clone", "--quiet", str(bare), str(where))
    git(where, "checkout", "--quiet", "--detach", commit)
    cmd = PYTEST_CHECK["command"].replace(" --junitxml=reports/junit.xml", "")
    return subprocess.run(cmd, shell=True, cwd=where, capture_output=True, check=False).returncode == 0


def test_accepted_work_lands_in_order_and_the_one_that_breaks_goes_back(live: Live, tmp_path: Path) -> None:
    gate, bare = bare_gate(live, tmp_path)
    fork = git(bare, "rev-parse", "main")
    alpha = submitted(gate, "alpha", fork, own_change("alpha"))
    rename = submitted(gate, "rename", fork, ({"conf.py": RENAMED, "test_conf.py": RENAMED_TEST}, RENAME))
    gamma = submitted(gate, "gamma", fork, own_change("gamma"))
    use = submitted(
        gate, "use", fork, ({"use.py": USE_PY, "test_use.py": USES}, USE)
    )  # passes alone; not after rename
    ids = [alpha, rename, gamma, use]
    assert sorted((x["task_id"], x["verdict"]) for x in gate.verify_json()) == sorted(
        (t, "passed") for t in ids
    )
    spec = gate.spec([own_change("later")[1]])
    dep = live.ok(
        "POST",
        f"/api/projects/{gate.project}/tasks",
        {"title": "after alpha", "spec_id": spec, "blocked_by": [alpha]},
    )["task"]["id"]
    for tid in ids:
        assert accept(live, tid)["status"] == "landing"
    # accepted is not done: nothing is on main yet, and the dependant still waits
    assert [gate.detail(t)["task"]["status"] for t in ids] == ["landing"] * 4
    assert gate.detail(dep)["task"]["status"] == "blocked"
    assert [gate.detail(t)["task"]["queue"]["position"] for t in ids] == [1, 2, 3, 4]
    queue = live.ok("GET", f"/api/projects/{gate.project}/queue")
    assert [e["task_id"] for e in queue["entries"]] == ids and queue["branch"] == "main"
    assert git(bare, "rev-parse", "main") == fork
    shown = cli(live, "queue", "show", gate.project)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"landing queue of {gate.project} onto main:\n")
    assert [line.split()[:2] for line in shown.stdout.splitlines()[2:6]] == [
        [str(i + 1), t] for i, t in enumerate(ids)
    ]
    assert mcp_task(gate, gamma)["queue"] == "3 of 4, waiting"

    [line] = landing_lines(gate.verify_json())
    # alpha's tree on main's tip is the one it was verified on: its verdict stands, no run
    assert line["tested"] == [[alpha, "reused"], [rename, "passed"], [gamma, "passed"], [use, "failed"]]
    assert line["outcome"] == "landed" and line["pushed"] is True
    assert line["landed"] == [alpha, rename, gamma] and line["culprit"] == use
    tip = git(bare, "rev-parse", "main")
    assert tip == line["push"]
    # main gained exactly the chain: one merge per landed task, in accept order, each merging the
    # accepted commit, each a fast-forward from the one before
    gained = git(bare, "rev-list", "--first-parent", "--reverse", f"{fork}..main").split()
    assert len(gained) == 3
    before = fork
    for tid, commit in zip([alpha, rename, gamma], gained, strict=True):
        task = gate.detail(tid)["task"]
        assert task["status"] == "done"
        landed = task["landed"]
        assert landed["commit"] == commit and landed["from_tip"] == before and landed["branch"] == "main"
        assert landed["tree"] == git(bare, "rev-parse", f"{commit}^{{tree}}")
        parents = git(bare, "rev-list", "--parents", "-n", "1", commit).split()[1:]
        assert parents == [before, task["attempts"][-1]["submission"]["commit_sha"]]
        assert (
            git(bare, "log", "-1", "--format=%an <%ae>", commit)
            == "taskgate landing <landing@taskgate.invalid>"
        )
        before = commit
    assert gate.detail(gamma)["task"]["landed"]["commit"] == tip  # main's tip is what the records name
    assert mcp_task(gate, gamma)["landed"] == f"main at {tip} (from {gained[1]})"
    assert f"  landed on main at {tip} (from {gained[1][:12]})" in cli(live, "task", "show", gamma).stdout
    assert gate.detail(alpha)["task"]["landed"]["run_id"] is None  # reused: its own run
    assert gate.detail(rename)["task"]["landed"]["run_id"] is not None
    # main passes its checks at every commit it gained
    for i, commit in enumerate(gained):
        assert passes_at(bare, commit, tmp_path / f"check-{i}"), commit
    # the culprit: back to ready, no attempt used, told what it breaks with and where
    culprit = gate.detail(use)["task"]
    assert culprit["status"] == "ready" and culprit["attempts_used"] == 0 and culprit["landed"] is None
    assert culprit["findings"][-1]["summary"].startswith(
        f"landing queue: {use} passed alone but breaks landing on top of {alpha}, {rename}, {gamma} "
        f"onto main at {fork[:12]} (check unit exited 1"
    )
    # the task blocked by alpha is ready now that alpha is on main
    assert gate.detail(dep)["task"]["status"] == "ready"
    assert live.ok("GET", f"/api/projects/{gate.project}/queue")["entries"] == []
    assert landing_lines(gate.verify_json()) == []
    # each landing is signed, chained after the acceptance it carries out, and verifies offline
    for tid in (alpha, rename, gamma):
        landing = signed_landing(live, tmp_path, tid)
        landed = gate.detail(tid)["task"]["landed"]
        assert landing["subject"][0]["digest"] == {"gitCommit": landed["commit"]}
        predicate = landing["predicate"]
        assert (predicate["landedCommit"], predicate["tree"], predicate["fromTip"]) == (
            landed["commit"],
            landed["tree"],
            landed["from_tip"],
        )
        assert predicate["verifiedBy"].get("run") == landed["run_id"]
    assert signed_landing(live, tmp_path, alpha)["predicate"]["verifiedBy"]["reusedRun"] is not None
    assert live.ok("GET", f"/api/projects/{gate.project}/audit")["ok"] is True


def signed_landing(live: Live, tmp_path: Path, tid: str) -> dict[str, Any]:
    """The task's signed statements verified with `taskgate attest verify` against the landed
    commit; returns the last (the landing)."""
    bundle = live.rest("GET", f"/api/tasks/{tid}/attestations").text
    path, key = tmp_path / f"{tid}.jsonl", tmp_path / "key.pem"
    path.write_text(bundle)
    key.write_text(live.ok("GET", "/api/attestations/key")["pem"])
    last = json.loads(base64.b64decode(json.loads(bundle.splitlines()[-1])["payload"]))
    assert last["predicateType"] == "https://taskgate.dev/attestation/landing/v1"
    done = subprocess.run(
        [
            TASKGATE,
            "attest",
            "verify",
            str(path),
            "--key",
            str(key),
            "--commit",
            last["predicate"]["landedCommit"],
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # a bundle without the acceptance it carries out does not verify
    lines = bundle.splitlines()
    path.write_text("\n".join(lines[:-2] + lines[-1:]) + "\n")
    cut = subprocess.run(
        [TASKGATE, "attest", "verify", str(path), "--key", str(key)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cut.returncode == 1, cut.stdout
    return dict(last)


def test_a_tip_moved_by_someone_else_mid_step_is_built_again_never_forced(live: Live, tmp_path: Path) -> None:
    hold, held = tmp_path / "hold", tmp_path / "held"
    # The check waits while `hold` exists, having said so: the test pushes to main meanwhile.
    check = dict(PYTEST_CHECK)
    check["command"] = (
        f"if [ -e {hold} ]; then touch {held}; while [ -e {hold} ]; do sleep 0.1; done; fi; {PYTEST_CHECK['command']}"
    )
    gate, bare = bare_gate(live, tmp_path)
    gate.configure({"check_timeout_minutes": 2, "checks": {"unit": check}, "land": True})
    fork = git(bare, "rev-parse", "main")
    one = submitted(gate, "one", fork, own_change("one"))
    two = submitted(gate, "two", fork, own_change("two"))
    assert [x["verdict"] for x in gate.verify_json()] == ["passed", "passed"]
    for tid in (one, two):
        accept(live, tid)
    hold.write_text("")
    verifying = subprocess.Popen(
        [TASKGATE, "verify", "--once", "--project", gate.project, "--json"],
        env=gate.verify_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not held.exists():
            assert time.monotonic() < deadline and verifying.poll() is None, verifying.communicate()
            time.sleep(0.05)
        # someone else pushes to main while the chain is being tested
        other = tmp_path / "other"
        git(tmp_path, "clone", "--quiet", str(bare), str(other))
        git(other, "checkout", "--quiet", "main")
        (other / "NOTES.md").write_text("a push from elsewhere\n")
        git(other, "add", "-A")
        git(other, "commit", "--quiet", "-m", "elsewhere")
        git(other, "push", "--quiet", "origin", "main")
        moved = git(other, "rev-parse", "HEAD")
    finally:
        hold.unlink()
    out, err = verifying.communicate(timeout=120)
    assert verifying.returncode == 0, (out, err)
    lines = landing_lines([json.loads(x) for x in out.splitlines() if x.strip()])
    assert [x["outcome"] for x in lines] == ["refused", "landed"]
    assert lines[0]["pushed"] is False and "moved" in lines[0]["why"] and lines[0]["tip"] == fork
    assert lines[1]["tip"] == moved and lines[1]["landed"] == [one, two]
    tip = git(bare, "rev-parse", "main")
    # the other push is kept: main moved only forward from it
    assert git(bare, "merge-base", "--is-ancestor", moved, tip) == ""
    assert gate.detail(two)["task"]["landed"]["commit"] == tip
    assert gate.detail(one)["task"]["landed"]["from_tip"] == moved
    for tid in (one, two):
        events = [e["action"] for e in gate.detail(tid)["history"]]
        assert events.count("land") == 1


def test_two_verifiers_racing_on_one_queue_land_each_entry_once(live: Live, tmp_path: Path) -> None:
    gate, bare = bare_gate(live, tmp_path)
    fork = git(bare, "rev-parse", "main")
    ids = [submitted(gate, n, fork, own_change(n)) for n in ("red", "green", "blue")]
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"] * 3
    for tid in ids:
        accept(live, tid)
    racers = [
        subprocess.Popen(
            [TASKGATE, "verify", "--once", "--project", gate.project, "--json"],
            env=gate.verify_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [r.communicate(timeout=180) for r in racers]
    assert [r.returncode for r in racers] == [0, 0], outs
    lines = landing_lines([json.loads(x) for out, _ in outs for x in out.splitlines() if x.strip()])
    landed = [t for x in lines for t in x["landed"]]
    assert sorted(landed) == sorted(ids)  # each once, by whichever verifier had the step
    assert len(git(bare, "rev-list", "--first-parent", f"{fork}..main").split()) == 3
    for tid in ids:
        task = gate.detail(tid)
        assert task["task"]["status"] == "done"
        assert [e["action"] for e in task["history"]].count("land") == 1


def test_a_local_repository_with_main_checked_out_takes_the_push_only_over_a_clean_work_tree(
    live: Live, tmp_path: Path
) -> None:
    repo = Repo.create(
        tmp_path / "work", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    gate = Gate.create(live, repo, {**pytest_config(), "land": True})
    fork = git(repo.path, "rev-parse", "HEAD")
    files, criterion = own_change("local")
    tid = gate.task([criterion])
    gate.submit(tid, on_branch(repo, "local", fork, files))
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"]
    accept(live, tid)
    # someone is editing main's files in that work tree: the push would overwrite them
    (repo.path / "conf.py").write_text("LIMIT = 11  # an edit in progress\n")
    got = landing_lines(gate.verify_json())
    assert len(got) == 1, [(x["outcome"], x["why"]) for x in got]
    [line] = got
    assert line["outcome"] == "refused" and line["pushed"] is False
    assert line["why"] == (
        "the repository has the branch checked out with changes in its work tree: waiting until it is clean"
    )
    assert git(repo.path, "rev-parse", "main") == fork
    assert (repo.path / "conf.py").read_text() == "LIMIT = 11  # an edit in progress\n"  # untouched
    assert gate.detail(tid)["task"]["status"] == "landing"
    queue = live.ok("GET", f"/api/projects/{gate.project}/queue")
    assert queue["recent"][-1]["why"] == line["why"]
    # the edit is put away: the next step lands, and the work tree follows the branch
    git(repo.path, "checkout", "--", "conf.py")
    [line] = landing_lines(gate.verify_json())
    assert line["outcome"] == "landed" and line["landed"] == [tid]
    tip = git(repo.path, "rev-parse", "main")
    assert gate.detail(tid)["task"]["landed"]["commit"] == tip
    assert (repo.path / "test_local.py").exists() and git(repo.path, "status", "--porcelain") == ""


@pytest.mark.skipif(not IS_ROOT, reason="a work tree of another user needs the suite to run as root")
def test_a_root_verifier_never_updates_a_work_tree_of_another_user(live: Live, tmp_path: Path) -> None:
    """The gated agent owns the checkout and its config: a smudge filter there would run as root
    if the verifier updated that work tree. It does not: the step says why and lands nothing."""
    repo = Repo.create(
        tmp_path / "work", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    gate = Gate.create(live, repo, {**pytest_config(), "land": True})
    fork = git(repo.path, "rev-parse", "HEAD")
    planted = tmp_path / "ran-as-root"
    files, criterion = own_change("owned")
    tid = gate.task([criterion])
    gate.submit(tid, on_branch(repo, "owned", fork, {**files, ".gitattributes": "* filter=evil\n"}))
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"]
    accept(live, tid)
    git(repo.path, "config", "filter.evil.smudge", f"touch {planted}; cat")
    agent_user = ensure_user(NOBODY)
    subprocess.run(["chown", "-R", f"{agent_user.pw_uid}:{agent_user.pw_gid}", str(repo.path)], check=True)
    [line] = landing_lines(gate.verify_json())
    assert line["outcome"] == "refused" and line["why"] == (
        "the repository's work tree belongs to another user than the verifier's: updating it would run "
        "that repository's git configuration as the verifier; land through a bare repository instead"
    )
    assert not planted.exists()
    assert git(repo.path, "-c", "safe.directory=*", "rev-parse", "main") == fork
    assert gate.detail(tid)["task"]["status"] == "landing"
