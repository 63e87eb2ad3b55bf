"""Command and review criteria end to end: a command runs only when a human approved it with its
spec; review criteria go to the configured reviewer command, whose answer is checked."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run
from tests.verifier.support import KEEPS_DIGITS, PYTHON, SLUGIFY, SLUGIFY_TESTS, Gate, Repo, pytest_config

FAKE_REVIEWER = Path(__file__).with_name("fake_reviewer.py")
READABLE = {"text": "slugify is documented", "kind": "review"}
_n = itertools.count()


def gate_with(live: Live, tmp_path: Path, **config: Any) -> Gate:
    repo = Repo.create(
        tmp_path / f"repo{next(_n)}",
        {"slug.py": "", "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"},
    )
    repo.branch("feature")
    return Gate.create(live, repo, pytest_config(**config))


def reviewer_config(mode: str, log: Path) -> dict[str, Any]:
    return {"reviewer": {"command": f"{PYTHON} {FAKE_REVIEWER} {mode} {log}", "base_branch": "main"}}


# -- command criteria ---------------------------------------------------------------------------


def test_an_approved_command_criterion_runs_in_the_checkout(live: Live, tmp_path: Path) -> None:
    gate = gate_with(live, tmp_path)
    tid = gate.task(
        [
            KEEPS_DIGITS,
            {"text": "module compiles", "kind": "command", "verify_ref": f"{PYTHON} -m py_compile slug.py"},
            {"text": "no TODO left", "kind": "command", "verify_ref": "! grep -n TODO slug.py"},
        ]
    )
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY + "# TODO: unicode\n"}))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready")
    ev = gate.detail(tid)["runs"][0]["evidence"]
    assert ev["AC-1.2"]["result"] == "pass" and ev["AC-1.2"]["source"]["ref"].endswith("py_compile slug.py")
    assert ev["AC-1.3"]["result"] == "fail" and "TODO: unicode" in ev["AC-1.3"]["detail"]


def test_a_command_criterion_of_a_spec_sent_back_to_draft_never_runs(live: Live, tmp_path: Path) -> None:
    gate = gate_with(live, tmp_path)
    marker = tmp_path / "ran"
    tid = gate.task([KEEPS_DIGITS, {"text": "smoke", "kind": "command", "verify_ref": f"touch {marker}"}])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    spec_id = gate.detail(tid)["task"]["spec_id"]
    gate.live.ok("POST", f"/api/projects/{gate.project}/specs/{spec_id}/revise", {"body": "reworded"})
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("error", "needs_verification")
    assert "not approved by a human" in line["summary"]
    assert not marker.exists() and line["checks"] == {}  # refused before anything ran


def test_a_command_an_agent_attached_to_its_task_never_runs(live: Live, tmp_path: Path) -> None:
    gate = gate_with(live, tmp_path)
    marker = tmp_path / "pwned"

    async def create() -> str:
        async with agent(gate.live.mcp_url, gate.agent_key, MODERN) as a:
            made = await a.ok(
                "create_task",
                project=gate.project,
                title="Add slugify",
                criteria=[
                    KEEPS_DIGITS,
                    {"text": "setup", "kind": "command", "verify_ref": f"touch {marker}"},
                ],
            )
            return str(made["task"]["id"])

    tid = run(create())
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    [line] = gate.verify_json()
    assert line["verdict"] == "error" and "not approved by a human" in line["summary"]
    assert not marker.exists()


# -- review criteria ----------------------------------------------------------------------------


def test_the_reviewer_gets_the_spec_criteria_and_diff_and_its_pass_counts(live: Live, tmp_path: Path) -> None:
    log = tmp_path / "prompt.txt"
    gate = gate_with(live, tmp_path, **reviewer_config("pass", log))
    tid = gate.task([KEEPS_DIGITS, READABLE])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    prompt = log.read_text()
    assert "Answer with JSON only" in prompt and "Slugs" in prompt and "Titles become URL slugs." in prompt
    assert "- AC-1.2: slugify is documented" in prompt and "AC-1.1" not in prompt  # review criteria only
    assert "DIFF (against main)" in prompt and "+def slugify(text):" in prompt
    ev = gate.detail(tid)["runs"][0]["evidence"]["AC-1.2"]
    assert ev["result"] == "pass" and ev["rationale"] == "the diff adds it, with a test"


def test_a_reviewer_fail_fails_the_run(live: Live, tmp_path: Path) -> None:
    gate = gate_with(live, tmp_path, **reviewer_config("fail", tmp_path / "log"))
    tid = gate.task([KEEPS_DIGITS, READABLE])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}), {"AC-1.2": "pass"})
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("failed", "ready")
    finding = gate.detail(tid)["task"]["findings"][0]
    assert finding["self_report_mismatch"] == ["AC-1.2"]
    assert "AC-1.2 fail: the diff does not handle it" in finding["details"]


def test_a_reviewer_pass_without_rationale_counts_as_missing(live: Live, tmp_path: Path) -> None:
    gate = gate_with(live, tmp_path, **reviewer_config("no-rationale", tmp_path / "log"))
    tid = gate.task([KEEPS_DIGITS, READABLE])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    [line] = gate.verify_json()
    assert line["verdict"] == "failed"
    assert gate.detail(tid)["runs"][0]["evidence"]["AC-1.2"]["result"] == "missing"


def test_a_fenced_json_answer_is_read(live: Live, tmp_path: Path) -> None:
    gate = gate_with(live, tmp_path, **reviewer_config("fenced", tmp_path / "log"))
    tid = gate.task([READABLE])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    assert gate.verify_json()[0]["verdict"] == "passed"


def test_reviewer_garbage_a_crash_or_no_reviewer_key_are_errors_never_failures(
    live: Live, tmp_path: Path
) -> None:
    for mode, expected in (
        ("garbage", "not one JSON object"),
        ("crash", "exited 3: reviewer: out of credits"),
    ):
        gate = gate_with(live, tmp_path, **reviewer_config(mode, tmp_path / "log"))
        tid = gate.task([KEEPS_DIGITS, READABLE])
        gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
        [line] = gate.verify_json()
        assert (line["verdict"], line["task_status"]) == ("error", "needs_verification"), line
        assert expected in line["summary"]
        assert gate.detail(tid)["task"]["attempts_used"] == 0
    gate = gate_with(live, tmp_path, **reviewer_config("pass", tmp_path / "log"))
    tid = gate.task([READABLE])
    gate.submit(tid, gate.repo.commit({"slug.py": SLUGIFY}))
    [line] = gate.verify_json(reviewer=False)
    assert line["verdict"] == "error" and "need a reviewer key (TASKGATE_REVIEWER_KEY)" in line["summary"]
