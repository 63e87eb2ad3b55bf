"""The executor commits straight onto the base branch (a local repository, the agent on `main`).

The merge-base of such a submission with `main` is the submission itself: measured that way,
nothing changed, and no rule on changed paths applies. The server records `main`'s tip when the
task is claimed; the verifier judges a submission already on `main` against that tip, and
against the empty tree when it is not known. A real `taskgate serve`, the agent over MCP, real
git commits and a real `taskgate verify` running pytest."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskgate.service.commits import base_tip
from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run, serving
from tests.support.cheats import ALL_PASS
from tests.support.users import shared_tmp
from tests.verifier.support import (
    BROKEN,
    KEEPS_DIGITS,
    SLUGIFY,
    SLUGIFY_TESTS,
    Gate,
    Repo,
    git,
    pytest_config,
)


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()  # the checks may run as another user, who must reach the repositories


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-claimbase"))


def _repo(tmp_path: Path) -> Repo:
    """`main` holds the broken slugify and its tests, in two commits; the agent stays on it."""
    repo = Repo.create(tmp_path / "repo", {"slug.py": BROKEN, ".gitignore": "reports/\n"})
    repo.commit({"test_slug.py": SLUGIFY_TESTS}, "tests")
    return repo


def _claim(gate: Gate, tid: str) -> str:
    async def go() -> str:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            claimed = await a.ok("claim_task", project=gate.project, task_id=tid)
            return str(claimed["claim_token"])

    return run(go())


def _submit(gate: Gate, tid: str, token: str, sha: str) -> None:
    async def go() -> None:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            await a.ok(
                "submit_task", task_id=tid, claim_token=token, commit_sha=sha, evidence="fixed; tests pass"
            )

    run(go())


def _run(gate: Gate, tid: str) -> dict[str, Any]:
    return dict(gate.detail(tid)["runs"][0])


def _baseline_facts(run_: dict[str, Any]) -> dict[str, Any]:
    payload = json.loads(base64.b64decode(run_["attestation"]["payload"]))
    facts: dict[str, Any] = payload["predicate"]["taskgate"]["baseline"]
    return facts


def test_a_passing_conftest_committed_on_main_is_held_for_a_human(live: Live, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task([KEEPS_DIGITS])
    claimed_at = git(repo.path, "rev-parse", "HEAD")
    token = _claim(gate, tid)
    sha = repo.commit({"conftest.py": ALL_PASS}, "make the tests pass")  # on main; slugify broken
    assert git(repo.path, "rev-parse", "main") == sha
    _submit(gate, tid, token, sha)
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert task["attempts"][0]["claimed_tip"] == {"branch": "main", "commit": claimed_at}
    # Committed on main, the submission is its own baseline: its conftest judges the grading run
    # too, and bends the tripwires, named after the held path.
    reason = task["needs_human"]["reason"]
    assert reason.startswith("the submission changes protected paths: conftest.py; and the grader was bent: ")
    assert "it was reported passed" in reason
    assert task["attempts_used"] == 0
    run_ = _run(gate, tid)
    assert (run_["baseline"]["commit"], run_["baseline"]["why"]) == (claimed_at, None)
    assert run_["baseline"]["changed"] == ["conftest.py"]
    assert _baseline_facts(run_)["commit"] == claimed_at


def test_the_honest_fix_alone_on_main_still_verifies(live: Live, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task([KEEPS_DIGITS])
    claimed_at = git(repo.path, "rev-parse", "HEAD")
    token = _claim(gate, tid)
    repo.commit({"slug.py": SLUGIFY}, "keep digits")
    sha = repo.commit({"NOTES.md": "digits are kept now\n"}, "notes")  # two commits on main
    _submit(gate, tid, token, sha)
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    run_ = _run(gate, tid)
    assert run_["baseline"]["commit"] == claimed_at
    assert run_["baseline"]["changed"] == ["NOTES.md", "slug.py"]


def test_the_claim_time_tip_is_the_named_base_branch(live: Live, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    git(repo.path, "checkout", "--quiet", "-b", "trunk")
    gate = Gate.create(live, repo, pytest_config(base_branch="trunk"))
    tid = gate.task([KEEPS_DIGITS])
    claimed_at = git(repo.path, "rev-parse", "HEAD")
    token = _claim(gate, tid)
    sha = repo.commit({"conftest.py": ALL_PASS}, "make the tests pass")  # on trunk
    _submit(gate, tid, token, sha)
    [line] = gate.verify_json()
    assert line["verdict"] == "needs_human", line
    assert gate.detail(tid)["task"]["attempts"][0]["claimed_tip"] == {"branch": "trunk", "commit": claimed_at}
    assert _run(gate, tid)["baseline"]["commit"] == claimed_at


def test_main_rewound_under_the_claim_is_judged_against_the_empty_tree(live: Live, tmp_path: Path) -> None:
    # The gated agent drops the claim-time tip from main's history, so that it is no ancestor.
    repo = _repo(tmp_path)
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task([KEEPS_DIGITS])
    claimed_at = git(repo.path, "rev-parse", "HEAD")
    token = _claim(gate, tid)
    git(repo.path, "reset", "--quiet", "--hard", "HEAD~1")
    sha = repo.commit({"test_slug.py": SLUGIFY_TESTS, "conftest.py": ALL_PASS}, "tests, and a harness")
    _submit(gate, tid, token, sha)
    [line] = gate.verify_json()
    assert line["verdict"] == "needs_human", line
    run_ = _run(gate, tid)
    why = (
        f"the submission is already on main and the tip when it was claimed, {claimed_at[:12]}, "
        "is not one of its ancestors"
    )
    assert (run_["baseline"]["commit"], run_["baseline"]["why"]) == (None, why)
    assert run_["baseline"]["changed"] == [".gitignore", "conftest.py", "slug.py", "test_slug.py"]
    facts = _baseline_facts(run_)
    assert (facts["commit"], facts["none"]) == (None, why)


def test_an_unknown_claim_time_tip_is_said_and_the_empty_tree_judges(live: Live, tmp_path: Path) -> None:
    # The server cannot read a repository it knows by URL: it records no tip at the claim.
    repo = _repo(tmp_path)
    gate = Gate.create(live, repo, pytest_config(), url=f"file://{repo.path}")
    tid = gate.task([KEEPS_DIGITS])
    token = _claim(gate, tid)
    sha = repo.commit({"conftest.py": ALL_PASS}, "make the tests pass")
    _submit(gate, tid, token, sha)
    [line] = gate.verify_json()
    assert line["verdict"] == "needs_human", line
    assert gate.detail(tid)["task"]["attempts"][0]["claimed_tip"] is None
    run_ = _run(gate, tid)
    why = "the submission is already on main and the tip when it was claimed is not known"
    assert (run_["baseline"]["commit"], run_["baseline"]["why"]) == (None, why)
    assert "conftest.py" in run_["baseline"]["protected"]
    assert _baseline_facts(run_)["none"] == why


def test_a_work_branch_keeps_the_merge_base(live: Live, tmp_path: Path) -> None:
    # The claim-time tip is only for a submission already on the base branch: on a branch, main
    # moving on after the claim changes nothing of the baseline.
    repo = _repo(tmp_path)
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task([KEEPS_DIGITS])
    fork = git(repo.path, "rev-parse", "HEAD")
    token = _claim(gate, tid)
    repo.branch("work")
    sha = repo.commit({"slug.py": SLUGIFY}, "keep digits")
    git(repo.path, "checkout", "--quiet", "main")
    repo.commit({"README.md": "main moves on\n"}, "docs")
    _submit(gate, tid, token, sha)
    [line] = gate.verify_json()
    assert line["verdict"] == "passed", line
    assert _run(gate, tid)["baseline"]["commit"] == fork


# -- the server's reading of the tip ------------------------------------------------------------


def test_base_tip_reads_main_else_the_head_branch_else_nothing(tmp_path: Path) -> None:
    repo = Repo.create(tmp_path / "r", {"a.txt": "a\n"})
    main = git(repo.path, "rev-parse", "HEAD")
    tip = base_tip(str(repo.path), None)
    assert tip is not None and (tip.branch, tip.commit) == ("main", main)
    git(repo.path, "branch", "-m", "main", "trunk")
    tip = base_tip(str(repo.path), None)
    assert tip is not None and (tip.branch, tip.commit) == ("trunk", main)
    assert base_tip(str(repo.path), "nope") is None
    assert base_tip(str(repo.path), "--upload-pack=touch x") is None
    assert base_tip(f"file://{repo.path}", None) is None
    assert base_tip(str(tmp_path / "absent"), None) is None
