"""The README's commands, as written, against a fresh `taskgate serve` and a real repository.

The ```bash blocks are read out of README.md (never copied here) and run in order by one bash
per phase, in a "clone" whose `.venv` is a Python the verifier's check user can run with
taskgate and pytest. A person at a terminal is played by a pseudo-terminal that types what each
confirmation prompt asks (tests/support/terminal.py). A block right under
`<!-- readme-test: skip (why) -->` is not run (it installs, serves forever, or needs a tool this
machine lacks); at `<!-- readme-test: the agent ... -->` the test plays the agent over MCP, as the
README says an agent does, between the two phases. What each phase did is read back over REST.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.events import MODERN
from tests.mcp.live import agent, run
from tests.support.server import Server, start
from tests.support.terminal import confirming_each
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


def blocks() -> tuple[list[str], list[str]]:
    """The README's bash blocks to run: those before the agent's turn, and those after."""
    before: list[str] = []
    after: list[str] | None = None
    for m in FENCE.finditer(README.read_text()):
        marker = m.group("marker") or ""
        if m.group("lang") != "bash" or marker.startswith("skip"):
            continue
        if marker.startswith("the agent"):
            assert after is None, "one agent marker"
            after = []
        (before if after is None else after).append(m.group("body"))
    assert after is not None, "the README marks where the agent works"
    return before, after


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


def phase(script: str, env: dict[str, str], cwd: Path, state: Path, *, resume: bool) -> Any:
    """Run README blocks in one bash at a terminal. Resumed, it is another terminal (the README
    runs the verifier "in a terminal of its own"): `taskgate` on its PATH and in the directory
    the last one ended in, but with none of the TASKGATE_ variables that one exported (the test
    gives TASKGATE_SERVER to both)."""
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


def test_the_readme_walks_the_loop_from_a_fresh_server(where: Path) -> None:
    before, after = blocks()
    home, clone, state = where / "home", where / "clone", where / "state"
    for d in (home, clone, state):
        d.mkdir()
    make_venv(clone / ".venv")
    repo = home / "src" / "my-app"
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "README.md").write_text("my app\n")
    (repo / ".gitignore").write_text("reports/\n__pycache__/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")

    server: Server = start(home / ".taskgate")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_") and k != "VIRTUAL_ENV"}
        env |= {
            "HOME": str(home),
            "TASKGATE_SERVER": server.url,  # the README's default port may be taken here
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # the suite's own pytest plugins: slow, not the point
            "PATH": "/usr/local/bin:/usr/bin:/bin",
        }
        phase("\n".join(before), env, clone, state, resume=False)

        admin = server.admin_token

        def rest(path: str) -> Any:
            status, out = server.request("GET", path, token=admin)
            assert status == 200, (path, status, out)
            return out

        project = rest("/api/projects/my-app")
        assert project["repo"] == str(repo) and project["verification_on"]
        assert project["execution_defaults"]["verification_commands"]
        [task] = rest("/api/projects/my-app/tasks")["items"]
        assert (task["id"], task["status"]) == ("my-app-1", "ready")

        # The agent's turn: it claims over MCP with the key the README exported, and submits.
        key = exported(state, "TASKGATE_AGENT_KEY")

        async def work() -> dict[str, Any]:
            async with agent(f"{server.url}/mcp", key, MODERN) as a:
                claimed = await a.ok("claim_task", project="my-app")
                git(repo, "checkout", "--quiet", "-b", "add-slugify")
                (repo / "slug.py").write_text(SLUG)
                (repo / "test_slug.py").write_text(SLUG_TESTS)
                git(repo, "add", "slug.py", "test_slug.py")
                git(repo, "commit", "--quiet", "-m", "slugify")
                return await a.ok(
                    "submit_task",
                    task_id=claimed["task_id"],
                    claim_token=claimed["claim_token"],
                    commit_sha=git(repo, "rev-parse", "HEAD"),
                    evidence="slugify with its tests",
                )

        run(work())
        assert rest("/api/tasks/my-app-1")["task"]["status"] == "needs_verification"

        done = phase("\n".join(after), env, clone, state, resume=True)
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
        shown = done.stdout[done.stdout.index("my-app-1  verified") :]
        assert "AC-1.1 (test) digits are kept" in shown and "1 test passed" in shown
        assert "attempts:" in shown and "verification runs:" in shown
        assert not rest("/api/projects/my-app")["verification_on"]  # the Security model's script
        keys = {k["name"] for k in rest("/api/keys")["items"]}
        assert {"alice", "archie", "ci"} <= keys
        # The files the walk wrote are outside the repository: its tree holds the agent's work only.
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
        written = sorted(p.name for p in (home / "taskgate-files").iterdir())
        assert written == ["checks.json", "my-app-1.intoto.jsonl", "spec.md", "taskgate.pem"]
    finally:
        server.stop()


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
