"""The README's commands, as written, against a fresh `taskgate serve` and real repositories: a
Python project (pytest) and a JavaScript one (`node --test`).

The ```bash blocks are read out of README.md (never copied here) and run in order, one bash per
phase, in a "clone" whose `.venv` is a Python the verifier's check user can run with taskgate
and pytest. A person at a terminal is played by a pseudo-terminal that types what each
confirmation prompt asks (tests/support/terminal.py). A block right under
`<!-- readme-test: skip (why) -->` is not run (it installs, serves forever, or needs a tool this
machine lacks); at each `<!-- readme-test: the agent ... -->` the test plays the agent over MCP,
as the README says an agent does, in a git worktree of its own (so the person's checkout stays
on main, as it would), and a new phase starts. What each phase did is read back over REST.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.events import MODERN
from tests.mcp.live import agent, run
from tests.support.server import Server, start
from tests.support.terminal import Ran, confirming_each
from tests.support.users import _suite_paths, check_python, shared_tmp
from tests.verifier.support import git

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(
    r"(?:<!-- readme-test: (?P<marker>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.DOTALL
)

SLUG = """\
import re


def slugify(text):
    \"\"\"A URL slug: lowercase ASCII words joined by '-'.\"\"\"
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
"""
SLUG_TESTS = """\
from slug import slugify


def test_keeps_digits():
    assert slugify("Route 66") == "route-66"


def test_lowercases():
    assert slugify("Hello World") == "hello-world"
"""
# The JavaScript library, first as an agent gets it wrong (digits dropped), then fixed.
SLUG_JS_WRONG = """\
function slugify(text) {
  return text.toLowerCase().replace(/[^a-z]+/g, "-").replace(/^-+|-+$/g, "");
}

module.exports = { slugify };
"""
SLUG_JS = SLUG_JS_WRONG.replace("[^a-z]+", "[^a-z0-9]+")
SLUG_JS_TESTS = """\
const { describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { slugify } = require("../slug.js");

describe("slugify", () => {
  it("keeps digits", () => {
    assert.equal(slugify("Route 66"), "route-66");
  });
  it("lowercases", () => {
    assert.equal(slugify("Hello World"), "hello-world");
  });
});
"""


@dataclass
class Phase:
    marker: str  # the agent's turn that starts it ("" for the first)
    bodies: list[str] = field(default_factory=list)


def phases() -> list[Phase]:
    """The README's bash blocks to run, split at each agent's turn."""
    out = [Phase("")]
    for m in FENCE.finditer(README.read_text()):
        marker = m.group("marker") or ""
        if m.group("lang") != "bash" or marker.startswith("skip"):
            continue
        if marker.startswith("the agent"):
            out.append(Phase(marker))
        out[-1].bodies.append(m.group("body"))
    return out


def make_venv(venv: Path) -> None:
    """The clone's .venv, as `pip install -e .` would leave it: a real venv (its bin/activate is
    what the README sources) on a Python the check user can run, seeing this suite's packages
    (taskgate, pytest) through a .pth, with a `taskgate` script."""
    base = Path(check_python()).resolve()  # under root: a system Python, not one under /root
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    [site] = (venv / "lib").glob("python3.*/site-packages")
    (site / "_taskgate_suite.pth").write_text("\n".join(_suite_paths()) + "\n")
    launcher = venv / "bin" / "taskgate"
    launcher.write_text(f"#!{venv}/bin/python\nimport sys\nfrom taskgate.cli import main\nsys.exit(main())\n")
    launcher.chmod(0o755)


@pytest.fixture
def where() -> Iterator[Path]:
    yield from shared_tmp()  # the repository must be reachable by the verifier's check user


def phase(script: str, env: dict[str, str], cwd: Path, state: Path, *, resume: bool) -> Ran:
    """Run README blocks in one bash at a terminal. Resumed, it is another terminal (the README
    runs the verifier "in a terminal of its own"): `taskgate` on its PATH and in the directory
    the last one ended in, but with none of the TASKGATE_ variables that one exported (the test
    gives TASKGATE_SERVER to all)."""
    head = "set -eo pipefail\n"
    if resume:
        head += f'source "{state}/terminal-env"\ncd "$(cat "{state}/cwd")"\n'
    tail = (
        f'\nexport -p | grep -v "^declare -[a-z]*r" > "{state}/env"\n'
        f'grep -v "^declare -x TASKGATE_" "{state}/env" > "{state}/terminal-env"\npwd > "{state}/cwd"\n'
    )
    done = confirming_each(["/bin/bash", "-c", head + script + tail], env, cwd=str(cwd), timeout=300)
    assert done.returncode == 0, (
        done.returncode,
        done.stdout[-3000:],
        done.stderr[-3000:],
        done.terminal[-1000:],
    )
    return done


def exported(state: Path, name: str) -> str:
    m = re.search(rf'^declare -x {name}="([^"]*)"$', (state / "env").read_text(), re.MULTILINE)
    assert m, f"{name} was not exported by the README's commands"
    return m.group(1)


def repository(path: Path, ignore: str) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    (path / "README.md").write_text(f"{path.name}\n")
    (path / ".gitignore").write_text(ignore)
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "base")
    return path


class Agent:
    """The agent the README's markers name: it works in a worktree of each repository (the
    person's checkout is never touched), commits, and claims and submits over MCP."""

    def __init__(self, server: Server, state: Path, repos: dict[str, Path], where: Path) -> None:
        self.server, self.state, self.repos, self.where = server, state, repos, where
        self.claims: dict[str, str] = {}
        self.keys: dict[str, str] = {}  # the key each project's agent was given, at its first turn

    def worktree(self, project: str) -> Path:
        tree = self.where / f"agent-{project}"
        if not tree.exists():
            git(self.repos[project], "worktree", "add", "--quiet", "-b", "add-slugify", str(tree))
        return tree

    def commit(self, project: str, files: dict[str, str], message: str) -> str:
        tree = self.worktree(project)
        for name, text in files.items():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text(text)
        git(tree, "add", *files)
        git(tree, "commit", "--quiet", "-m", message)
        return git(tree, "rev-parse", "HEAD")

    def submit(self, task: str, files: dict[str, str], self_report: dict[str, str]) -> dict[str, Any]:
        project = task.rsplit("-", 1)[0]
        if project not in self.keys:
            self.keys[project] = exported(self.state, "TASKGATE_AGENT_KEY")
        key = self.keys[project]

        async def work() -> dict[str, Any]:
            async with agent(f"{self.server.url}/mcp", key, MODERN) as a:
                if task not in self.claims:
                    claimed = await a.ok("claim_task", project=project)
                    assert claimed["task_id"] == task, claimed
                    self.claims[task] = claimed["claim_token"]
                sha = self.commit(project, files, f"slugify ({len(self.claims)})")
                return await a.ok(
                    "submit_task",
                    task_id=task,
                    claim_token=self.claims.pop(task),
                    commit_sha=sha,
                    evidence="slugify with its tests",
                    self_report=self_report,
                )

        return run(work())

    def turn(self, marker: str) -> None:
        if "my-app-1" in marker:
            self.submit("my-app-1", {"slug.py": SLUG, "test_slug.py": SLUG_TESTS}, {})
        elif "my-lib-1 and submits a wrong commit" in marker:
            files = {"slug.js": SLUG_JS_WRONG, "test/slug.test.js": SLUG_JS_TESTS}
            self.submit("my-lib-1", files, {"AC-1.1": "pass", "AC-1.2": "pass"})  # it did not run them
        elif "fix for my-lib-1" in marker:
            self.submit_fix("my-lib-1")
        else:
            raise AssertionError(f"no agent for the README's marker {marker!r}")

    def submit_fix(self, task: str) -> None:
        """A failed attempt leaves the task ready: the agent claims it again and submits the fix."""
        self.submit(task, {"slug.js": SLUG_JS}, {})


def test_the_readme_walks_the_loop_from_a_fresh_server(where: Path) -> None:
    first, *turns = phases()
    assert [t.marker for t in turns] == [
        "the agent claims my-app-1 and submits a commit here",
        "the agent claims my-lib-1 and submits a wrong commit here",
        "the agent submits its fix for my-lib-1 here",
    ]
    home, clone, state = where / "home", where / "clone", where / "state"
    for d in (home, clone, state):
        d.mkdir()
    make_venv(clone / ".venv")
    repos = {
        "my-app": repository(home / "src" / "my-app", "reports/\n__pycache__/\n"),
        "my-lib": repository(home / "src" / "my-lib", "reports/\nnode_modules/\n"),
    }

    server: Server = start(home / ".taskgate")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_") and k != "VIRTUAL_ENV"}
        env |= {
            "HOME": str(home),
            "TASKGATE_SERVER": server.url,  # the README's default port may be taken here
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # the suite's own pytest plugins: slow, not the point
            "PATH": "/usr/local/bin:/usr/bin:/bin",
        }
        said = [phase("\n".join(first.bodies), env, clone, state, resume=False)]

        admin = server.admin_token

        def rest(path: str) -> Any:
            status, out = server.request("GET", path, token=admin)
            assert status == 200, (path, status, out)
            return out

        project = rest("/api/projects/my-app")
        assert project["repo"] == str(repos["my-app"]) and project["verification_on"]
        assert project["execution_defaults"]["verification_commands"]
        [task] = rest("/api/projects/my-app/tasks")["items"]
        assert (task["id"], task["status"]) == ("my-app-1", "ready")
        # The example agent's dry run looked at my-app-1 and left it as it was.
        assert "would claim my-app-1 (of 1 ready); nothing was claimed" in said[0].stdout
        assert [e["action"] for e in rest("/api/tasks/my-app-1")["history"]] == ["create_ready"]

        agent_ = Agent(server, state, repos, where)
        for turn in turns:
            agent_.turn(turn.marker)
            said.append(phase("\n".join(turn.bodies), env, clone, state, resume=True))

        _the_python_project(rest, said[1])
        _the_javascript_project(rest, said[2], said[3])
        # The proof, checked as written: against the commit the task was submitted with (the
        # person's checkout is on main, which never had it), then the project's audit.
        last = said[-1].stdout
        assert "OK: 2 statements (test-result, verification_summary) signed by key" in last, last
        assert "the commit my-app-1 was submitted with" in last
        assert re.search(r"^1 task, \d+ events, 2 signed statements: every chain matches$", last, re.M), last
        assert git(repos["my-app"], "rev-parse", "--abbrev-ref", "HEAD") == "main"

        assert not rest("/api/projects/my-app")["verification_on"]  # the Security model's script
        keys = {k["name"] for k in rest("/api/keys")["items"]}
        assert {"alice", "archie", "ci", "bob", "ci-lib"} <= keys
        # The files the walk wrote are outside the repositories: their trees hold nothing new.
        for repo in repos.values():
            assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
        written = sorted(p.name for p in (home / "taskgate-files").iterdir())
        assert written == [
            "checks.json",
            "lib-checks.json",
            "lib-spec.md",
            "my-app-1.intoto.jsonl",
            "spec.md",
            "taskgate.pem",
        ]
    finally:
        server.stop()


def _the_python_project(rest: Any, said: Ran) -> None:
    detail = rest("/api/tasks/my-app-1")
    assert detail["task"]["status"] == "done"
    [verified] = detail["runs"]
    assert verified["status"] == "passed", verified
    assert {cid: e["result"] for cid, e in verified["evidence"].items()} == {
        "AC-1.1": "pass",
        "AC-1.2": "pass",
        "AC-1.3": "pass",
    }
    accepted = [e for e in detail["history"] if e["action"].startswith("accept")]
    assert accepted and accepted[-1]["actor"].startswith("human:")
    # task show, as the README ran it: criteria with the run's evidence, attempts, runs
    shown = said.stdout[said.stdout.index("my-app-1  verified") :]
    assert "AC-1.1 (test) digits are kept" in shown and "1 test passed" in shown
    assert "attempts:" in shown and "verification runs:" in shown


def _the_javascript_project(rest: Any, failing: Ran, fixed: Ran) -> None:
    config = rest("/api/projects/my-lib/verifier-config")["config"]
    assert list(config["checks"]) == ["node-test"]  # named for what it runs, not `mkdir`
    detail = rest("/api/tasks/my-lib-1")
    assert detail["task"]["status"] == "done"
    wrong, right = detail["runs"]
    assert (wrong["status"], right["status"]) == ("failed", "passed")
    assert {cid: e["result"] for cid, e in right["evidence"].items()} == {"AC-1.1": "pass", "AC-1.2": "pass"}
    [finding] = detail["task"]["findings"]
    assert finding["self_report_mismatch"] == ["AC-1.1"]  # it said pass; the verifier found a fail
    [check] = finding["checks"]
    assert check["name"] == "node-test" and "✖ keeps digits" in check["output_end"]  # the spec reporter
    [criterion] = finding["criteria"]
    [test] = criterion["tests"]
    assert test["name"] == "slugify > keeps digits"
    assert "Expected values to be strictly equal:\n" in test["message"]  # its lines, as the runner wrote them
    assert "\n+ 'route'\n- 'route-66'\n" in test["message"]

    # `task show`, as the README ran it after the failing run: the message line by line, then
    # the check's name and the end of its readable output.
    shown = failing.stdout[failing.stdout.index("my-lib-1  ready") :]
    lines = shown.splitlines()
    at = lines.index("      test slugify > keeps digits:")
    assert lines[at + 1].strip() == "Expected values to be strictly equal:"
    assert lines[at + 2 : at + 6] == [
        "        + actual - expected",
        "",
        "        + 'route'",
        "        - 'route-66'",
    ], lines[at : at + 6]
    assert "    the agent reported pass for AC-1.1, which the verifier did not find" in lines
    assert "    - check node-test exited 1; its output ends:" in lines
    assert "✖ keeps digits" in shown
    assert "my-lib-1 is done" in fixed.stdout


REPO_PATH = re.compile(
    r"(?:\]\(|`)((?:docs|scripts|src|tests|bench|web|functions|verifier_container)/[\w./-]+)[)`]"
)


def test_the_readme_names_only_files_a_clone_has() -> None:
    text = README.read_text()
    root = README.parent
    named = set(REPO_PATH.findall(text))
    assert "docs/deploy.md" in named  # the pattern finds what it should
    missing = sorted(p for p in named if not (root / p).exists())
    assert not missing, missing
    assert "../" not in text and "seed 000" not in text.lower()


def test_the_readmes_commands_write_their_files_outside_the_repository() -> None:
    """A file the walk writes (a spec, the verifier config, a key, a proof) is named under
    ~/taskgate-files, never relative to the repository the commands run in."""
    written = []
    for m in FENCE.finditer(README.read_text()):
        if m.group("lang") == "bash":
            written += re.findall(r"[^\s'\"()=]+\.(?:md|json|pem|jsonl)\b", m.group("body"))
    assert len(written) >= 6, written
    assert [w for w in written if not w.startswith("~/taskgate-files/")] == []


def test_the_first_screen_sets_up_with_two_commands() -> None:
    first = next(m for m in FENCE.finditer(README.read_text()) if m.group("lang") == "bash")
    commands = [
        line for line in first.group("body").splitlines() if line.strip() and not line.startswith("#")
    ]
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/taskgate serve",
        "bash scripts/test.sh",
    ]


def test_the_readmes_json_parses_and_its_verifier_config_is_valid() -> None:
    from taskgate.domain.verifier_config import VerifierConfig

    docs: list[Any] = []
    for m in FENCE.finditer(README.read_text()):
        if m.group("lang") != "json":
            continue
        text, at = m.group("body"), 0
        decoder = json.JSONDecoder()
        while text[at:].strip():  # a block may hold several objects, one after another
            at += len(text[at:]) - len(text[at:].lstrip())
            doc, end = decoder.raw_decode(text, at)
            docs.append(doc)
            at = end
    configs = [d for d in docs if isinstance(d, dict) and "checks" in d]
    assert configs, "the README shows a verifier config"
    for c in configs:
        VerifierConfig.model_validate(c)
    tools = {d["tool"] for d in docs if isinstance(d, dict) and "tool" in d}
    assert tools == {"create_spec", "create_task"}
