"""A check's runner line through the REST API: the finish input takes an optional `runner` per
check (printable ASCII, at most 200 characters) or refuses it (E_VALIDATION, nothing written); a
valid one is stored with the run's check result and signed as `taskgate.checks.<name>.runner`."""

from __future__ import annotations

import json

import pytest

from taskgate.domain import dsse
from tests.api.support import Env
from tests.support.world import dump

LINE = "pytest 8.3.2 (Python 3.12.3, pluggy 1.5.0)"


def _started(env: Env) -> tuple[str, str]:
    """A task with a live run, and the run's finish path."""
    pid = env.project("demo", verification=True)
    tid = env.submitted(pid)
    run_id = env.call("POST", "/api/verifier/runs", "verifier", body={"task_id": tid}).json["run_id"]
    return tid, f"/api/verifier/runs/{tid}/{run_id}/finish"


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("x" * 201, "at most 200 characters"),
        ("", "at least 1 character"),
        ("pytest 8\x1b[31m", "match pattern"),
        ("pytest 8\nvitest 1", "match pattern"),
        ("pytest 8.3.2 ✓", "match pattern"),
        (12, "valid string"),
    ],
    ids=["201", "empty", "escape", "newline", "not-ascii", "number"],
)
def test_a_runner_line_that_is_not_short_printable_ascii_is_refused(env: Env, bad: object, why: str) -> None:
    _, path = _started(env)
    before = dump(env.ctx.store)
    resp = env.call("POST", path, "verifier", body={"checks": {"unit": {"exit_code": 0, "runner": bad}}})
    assert (resp.status, resp.json["code"]) == (422, "E_VALIDATION"), resp
    assert "body.checks.unit.runner" in resp.json["message"] and why in json.dumps(resp.json)
    assert dump(env.ctx.store) == before


def test_a_runner_line_is_stored_with_the_check_and_signed(env: Env) -> None:
    tid, path = _started(env)
    checks = {"unit": {"exit_code": 0, "runner": LINE}, "lint": {"exit_code": 0}}
    resp = env.call("POST", path, "verifier", body={"checks": checks})
    assert resp.status == 200, resp
    [stored] = env.call("GET", f"/api/tasks/{tid}").json["runs"]
    assert stored["checks"]["unit"]["runner"] == LINE and stored["checks"]["lint"]["runner"] is None
    statement = json.loads(dsse.from_json(resp.json["run"]["attestation"]).payload)
    assert statement["predicate"]["taskgate"]["checks"] == {
        "lint": {"exitCode": 0},  # it printed no runner line
        "unit": {"exitCode": 0, "runner": LINE},
    }
