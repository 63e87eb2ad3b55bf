"""A tool the verifier lacks is the verifier's error, never the executor's failure: a check, a
command criterion or the reviewer whose shell cannot run one of its configured tools ends the
run as an error naming the tool (no attempt used). The checked code exiting 127, even while
printing the shell's words, stays its own failure. Real `taskgate serve`, real `taskgate
verify`, real shells."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from taskgate.domain.tooling import command_words
from tests.mcp.live import Live
from tests.verifier.support import PYTHON, Gate, Repo

REPORT = {"path": "reports/results.json", "format": "json"}
# A check of the repository's own: writes a JSON report, exits as its tests did.
CHECK_PY = """\
import json, os, sys
os.makedirs("reports", exist_ok=True)
ok = open("answer.txt").read().strip() == "42"
json.dump({"tests": [{"id": "answer.is_42", "status": "passed" if ok else "failed"}]}, open("reports/results.json", "w"))
sys.exit(0 if ok else 1)
"""
ANSWER = {"text": "the answer is 42", "kind": "test", "verify_ref": "answer.is_42"}


def _gate(live: Live, tmp_path: Path, checks: dict[str, Any], **extra: Any) -> Gate:
    repo = Repo.create(tmp_path / "repo", {"check.py": CHECK_PY, "answer.txt": "41\n"})
    return Gate.create(live, repo, {"check_timeout_minutes": 1, "checks": checks, **extra})


def _submitted(gate: Gate, criteria: list[dict[str, Any]] | None = None) -> str:
    tid = gate.task(criteria or [ANSWER])
    gate.submit(tid, gate.repo.commit({"answer.txt": "42\n"}))
    return tid


def _error_left_waiting(gate: Gate, tid: str, line: dict[str, Any]) -> str:
    assert (line["verdict"], line["task_status"]) == ("error", "needs_verification"), line
    task = gate.detail(tid)["task"]
    assert task["status"] == "needs_verification"
    assert task["attempts_used"] == 0 and task["verifier_errors_in_row"] == 1
    [run] = gate.detail(tid)["runs"]
    return str(run["summary"])


def test_a_check_whose_tool_is_not_on_the_verifiers_path_is_an_error_naming_it(
    live: Live, tmp_path: Path
) -> None:
    gate = _gate(
        live,
        tmp_path,
        {
            "unit": {"command": f"{PYTHON} check.py", "report": REPORT},
            "lint": {"command": "tg-no-such-linter --all ."},
        },
    )
    tid = _submitted(gate)
    [line] = gate.verify_json()
    summary = _error_left_waiting(gate, tid, line)
    assert summary.startswith("the verifier's image has no `tg-no-such-linter`: check lint"), summary
    assert "exited 127, `tg-no-such-linter` not found or not executable on the verifier's PATH" in summary
    assert line["checks"]["lint"]["missing_tool"] == "tg-no-such-linter"
    assert line["checks"]["unit"]["exit_code"] == 0 and line["checks"]["unit"].get("missing_tool") is None


def test_a_tool_that_is_there_but_not_executable_is_an_error_too(live: Live, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "tg-linter").write_text("#!/bin/sh\nexit 0\n")
    (tools / "tg-linter").chmod(stat.S_IRUSR | stat.S_IWUSR)  # on PATH, not executable
    gate = _gate(live, tmp_path, {"unit": {"command": f"tg-linter . && {PYTHON} check.py", "report": REPORT}})
    tid = _submitted(gate)
    [line] = gate.verify_json(env={"PATH": f"{tools}:{os.environ['PATH']}"})
    summary = _error_left_waiting(gate, tid, line)
    # dash says "Permission denied" and exits 127 for it (bash: 126); both name the tool.
    assert "no `tg-linter`: check unit" in summary and "`tg-linter` not found or not executable" in summary


def test_checked_code_that_exits_127_in_the_shells_words_is_still_its_own_failure(
    live: Live, tmp_path: Path
) -> None:
    """The agent's code writes what dash writes for a missing tool, names the configured
    command's own tool, and exits 127: the verifier finds that tool on its PATH, so the run is
    a failure of the work and uses an attempt."""
    gate = _gate(live, tmp_path, {"unit": {"command": f"{PYTHON} check.py", "report": REPORT}})
    tid = gate.task([ANSWER])
    forged = f"import sys\nprint('sh: 1: {PYTHON}: not found')\nprint('sh: 1: python3: not found')\nsys.exit(127)\n"
    gate.submit(tid, gate.repo.commit({"check.py": forged}))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    assert line["checks"]["unit"]["exit_code"] == 127 and line["checks"]["unit"].get("missing_tool") is None
    assert gate.detail(tid)["task"]["attempts_used"] == 1


def test_a_script_of_the_repository_that_is_not_executable_is_the_works_failure(
    live: Live, tmp_path: Path
) -> None:
    """`./run-tests` exiting 126 is the submission's own file: a path, not the image's tool."""
    gate = _gate(live, tmp_path, {"unit": {"command": "./run-tests", "report": REPORT}})
    tid = gate.task([ANSWER])
    gate.submit(tid, gate.repo.commit({"run-tests": "#!/bin/sh\nexit 0\n"}))  # committed without +x
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready"), line
    assert line["checks"]["unit"]["exit_code"] == 126


def test_a_command_criterion_whose_tool_is_missing_is_an_error(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path, {"unit": {"command": f"{PYTHON} check.py", "report": REPORT}})
    command = {"text": "types check", "kind": "command", "verify_ref": "tg-no-such-typechecker --strict"}
    tid = _submitted(gate, [ANSWER, command])
    [line] = gate.verify_json()
    summary = _error_left_waiting(gate, tid, line)
    assert "the verifier's image has no `tg-no-such-typechecker`: AC-1.2's command" in summary, summary


def test_a_reviewer_command_that_is_not_found_is_an_error_naming_it(live: Live, tmp_path: Path) -> None:
    gate = _gate(
        live,
        tmp_path,
        {"unit": {"command": f"{PYTHON} check.py", "report": REPORT}},
        reviewer={"command": "tg-no-such-reviewer -p", "base_branch": "main"},
    )
    tid = _submitted(gate, [ANSWER, {"text": "readable", "kind": "review"}])
    [line] = gate.verify_json()
    summary = _error_left_waiting(gate, tid, line)
    assert (
        "the verifier's image has no `tg-no-such-reviewer`: the reviewer (`tg-no-such-reviewer -p`)"
        in summary
    )


def test_the_command_words_are_the_tools_a_shell_looks_up() -> None:
    assert command_words("npm ci && CI=1 npm test 2>&1 | tee out.txt") == ["npm", "tee"]
    assert command_words("2>log env FOO=1 mvn -q test; cd app && ./gradlew test") == ["mvn"]
    assert command_words("if true; then cargo test; fi") == ["cargo"]
    assert command_words("(cd web && exec pnpm test)") == ["pnpm"]
    assert command_words('broken "quote') == []
