"""A run's signed statement names its task, run, version and verdict; the run item around it is
not signed. Someone holding the database edits a failed run to "passed" under its signed FAILED
statement, or copies a passed run's statement onto a failed one: the board's "signed" (the task
detail's `signed_runs`) no longer vouches for it, and the audit names it."""

from __future__ import annotations

from typing import Any

import pytest

from taskgate.service import records
from tests.api.support import Env
from tests.attest.support import raw_get, raw_set
from tests.support import evidence


def _run(env: Env, tid: str, exit_code: int) -> str:
    run_id = str(env.call("POST", "/api/verifier/runs", "verifier", body={"task_id": tid}).json["run_id"])
    body: dict[str, Any] = {"checks": {"unit": {"exit_code": exit_code}}}
    if exit_code == 0:
        source = {"check": evidence.CHECK, "report": evidence.REPORT_PATH, "ref": "tests.test_x"}
        body["results"] = {f"AC-{tid}.1": {"result": "pass", "detail": "ok", "source": source}}
    done = env.call("POST", f"/api/verifier/runs/{tid}/{run_id}/finish", "verifier", body=body)
    assert done.status == 200, done
    return run_id


def _detail(env: Env, tid: str) -> dict[str, Any]:
    out: dict[str, Any] = env.call("GET", f"/api/tasks/{tid}", "admin").json
    return out


def _audit(env: Env, project: str) -> dict[str, Any]:
    out: dict[str, Any] = env.call("GET", f"/api/projects/{project}/audit", "admin").json
    return out


@pytest.mark.parametrize("edit", ["status", "copied"])
def test_a_run_edited_under_its_signed_statement_is_not_signed_any_more(env: Env, edit: str) -> None:
    pid = env.project("demo", verification=True)
    failing = env.submitted(pid, criteria=env.test_criterion())
    failed = _run(env, failing, 1)
    assert [r["status"] for r in _detail(env, failing)["runs"]] == ["failed"]
    assert _detail(env, failing)["signed_runs"] == [failed] and _audit(env, pid)["ok"]
    key = records.run_key(failing, failed)
    item = raw_get(env.ctx.store, *key)
    assert item is not None
    if edit == "status":
        item["status"] = "passed"  # the signed statement under it still says FAILED
    else:
        passing = env.submitted(pid, criteria=env.test_criterion())
        passed = _run(env, passing, 0)
        other = raw_get(env.ctx.store, *records.run_key(passing, passed))
        assert other is not None and other["status"] == "passed"
        item["status"], item["attestation"] = "passed", other["attestation"]
    raw_set(env.ctx.store, *key, item)
    detail = _detail(env, failing)
    assert [r["status"] for r in detail["runs"]] == ["passed"]
    assert detail["signed_runs"] == []
    audit = _audit(env, pid)
    assert not audit["ok"]
    [mismatch] = audit["mismatches"]
    assert mismatch["task"] == failing
    assert "is not the one stored there" in mismatch["reason"]
