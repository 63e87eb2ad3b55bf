"""What the verifier cannot read is a human's call: a real `taskgate serve`, real
git, `taskgate verify` as a subprocess running real pytest. The gated agent hides the fix where
the screen does not read: committed bytecode that Python loads instead of the unchanged source, a
source file that is a link, code in a test file no runner collects. Each run waits for a human
with the paths named, no attempt used; a human may allow the paths. The honest controls (a new
test file the runner collects, helpers in tests/__init__.py, an optional-import probe, a check
that installs the project) verify with no human."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.live import Live, serving
from tests.support.users import shared_tmp
from tests.verifier.support import (
    BROKEN,
    KEEPS_DIGITS,
    PYTEST_CHECK,
    PYTHON,
    SLUGIFY,
    SLUGIFY_TESTS,
    Gate,
    Repo,
    git,
)

WAY_OUT = "A human decides: send it back to the executor, or allow it and verify again"


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()  # the checks may run as another user, who must reach the repositories


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-unreadable"))


def _gate(
    live: Live, tmp_path: Path, files: dict[str, str] | None = None, config: dict[str, Any] | None = None
) -> Gate:
    base = {"slug.py": BROKEN, "tests/test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"}
    repo = Repo.create(tmp_path / "repo", {**base, **(files or {})})
    repo.branch("work")
    return Gate.create(live, repo, config or _tests_dir_config())


def _tests_dir_config() -> dict[str, Any]:
    """pytest over tests/ only, with the checkout on the import path (as `python -m pytest` puts it)."""
    check = {**PYTEST_CHECK, "command": PYTEST_CHECK["command"] + " tests"}
    return {"check_timeout_minutes": 2, "checks": {"unit": check}}


REF = {**KEEPS_DIGITS, "verify_ref": "tests.test_slug.TestSlugify.test_keeps_digits"}


def _submit_commit(gate: Gate, tid: str) -> dict[str, Any]:
    git(gate.repo.path, "add", "-A")
    git(gate.repo.path, "commit", "--quiet", "-m", "the change")
    gate.submit(tid, git(gate.repo.path, "rev-parse", "HEAD"))
    [line] = gate.verify_json()
    return line


def _unchecked_pyc(tmp: Path) -> tuple[str, bytes]:
    """The fixed slugify compiled by the checks' Python as a hash-based pyc that is never checked
    against its source: (its path beside slug.py, its bytes)."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "slug.py").write_text(SLUGIFY)
    code = (
        "import importlib.util, py_compile, sys; src = sys.argv[1]; "
        "out = py_compile.compile(src, cfile=importlib.util.cache_from_source(src), doraise=True, "
        "invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH); print(out)"
    )
    done = subprocess.run(
        [PYTHON, "-c", code, str(tmp / "slug.py")], capture_output=True, text=True, check=True
    )
    out = Path(done.stdout.strip())
    return f"__pycache__/{out.name}", out.read_bytes()


def test_committed_bytecode_that_loads_instead_of_the_source_is_held(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([REF])
    rel, data = _unchecked_pyc(tmp_path / "compile")
    (gate.repo.path / rel).parent.mkdir()
    (gate.repo.path / rel).write_bytes(data)
    line = _submit_commit(gate, tid)
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert task["needs_human"]["why"] == "held" and task["attempts_used"] == 0
    assert task["needs_human"]["paths"] == [rel]
    assert task["needs_human"]["reason"] == (
        f"the submission adds files the verifier cannot read as source: {rel} (bytecode). {WAY_OUT}"
    )
    # the bytecode did make the named test pass: the hold is not a failure of the check
    [run] = gate.detail(tid)["runs"]
    assert run["evidence"]["AC-1.1"]["result"] == "pass"
    assert run["loading"] == [{"path": rel, "kind": "bytecode", "why": "bytecode"}]


def test_a_human_allowing_the_bytecode_verifies_the_run(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([REF])
    rel, data = _unchecked_pyc(tmp_path / "compile")
    (gate.repo.path / rel).parent.mkdir()
    (gate.repo.path / rel).write_bytes(data)
    assert _submit_commit(gate, tid)["verdict"] == "needs_human"
    r = gate.live.rest(
        "POST", f"/api/tasks/{tid}/resolve", {"resolution": "allow", "note": "a vendored build"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["allowed"]["paths"] == [rel]
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line


def test_a_source_file_that_is_a_link_is_held(live: Live, tmp_path: Path) -> None:
    """slug.py becomes a link to a file the screen skips (not a source suffix)."""
    gate = _gate(live, tmp_path)
    tid = gate.task([REF])
    (gate.repo.path / "vendor").mkdir()
    (gate.repo.path / "vendor/slug.txt").write_text(SLUGIFY)
    (gate.repo.path / "slug.py").unlink()
    (gate.repo.path / "slug.py").symlink_to("vendor/slug.txt")
    line = _submit_commit(gate, tid)
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert task["needs_human"]["paths"] == ["slug.py"]
    assert task["needs_human"]["reason"] == (
        f"the submission adds files the verifier cannot read as source: slug.py (symlink to vendor/slug.txt). {WAY_OUT}"
    )


def test_code_in_a_test_file_no_runner_collects_is_held(live: Live, tmp_path: Path) -> None:
    """The check runs `pytest tests`; the fix hides in test_support.py at the top (a test file by
    its name, so the screen skips it; outside tests/, so nothing collects it)."""
    gate = _gate(live, tmp_path)
    tid = gate.task([REF])
    gate.repo.write(
        {"test_support.py": SLUGIFY, "slug.py": "from test_support import slugify  # noqa: F401\n"}
    )
    line = _submit_commit(gate, tid)
    assert (line["verdict"], line["task_status"]) == ("needs_human", "needs_human"), line
    task = gate.detail(tid)["task"]
    assert task["needs_human"]["paths"] == ["test_support.py"]
    # the screen sees the import of a test file too: the reason names both
    assert task["needs_human"]["reason"].startswith(
        "the submission adds test files no runner collects: test_support.py (no report names a test "
        f"from it). {WAY_OUT}; and the submission adds code that reads or ends its grader (py.test_files)"
    )


def test_the_fix_with_a_new_collected_test_file_and_package_helpers_verifies(
    live: Live, tmp_path: Path
) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([REF])
    helpers = '"""Test helpers shared by the test modules."""\n\nCASES = [("Route 66", "route-66")]\n'
    more = (
        "from slug import slugify\nfrom tests import CASES\n\n\n"
        "def test_cases():\n    for given, want in CASES:\n        assert slugify(given) == want\n"
    )
    gate.repo.write({"slug.py": SLUGIFY, "tests/__init__.py": helpers, "tests/test_more.py": more})
    line = _submit_commit(gate, tid)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    [run] = gate.detail(tid)["runs"]
    assert run["loading"] == []


def test_the_fix_with_an_optional_import_probe_verifies(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([REF])
    probe = (
        "try:\n    import unidecode  # an optional accelerator\nexcept ImportError:\n    unidecode = None\n\n"
    )
    gate.repo.write({"slug.py": probe + SLUGIFY})
    line = _submit_commit(gate, tid)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line


SETUP = 'from setuptools import setup\n\nsetup(name="slug", version="0.1", py_modules=["slug"])\n'


def test_the_fix_under_a_check_that_installs_the_project_verifies(live: Live, tmp_path: Path) -> None:
    """The check builds and installs the project from its setup.py (unchanged by the submission)
    before the tests: the honest fix holds nothing."""
    pytest_command = PYTEST_CHECK["command"].replace(
        f"{PYTHON} -m pytest", f"PYTHONPATH=.deps {PYTHON} -m pytest"
    )
    check = {
        **PYTEST_CHECK,
        "command": f"{PYTHON} setup.py -q build --build-lib .deps && {pytest_command} tests",
    }
    gate = _gate(
        live,
        tmp_path,
        {"setup.py": SETUP, ".gitignore": "reports/\n.deps/\nbuild/\n"},
        {"check_timeout_minutes": 3, "checks": {"unit": check}},
    )
    tid = gate.task([REF])
    gate.repo.write({"slug.py": SLUGIFY})
    line = _submit_commit(gate, tid)
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
