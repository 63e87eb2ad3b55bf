"""Verification at fleet speed, on a real third-party library: how soon an idle verifier starts,
what `--jobs 2` and the dependency cache save.

    python bench/verify_fleet.py [--tasks 100] [--agents 16] [--starts 10] [--library parse|local] [--smoke]

The repository is `parse` (its sdist from PyPI: the library and its own test suite), with one
check that installs the project the way a new user's CI would: a virtualenv, `pip install -e .`
and pytest from a local wheelhouse (downloaded once, so the network is not measured), then its
tests. The check installs only when `.venv` is missing: with the cache, `.venv` is restored.
Every run uses a real `taskgate serve` (one for the whole bench, a project per phase) and real
`taskgate verify` processes; agents claim and submit over MCP.

1. Start latency: a `taskgate verify` waits idle (polling interval 30 s, the default); an agent
   submits one task, and the time from `submit_task` returning to the verifier's "verifying"
   line is measured; --starts times, one at a time. Below zero: the verifier had started before
   the agent had read submit_task's answer (the commit wakes it before the answer is sent).
2. --agents agents submit --tasks tasks at once; `taskgate verify --once` then verifies them
   all: sequential without the cache (the baseline), `--jobs 2` without it, and sequential with
   it. Each reports the time to the last verdict, p50/p95 of submit to verdict, and the time
   the checks spent (installs included).

--library local (the smoke run's) puts a two-file library of the bench's own in place of
`parse`, and its check "installs" by linking .venv/bin/python to a Python the check user can run
(with pytest): nothing comes from the network, and every step above still runs, in seconds.

Run as root: the verifier then runs the checks as a check user, which is what caches need.
Prints, last: verify_start_p50_s, jobs2_time_ratio (jobs 2 / sequential, time to the last
verdict), cache_speedup (a verification's median time without the cache / with it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchkit import smoke
from benchkit.mcp import MODERN, sdk_agent
from benchkit.serve import Served, start
from benchkit.stats import pct
from benchkit.users import check_python

BIN = Path(sys.executable).parent
SYSTEM_PYTHON = "/usr/bin/python3"  # makes the check's venv: any user can run it
PACKAGE = "parse"


def sh(*cmd: str, cwd: Path | None = None) -> str:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def git(repo: Path, *args: str) -> str:
    return sh("git", "-c", "user.email=b@example.com", "-c", "user.name=bench", *args, cwd=repo)


def open_dir(path: Path) -> Path:
    """A directory the check user can read (this bench's temp dirs are 0700 otherwise)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o755)
    return path


LOCAL_LIBRARY = {
    "pyproject.toml": '[project]\nname = "slugs"\nversion = "1"\n',
    "slugs.py": "def slug(s):\n    return s.strip().lower().replace(' ', '-')\n",
    "tests/test_bugs.py": "from slugs import slug\n\n\ndef test_spaces():\n    assert slug(' A B ') == 'a-b'\n",
}


def make_local_repo(work: Path) -> Path:
    """The smoke run's library: a module and its test, as a git repository (main)."""
    repo = open_dir(work / "repo")
    for name, text in LOCAL_LIBRARY.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "slugs")
    sh("chmod", "-R", "a+rX", str(work))
    return repo


def make_repo(work: Path) -> tuple[Path, Path]:
    """The library's sdist as a git repository (main), and a wheelhouse of what its check
    installs."""
    sdists = work / "sdist"
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d"]
    subprocess.run([*pip, str(sdists), "--no-binary", ":all:", PACKAGE], check=True)
    wheels = open_dir(work / "wheels")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "-d", str(wheels), "pytest", "setuptools>=61.2"],
        check=True,
    )
    for f in wheels.iterdir():
        os.chmod(f, 0o644)
    (archive,) = sdists.glob(f"{PACKAGE}-*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    (src,) = (p for p in work.iterdir() if p.name.startswith(f"{PACKAGE}-") and p.is_dir())
    repo = work / "repo"
    src.rename(repo)
    open_dir(repo)
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "parse as released")
    sh("chmod", "-R", "a+rX", str(work))
    return repo, wheels


def check_command(wheels: Path | None) -> str:
    """Installs unless .venv is there (the cache restores it), then runs the tests. Without a
    wheelhouse (the local library) installing is linking a Python the check user can run."""
    if wheels is None:
        install = f"mkdir -p .venv/bin && ln -s {check_python()} .venv/bin/python"
    else:
        install = (
            f"{SYSTEM_PYTHON} -m venv .venv && .venv/bin/pip install -q --no-index "
            f"--find-links {wheels} -e . pytest"
        )
    run = (
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 .venv/bin/python -m pytest -q -o addopts= "
        "-p no:cacheprovider --junitxml=reports/junit.xml tests"
    )
    return f"{{ [ -x .venv/bin/python ] || {{ {install}; }}; }} && {run}"


@dataclass
class Project:
    server: Served
    name: str
    verifier_key: str
    agent_keys: list[str]
    spec_id: str
    sha: str


def setup(server: Served, name: str, repo: Path, wheels: Path | None, agents: int, *, cache: bool) -> Project:
    """A project of its own for one phase of the bench, on the one server."""
    server.rest("POST", "/api/projects", {"name": name, "repo": str(repo)})
    check: dict[str, Any] = {
        "command": check_command(wheels),
        "report": {"path": "reports/junit.xml", "format": "junit"},
        "timeout_minutes": 10,
    }
    if cache:
        check["cache"] = {"key": ["pyproject.toml", "setup.cfg", "requirements*.txt"], "paths": [".venv"]}
    server.rest("PUT", f"/api/projects/{name}/verifier-config", {"checks": {"unit": check}})
    made = server.rest(
        "POST", "/api/keys", {"kind": "verifier", "name": "ci", "verifier_kind": "local", "projects": [name]}
    )
    keys = [
        server.rest(
            "POST", "/api/keys", {"kind": "agent", "name": f"a{i}", "role": "executor", "projects": [name]}
        )["key"]
        for i in range(agents)
    ]
    server.rest("PUT", f"/api/projects/{name}/verification", {"on": True})
    spec = server.rest(
        "POST",
        f"/api/projects/{name}/specs",
        {
            "title": "parse keeps working",
            "body": "The library's own tests pass.",
            "risk": "low",
            "criteria": [{"text": "the bug tests pass", "kind": "test", "verify_ref": "tests.test_bugs"}],
        },
    )
    server.rest("POST", f"/api/projects/{name}/specs/{spec['id']}/approve")
    # What the agents submit: a commit on a branch of their own, as a fleet works.
    git(repo, "checkout", "--quiet", "-B", "work", "main")
    (repo / "NOTES.txt").write_text(f"{time.time()}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "work")
    sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "main")
    return Project(server, name, made["key"], keys, spec["id"], sha)


def new_tasks(p: Project, n: int) -> list[str]:
    return [
        p.server.rest("POST", f"/api/projects/{p.name}/tasks", {"title": f"t{i}", "spec_id": p.spec_id})[
            "task"
        ]["id"]
        for i in range(n)
    ]


def submit_all(p: Project, tasks: list[str]) -> dict[str, float]:
    """Each agent claims and submits its share over MCP, all at once; when each submit returned."""
    done: dict[str, float] = {}

    async def one_agent(key: str, mine: list[str]) -> None:
        async with sdk_agent(p.server.mcp_url, key, MODERN) as a:
            for task in mine:
                claimed = await a.ok("claim_task", project=p.name, task_id=task)
                await a.ok(
                    "submit_task",
                    task_id=task,
                    claim_token=claimed["claim_token"],
                    commit_sha=p.sha,
                    evidence="the library's tests pass",
                )
                done[task] = time.monotonic()

    async def everyone() -> None:
        n = len(p.agent_keys)
        await asyncio.gather(*(one_agent(k, tasks[i::n]) for i, k in enumerate(p.agent_keys)))

    asyncio.run(everyone())
    return done


def verifier_env(p: Project, cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    return env | {
        "TASKGATE_SERVER": p.server.base,
        "TASKGATE_VERIFIER_KEY": p.verifier_key,
        "TASKGATE_VERIFIER_CACHE": str(cache_dir),
    }


def start_latency(server: Served, repo: Path, wheels: Path | None, work: Path, starts: int) -> list[float]:
    p = setup(server, "start", repo, wheels, 1, cache=True)
    proc = subprocess.Popen(
        [str(BIN / "taskgate"), "verify", "--project", p.name],
        env=verifier_env(p, work / "cache-start"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.monotonic(), line.rstrip()))

    threading.Thread(target=read, daemon=True).start()
    took = []
    try:
        for _ in range(starts + 1):  # the first also makes the cache: not counted
            (task,) = new_tasks(p, 1)
            time.sleep(1.0)  # the verifier is idle, waiting on the server
            submitted = submit_all(p, [task])[task]
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and not any(
                f"{task}: passed" in ln or f"{task}: failed" in ln for _, ln in lines
            ):
                time.sleep(0.05)
            began = [at for at, ln in lines if ln.startswith(f"{task}: verifying")]
            if not began:
                raise SystemExit(f"{task} was not verified:\n" + "\n".join(ln for _, ln in lines[-30:]))
            took.append(began[0] - submitted)
    finally:
        proc.terminate()
        proc.wait(30)
    return took[1:]


@dataclass
class Batch:
    label: str
    last_verdict_s: float
    submit_to_verdict: list[float]
    per_verification: list[float]
    checks_s: float
    cache_s: float


def batch(
    server: Served,
    label: str,
    repo: Path,
    wheels: Path | None,
    work: Path,
    tasks: int,
    agents: int,
    jobs: int,
    cache: bool,
) -> Batch:
    p = setup(server, label, repo, wheels, agents, cache=cache)
    ids = new_tasks(p, tasks)
    submitted = submit_all(p, ids)
    began = time.monotonic()
    proc = subprocess.Popen(
        [str(BIN / "taskgate"), "verify", "--once", "--json", "--jobs", str(jobs), "--project", p.name],
        env=verifier_env(p, work / f"cache-{label}"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    verdicts: dict[str, float] = {}
    runs: list[dict[str, Any]] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        run = json.loads(line)
        verdicts[run["task_id"]] = time.monotonic()
        runs.append(run)
    proc.wait()
    last = max(verdicts.values(), default=began) - began
    bad = [r for r in runs if r["verdict"] != "passed"]
    if bad or len(runs) != tasks:
        raise SystemExit(f"{label}: {len(runs)} runs, not passed: {json.dumps(bad[:1])[:3000]}")
    return Batch(
        label,
        last,
        [verdicts[t] - submitted[t] for t in ids],
        [r["timings"]["total_s"] for r in runs],
        sum(r["timings"].get("checks_s", 0.0) for r in runs),
        sum(r["timings"].get("cache_s", 0.0) for r in runs),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=100)
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument(
        "--library", choices=["parse", "local"], default="parse", help="what is verified (see above)"
    )
    args = smoke.parse(ap, tasks=1, agents=1, starts=1, library="local")
    if os.geteuid() != 0:
        raise SystemExit("run as root: caches are used only when the checks run as a check user")
    work = open_dir(Path(tempfile.mkdtemp(prefix="taskgate-bench-fleet-")))
    try:
        repo, wheels = make_repo(work) if args.library == "parse" else (make_local_repo(work), None)
        server = start(work / "data")
        try:
            starts = start_latency(server, repo, wheels, work, args.starts)
            print(
                f"start latency over {len(starts)} idle submissions: p50 {statistics.median(starts):.3f} s, "
                f"max {max(starts):.3f} s"
            )
            results = [
                batch(server, "sequential", repo, wheels, work, args.tasks, args.agents, 1, False),
                batch(server, "jobs2", repo, wheels, work, args.tasks, args.agents, 2, False),
                batch(server, "cached", repo, wheels, work, args.tasks, args.agents, 1, True),
            ]
        finally:
            server.stop()
        for b in results:
            print(
                f"{b.label:>10}: {args.tasks} tasks from {args.agents} agents, last verdict after "
                f"{b.last_verdict_s:.1f} s; submit to verdict p50 {pct(b.submit_to_verdict, 0.5):.1f} s, "
                f"p95 {pct(b.submit_to_verdict, 0.95):.1f} s; a verification median "
                f"{statistics.median(b.per_verification):.2f} s; checks (installs included) "
                f"{b.checks_s:.1f} s, cache {b.cache_s:.1f} s"
            )
        seq, jobs2, cached = results
        # The cached batch's first verification also makes the cache: the median is the steady state.
        print(f"verify_start_p50_s={statistics.median(starts):.3f}")
        print(f"jobs2_time_ratio={jobs2.last_verdict_s / seq.last_verdict_s:.3f}")
        print(
            f"cache_speedup={statistics.median(seq.per_verification) / statistics.median(cached.per_verification):.2f}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
