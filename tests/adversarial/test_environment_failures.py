"""A check that fails as if its environment were broken (its runner cannot start, or it writes
no report) is run again on the baseline's tree; failing the same way there, the run is an error
of the verifier's side and uses no attempt. The submission breaking the check itself stays its
own failure. A real `taskgate serve`, real git, `taskgate verify` running real processes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.live import Live, serving
from tests.support.users import shared_tmp
from tests.verifier.support import PYTHON, Gate, Repo

REPORT = {"path": "reports/results.json", "format": "json"}
CHECK_PY = """\
import json, os, sys
os.makedirs("reports", exist_ok=True)
from answer import VALUE
ok = VALUE == 42
json.dump({"tests": [{"id": "answer.is_42", "status": "passed" if ok else "failed"}]}, open("reports/results.json", "w"))
sys.exit(0 if ok else 1)
"""
# The submission's code ends its check with a shell's words and exit 127 (through exec, which
# the screen for code that ends its grader does not list).
ANSWER_127 = """\
import os
os.execv("/bin/sh", ["sh", "-c", "echo 'sh: 1: .venv/bin/python: not found'; exit 127"])
"""
ANSWER = {"text": "the answer is 42", "kind": "test", "verify_ref": "answer.is_42"}


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    yield from shared_tmp()  # the checks may run as another user, who must reach the repositories


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-environment"))


def _gate(live: Live, tmp_path: Path, command: str, **config: Any) -> Gate:
    repo = Repo.create(tmp_path / "repo", {"check.py": CHECK_PY, "answer.py": "VALUE = 41\n"})
    repo.branch("work")
    return Gate.create(
        live,
        repo,
        {"check_timeout_minutes": 1, "checks": {"unit": {"command": command, "report": REPORT}}, **config},
    )


def _error(gate: Gate, tid: str, line: dict[str, Any]) -> str:
    assert (line["verdict"], line["task_status"]) == ("error", "needs_verification"), line
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 0 and task["verifier_errors_in_row"] == 1
    [run] = gate.detail(tid)["runs"]
    return str(run["summary"])


def test_a_venv_python_that_is_not_there_is_an_error_not_an_attempt(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path, ".venv/bin/python check.py")
    tid = gate.task([ANSWER])
    gate.submit(tid, gate.repo.commit({"answer.py": "VALUE = 42\n"}))
    [line] = gate.verify_json()
    assert line["checks"]["unit"]["exit_code"] == 127, line
    summary = _error(gate, tid, line)
    assert summary.startswith(
        "verifier error: check unit fails on the baseline too (exit 127 (its command not found or not executable)): "
        "the check does not run in this verifier's environment, so the submission was not tried"
    ), summary


def test_no_module_named_pytest_is_an_error_not_an_attempt(live: Live, tmp_path: Path) -> None:
    bare = tmp_path / "bare"  # a Python with no pytest: a fresh venv without site-packages
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=60)
    gate = _gate(live, tmp_path, f"{bare}/bin/python -m pytest -q --junitxml=reports/junit.xml")
    tid = gate.task([ANSWER])
    gate.submit(tid, gate.repo.commit({"answer.py": "VALUE = 42\n"}))
    [line] = gate.verify_json()
    assert "No module named pytest" in line["checks"]["unit"]["output_tail"], line
    summary = _error(gate, tid, line)
    assert summary.startswith(
        "verifier error: check unit fails on the baseline too (exit 1, `No module named pytest`)"
    ), summary


def test_a_submission_that_breaks_its_check_fails_and_uses_an_attempt(live: Live, tmp_path: Path) -> None:
    # The check crashes before writing its report because the submission deleted a file it
    # imports: on the baseline's tree it writes one, so the failure is the submission's.
    gate = _gate(live, tmp_path, f"{PYTHON} check.py")
    tid = gate.task([ANSWER])
    (gate.repo.path / "answer.py").unlink()
    gate.submit(tid, gate.repo.commit({"NOTES.md": "no answer\n"}))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    assert gate.detail(tid)["task"]["attempts_used"] == 1


def test_a_submission_that_exits_127_itself_fails(live: Live, tmp_path: Path) -> None:
    # The checked code exits 127 in the shell's words, with no report: the baseline's does not.
    # Its exec is a road the screen holds; a human has allowed it here, as the hold offers.
    gate = _gate(live, tmp_path, f"{PYTHON} check.py", screen_allow={"answer.py": ["py.exit"]})
    tid = gate.task([ANSWER])
    gate.submit(
        tid,
        gate.repo.commit({"answer.py": ANSWER_127}),
    )
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    assert gate.detail(tid)["task"]["attempts_used"] == 1
