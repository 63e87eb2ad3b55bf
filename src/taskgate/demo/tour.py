"""`taskgate demo`: the whole loop in about a minute, with real processes and nothing to paste.

It runs on a private `taskgate serve` of its own (a fresh data dir under the demo directory, a
free port), never on yours: the human's steps (project, keys, verifier config, the switch,
approving the spec) are done with that private server's own admin token, read from the data dir
the demo just made. So the demo acts as a human only on what it created itself; an agent that
runs `taskgate demo` gets a toy server, nothing on your real board, and the demo adds no way to
reach your admin token that the data dir's file permissions do not already decide.

Steps: a git repository with a small Python package and its pytest tests; the project with its
commands, keys, a real verifier config (pytest writing JUnit, a command criterion, a
deterministic reviewer script for the review criterion) and verification on; a spec and two
tasks; an agent over MCP (the SDK's client) claims both, commits good work to one and work
breaking the named test to the other, submits both; `taskgate verify --once` runs as a
subprocess; the good one is verified, the broken one is back in ready with its findings, which
the agent reads in its next brief and fixes; the verifier runs again. Then the board's sign-in
link, and `--keep` / `--clean`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskgate.cli.client import ApiError, Client
from taskgate.demo import material as m

DEFAULT_DIR = Path(tempfile.gettempdir()) / "taskgate-demo"
PID_FILE = "serve.pid"
MARKER = ".taskgate-demo"  # written first: --clean removes only a directory that holds it
URL_FILE = "server-url"
AGENT = "demo-agent"


class DemoError(Exception):
    pass


def _env() -> dict[str, str]:
    """The demo's processes get none of the caller's TASKGATE_* settings (a server URL or a
    token of the real board must not leak into the toy one, nor its keys into yours)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}


def _taskgate(*args: str) -> list[str]:
    return [sys.executable, "-m", "taskgate.cli", *args]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", f"user.name={AGENT}", "-c", "user.email=demo-agent@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=_env(),
    )
    if done.returncode != 0:
        raise DemoError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


@dataclass
class Tour:
    root: Path
    say: Callable[[str], None]
    started: float = field(default_factory=time.monotonic)
    proc: subprocess.Popen[bytes] | None = None
    url: str = ""
    human: Client | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    def step(self, who: str, text: str) -> None:
        self.say(f"[{time.monotonic() - self.started:5.1f}s] {who:9} {text}")

    # -- the pieces ------------------------------------------------------------------------------

    def checks_python(self) -> str:
        """A Python with pytest that the verifier's checks can run. This one, if it has pytest
        (taskgate's dev extras) and the check user can run it: started as root, the verifier
        runs checks as an unprivileged user, who may not reach a Python under root's home. Else
        a venv of the demo's own, on a Python of the same version the check user can run,
        seeing pytest through a .pth: this environment's pytest, or one pip installs into the
        demo's directory."""
        if _runs(sys.executable, "import pytest"):
            return sys.executable
        site = _site_of("pytest") or self._install_pytest()
        venv = self.root / "venv"
        python = venv / "bin" / "python"
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        bases = [Path(sys.executable), Path("/usr/bin") / version, Path("/usr/local/bin") / version]
        for base in bases:
            if not base.exists() or not _runs(str(base), "pass"):
                continue
            subprocess.run(
                [str(base), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True
            )
            [packages] = (venv / "lib").glob("python3.*/site-packages")
            (packages / "_taskgate_demo.pth").write_text(f"{site}\n")
            if _runs(str(python), "import pytest"):
                self.step("demo", f"the checks run pytest from {site} (a venv on {base} in {venv})")
                return str(python)
            shutil.rmtree(venv)
        raise DemoError(
            f"no {version} that the verifier's check user can run with pytest (tried {', '.join(map(str, bases))}); "
            "install pytest where that user can run it and run the demo again"
        )

    def _install_pytest(self) -> str:
        target = self.root / "pytest-lib"
        self.step("demo", f"pytest is not installed here: installing it into {target} for the checks")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--target",
                str(target),
                "pytest",
            ],
            capture_output=True,
            text=True,
            env=_env(),
        )
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
            raise DemoError(
                "pip could not install pytest for the demo's checks: "
                + ("; ".join(errors) or done.stderr.strip()[-500:])
                + "\nInstall pytest (`pip install pytest`) and run the demo again."
            )
        return str(target)

    def serve(self) -> None:
        data, port = self.root / "data", _free_port()
        log = (self.root / "serve.log").open("wb")
        self.proc = subprocess.Popen(
            _taskgate("serve", "--data-dir", str(data), "--port", str(port), "--admin-name", "you"),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_env(),
            start_new_session=True,  # --keep leaves it running after the demo (and its terminal) ends
        )
        log.close()
        self.url = f"http://127.0.0.1:{port}"
        (self.root / PID_FILE).write_text(f"{self.proc.pid}\n")
        (self.root / URL_FILE).write_text(self.url + "\n")
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                tail = (self.root / "serve.log").read_text(errors="replace")[-1500:]
                raise DemoError(f"taskgate serve exited with {self.proc.returncode}:\n{tail}")
            try:
                Client(self.url, None, timeout=1).call("GET", "/api/health")
                break
            except ApiError:
                if time.monotonic() > deadline:
                    raise DemoError("taskgate serve did not answer within 60 s") from None
                time.sleep(0.1)
        token = (data / "admin-token").read_text().strip()
        self.human = Client(self.url, token)
        self.step("serve", f"a private taskgate serve on {self.url} (data in {data})")

    def make_repo(self) -> None:
        self.repo.mkdir()
        for name, text in m.BASE_FILES.items():
            (self.repo / name).parent.mkdir(parents=True, exist_ok=True)
            (self.repo / name).write_text(text)
        _git(self.repo, "init", "--quiet", "--initial-branch=main")
        _git(self.repo, "add", "-A")
        _git(self.repo, "commit", "--quiet", "-m", "textkit: slugify, word_count")
        self.step("demo", f"a git repository at {self.repo}: textkit.py and its pytest tests")

    def set_up(self, python: str) -> dict[str, str]:
        """The human's part, through the REST API as the CLI would do it. Returns the keys."""
        assert self.human is not None
        h, p = self.human, m.PROJECT
        check = (
            f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {python} -m pytest -q -p no:cacheprovider "
            "--junitxml=reports/junit.xml"
        )
        h.call("POST", "/api/projects", {"name": p, "repo": str(self.repo)})
        h.call(
            "PUT",
            f"/api/projects/{p}/execution-defaults",
            {"verification_commands": [check], "conventions": ["every function has a docstring"]},
        )
        self.step("human", f"project {p} (repo {self.repo}), its verification command and a convention")
        keys = {
            "agent": h.call("POST", "/api/keys", {"kind": "agent", "name": AGENT, "projects": [p]})["key"],
            "verifier": h.call(
                "POST",
                "/api/keys",
                {"kind": "verifier", "name": "demo-ci", "verifier_kind": "local", "projects": [p]},
            )["key"],
            "reviewer": h.call(
                "POST",
                "/api/keys",
                {"kind": "verifier", "name": "demo-reviewer", "verifier_kind": "reviewer", "projects": [p]},
            )["key"],
        }
        self.step("human", f"keys: agent {AGENT} (executor), a local verifier key, a reviewer key")
        reviewer = self.root / "reviewer.py"
        reviewer.write_text(m.REVIEWER)
        config = {
            "check_timeout_minutes": 2,
            "checks": {
                "unit": {"command": check, "report": {"path": "reports/junit.xml", "format": "junit"}}
            },
            "reviewer": {"command": f"{python} {reviewer}", "base_branch": "main"},
        }
        h.call("PUT", f"/api/projects/{p}/verifier-config", config)
        h.call("PUT", f"/api/projects/{p}/verification", {"on": True})
        self.step("human", "verifier config (pytest -> reports/junit.xml; reviewer.py), verification on")
        criteria = [
            {"kind": kind, "text": text, **({"verify_ref": ref.format(python=python)} if ref else {})}
            for kind, text, ref in m.SPEC_CRITERIA
        ]
        spec = h.call(
            "POST",
            f"/api/projects/{p}/specs",
            {"title": m.SPEC_TITLE, "body": m.SPEC_BODY, "risk": "low", "criteria": criteria},
        )
        h.call("POST", f"/api/projects/{p}/specs/{spec['id']}/approve")
        for c in spec["criteria"]:
            self.step(
                "human",
                f"  {c['id']} ({c['kind']}) {c['text']}"
                + (f" — {c['verify_ref']}" if c.get("verify_ref") else ""),
            )
        self.step("human", f"spec {spec['id']} written and approved, with the criteria above")
        for n, (title, held) in enumerate(m.TASKS):
            ids = [spec["criteria"][i - 1]["id"] for i in held]
            body = {"title": title, "spec_id": spec["id"], "spec_criteria": ids, "priority": len(m.TASKS) - n}
            t = h.call("POST", f"/api/projects/{p}/tasks", body)["task"]
            self.step("human", f"task {t['id']} '{title}' holds {', '.join(ids)}: {t['status']}")
        return keys

    def agent_commit(self, task_id: str, files: dict[str, str], message: str) -> str:
        branch = task_id
        if branch in _git(self.repo, "branch", "--list", branch):
            _git(self.repo, "checkout", "--quiet", branch)
        else:
            _git(self.repo, "checkout", "--quiet", "-b", branch, "main")
        for name, text in files.items():
            path = self.repo / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        _git(self.repo, "add", "-A")
        _git(self.repo, "commit", "--quiet", "-m", message)
        sha = _git(self.repo, "rev-parse", "HEAD")
        _git(self.repo, "checkout", "--quiet", "main")
        return sha

    def agent_turn(self, key: str, work: Callable[[str, dict[str, Any]], str]) -> dict[str, Any]:
        from taskgate.demo.agent import AgentError, attempt

        try:
            return attempt(f"{self.url}/mcp", key, m.PROJECT, work)
        except AgentError as exc:
            raise DemoError(f"the agent was refused: {exc}") from None

    def verify(self, keys: dict[str, str]) -> list[dict[str, Any]]:
        env = _env() | {"TASKGATE_VERIFIER_KEY": keys["verifier"], "TASKGATE_REVIEWER_KEY": keys["reviewer"]}
        self.step("verifier", "taskgate verify --once (a clean checkout of each submitted commit)")
        done = subprocess.run(
            _taskgate("verify", "--once", "--project", m.PROJECT, "--json", "--server", self.url),
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
        )
        if done.returncode != 0:
            raise DemoError(f"taskgate verify exited {done.returncode}:\n{done.stderr.strip()[-2000:]}")
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
        for r in lines:
            self.runs.append(r)
            self.step(
                "verifier", f"{r['task_id']} {r['commit_sha'][:10]}: {r['verdict']} -> {r['task_status']}"
            )
            for cid, c in sorted((r.get("criteria") or {}).items()):
                self.step(
                    "",
                    f"  {cid}: {c.get('result')}  {_first_line(c.get('detail') or c.get('rationale') or '')}",
                )
        return lines

    def sign_in_link(self) -> str:
        assert self.human is not None
        return str(self.human.call("POST", "/local/sign-in-link")["url"])

    def task_statuses(self) -> dict[str, str]:
        assert self.human is not None
        items = self.human.call("GET", f"/api/projects/{m.PROJECT}/tasks")["items"]
        return {t["id"]: t["status"] for t in items}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:140] if lines else ""


def _site_of(module: str) -> str | None:
    """The directory `module` is imported from in this environment (its site-packages)."""
    import importlib.util

    found = importlib.util.find_spec(module)
    if found is None or found.origin is None:
        return None
    return str(Path(found.origin).resolve().parent.parent)


def _runs(python: str, code: str) -> bool:
    """`python -c code` succeeds, and under root also as the user the verifier's checks run as."""
    argv = [python, "-c", code]
    if subprocess.run(argv, capture_output=True, env=_env()).returncode != 0:
        return False
    if os.geteuid() != 0:
        return True
    import pwd

    from taskgate.verifier.sandbox import default_check_user

    user = pwd.getpwnam(default_check_user())
    try:
        done = subprocess.run(
            argv,
            user=user.pw_uid,
            group=user.pw_gid,
            extra_groups=[],
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            capture_output=True,
        )
    except OSError:
        return False
    return done.returncode == 0


def _work_title_case(tour: Tour) -> Callable[[str, dict[str, Any]], str]:
    def work(task_id: str, brief: dict[str, Any]) -> str:
        tour.step("agent", f"claimed {task_id} over MCP: '{brief['task']['title']}'")
        base = m.BASE_FILES["textkit.py"]
        sha = tour.agent_commit(
            task_id,
            {"textkit.py": base + m.TITLE_CASE, "tests/test_title.py": m.TITLE_CASE_TESTS},
            "title_case",
        )
        tour.step("agent", f"committed title_case with its test and docstring ({sha[:10]}), submitting")
        return sha

    return work


def _work_truncate(tour: Tour, fixed: bool) -> Callable[[str, dict[str, Any]], str]:
    def work(task_id: str, brief: dict[str, Any]) -> str:
        tour.step("agent", f"claimed {task_id} over MCP: '{brief['task']['title']}'")
        for f in brief.get("findings") or []:
            tour.step("agent", f"  its brief holds findings of attempt {f.get('attempt')}: {f['summary']}")
            for c in f.get("criteria") or []:
                tests = "; ".join(
                    f"{t['name']}: {_first_line(t.get('message') or '')}" for t in c.get("tests") or []
                )
                tour.step(
                    "agent", f"    {c['id']} {c['result']}: {tests or _first_line(c.get('detail') or '')}"
                )
        base = m.BASE_FILES["textkit.py"]
        code = m.TRUNCATE_FIXED if fixed else m.TRUNCATE_BROKEN
        sha = tour.agent_commit(
            task_id, {"textkit.py": base + code, "tests/test_truncate.py": m.TRUNCATE_TESTS}, "truncate"
        )
        what = (
            "fixed truncate: a word boundary, a docstring"
            if fixed
            else "truncate, cutting mid-word, no docstring"
        )
        tour.step("agent", f"committed {what} ({sha[:10]}), submitting")
        return sha

    return work


def run_tour(root: Path, *, keep: bool, as_json: bool) -> int:
    say: Callable[[str], None] = (
        (lambda s: print(s, file=sys.stderr, flush=True)) if as_json else (lambda s: print(s, flush=True))
    )
    if root.exists():
        raise DemoError(
            f"{root} exists (a kept demo?): `{_me()} demo --clean{_dir_arg(root)}` stops it and removes it"
        )
    root.mkdir(parents=True)
    (root / MARKER).write_text("made by `taskgate demo`; `taskgate demo --clean` removes this directory\n")
    # Started as root, the verifier runs checks (and the reviewer script) as an unprivileged
    # user: the directory must be reachable by it. The server's data dir inside stays 0700.
    root.chmod(0o755)
    tour = Tour(root, say)
    ok = False
    try:
        tour.serve()
        tour.make_repo()
        python = tour.checks_python()
        keys = tour.set_up(python)
        first = tour.agent_turn(keys["agent"], _work_title_case(tour))
        second = tour.agent_turn(keys["agent"], _work_truncate(tour, fixed=False))
        tour.verify(keys)
        tour.step("demo", f"{first['task_id']} and {second['task_id']}: {_statuses(tour)}")
        third = tour.agent_turn(keys["agent"], _work_truncate(tour, fixed=True))
        tour.verify(keys)
        statuses = tour.task_statuses()
        link = tour.sign_in_link()
        elapsed = time.monotonic() - tour.started
        tour.step("demo", f"done in {elapsed:.0f} s: {_statuses(tour)}")
        ok = True
        result = {
            "dir": str(root),
            "server": tour.url,
            "tasks": statuses,
            "runs": [
                {k: r[k] for k in ("task_id", "commit_sha", "verdict", "task_status", "criteria")}
                for r in tour.runs
            ],
            "sign_in": link,
            # what the agent was given and did, turn by turn: the findings its brief carried
            "agent": [
                {
                    "task_id": turn["task_id"],
                    "commit_sha": turn["commit_sha"],
                    "brief_findings": [
                        {"attempt": f.get("attempt"), "criteria": f.get("criteria") or []}
                        for f in turn["brief"].get("findings") or []
                    ],
                }
                for turn in (first, second, third)
            ],
            "kept": keep,
            "seconds": round(elapsed, 1),
        }
        _finish(tour, result, keep=keep, as_json=as_json)
        return 0
    finally:
        if not ok:
            tour.stop()
            say(
                f"the demo stopped early; its files stay in {root} (serve.log, repo): "
                f"`{_me()} demo --clean{_dir_arg(root)}` removes them"
            )


def _statuses(tour: Tour) -> str:
    return ", ".join(f"{tid} {status}" for tid, status in sorted(tour.task_statuses().items()))


def runnable_as(argv0: str, on_path: str | None, cwd: Path) -> str:
    """How the person who started the demo runs `taskgate` again from where they are: `taskgate`
    when that name on their PATH is this very program, else the path they started it by
    (`.venv/bin/taskgate` before the README puts it on the PATH), relative to where they are
    when it lies below it. `python -m taskgate.cli` when it was started that way."""
    program = Path(argv0)
    if program.name != "taskgate":
        return f"{sys.executable} -m taskgate.cli"
    if "/" not in argv0:
        return "taskgate"  # found on the PATH by that name
    here = (cwd / program).resolve() if not program.is_absolute() else program.resolve()
    if on_path is not None and Path(on_path).resolve() == here:
        return "taskgate"
    if not program.is_absolute() and "/" in argv0:
        return argv0  # what they typed works from where they typed it
    try:
        return f"./{here.relative_to(cwd.resolve())}"
    except ValueError:
        return str(here)


def _me() -> str:
    return runnable_as(sys.argv[0], shutil.which("taskgate"), Path.cwd())


def _dir_arg(root: Path) -> str:
    return "" if root == DEFAULT_DIR else f" --dir {root}"


NO_WAIT = "No terminal to wait at"


def _finish(tour: Tour, result: dict[str, Any], *, keep: bool, as_json: bool) -> None:
    server = f"--server {tour.url} --data-dir {tour.root / 'data'}"
    taskgate = _me()
    lines = [
        "",
        f"The board, signed in (one-time link, 15 min): {result['sign_in']}",
        f"A task at the terminal:  {taskgate} task show {m.PROJECT}-2 {server}",
        f"Accept it (you, at a terminal): {taskgate} task accept {m.PROJECT}-1 {server}",
    ]
    if keep:
        lines.append(
            f"Kept: the server runs on (pid {tour.proc.pid if tour.proc else '?'}); files in {tour.root}."
        )
        lines.append(f"Remove it all: {taskgate} demo --clean{_dir_arg(tour.root)}")
    waits = not keep and not as_json and sys.stdin.isatty()
    if not keep and not waits:
        lines.append(
            f"{NO_WAIT}: the demo stops its server and removes {tour.root} now, so the links above "
            f"stop working. To keep the board up: {taskgate} demo --keep{_dir_arg(tour.root)} "
            f"(its server runs until `{taskgate} demo --clean`)."
        )
    if as_json:
        print(json.dumps(result, sort_keys=True), flush=True)
        for line in lines:
            print(line, file=sys.stderr)
    else:
        print("\n".join(lines), flush=True)
    if keep:
        return
    if waits:
        print(
            "The board stays up until you press Enter; then the demo stops its server and removes "
            f"{tour.root} (run `{taskgate} demo --keep` to keep them).",
            flush=True,
        )
        with contextlib.suppress(EOFError, KeyboardInterrupt):
            input()
    tour.stop()
    shutil.rmtree(tour.root, ignore_errors=True)
    print(f"removed {tour.root} and stopped its server", file=sys.stderr if as_json else sys.stdout)


def clean(root: Path) -> int:
    """Stop a kept demo's server (only if that pid is still the demo's own serve) and remove its
    directory."""
    if not root.exists():
        print(f"no demo at {root}: nothing to remove")
        return 0
    if not (root / MARKER).is_file():
        raise DemoError(f"{root} was not made by `taskgate demo` (no {MARKER} in it): nothing was removed")
    pid_file = root / PID_FILE
    if pid_file.is_file():
        pid = int(pid_file.read_text().strip() or 0)
        if pid > 0 and _is_demo_serve(pid, root):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
            print(f"stopped the demo's server (pid {pid})")
    shutil.rmtree(root)
    print(f"removed {root}")
    return 0


def _is_demo_serve(pid: int, root: Path) -> bool:
    """The pid is still the serve this demo started (its command line names the demo's data dir),
    not a process that reused the number."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"serve" in argv and str(root / "data").encode() in argv


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False


def cmd_demo(args: argparse.Namespace) -> int:
    root = Path(args.dir).expanduser().resolve()
    try:
        if args.clean:
            return clean(root)
        return run_tour(root, keep=args.keep, as_json=args.json)
    except DemoError as exc:
        print(f"taskgate demo: {exc}", file=sys.stderr)
        return 1


def register(sub: Any) -> None:  # argparse's _SubParsersAction: a private type
    d = sub.add_parser(
        "demo",
        help="a one-minute tour of the whole loop on a private server (nothing to paste)",
        description="Starts a private taskgate serve on a fresh data dir, makes a small git "
        "repository with pytest tests, sets up a project with verification on, and runs an agent "
        "over MCP and `taskgate verify` for real: one task verified, one failing with findings, "
        "fixed on the second attempt. Touches nothing of your own server or ~/.taskgate.",
    )
    d.add_argument("--dir", default=str(DEFAULT_DIR), help="where the demo works (default %(default)s)")
    how = d.add_mutually_exclusive_group()
    how.add_argument("--keep", action="store_true", help="leave its server running and its files in place")
    how.add_argument(
        "--clean", action="store_true", help="stop a kept demo's server and remove its directory"
    )
    d.add_argument("--json", action="store_true", help="steps on stderr; one JSON result on stdout")
    d.set_defaults(func=cmd_demo)
