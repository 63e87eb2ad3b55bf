"""A check's report digest through the REST API: the finish input takes an optional
`report_sha256` per check, 64 lowercase hex or refused (E_VALIDATION, nothing written); a valid
one is stored with the run's check result and signed in the statement's `taskgate.checks`."""

from __future__ import annotations

import hashlib
import json

import pytest

from taskgate.domain import dsse
from tests.api.support import Env
from tests.support.world import dump

DIGEST = hashlib.sha256(b"<testsuites/>").hexdigest()


def _refused_finish(env: Env, unit: dict[str, object], field: str) -> tuple[str, str]:
    """A finish with this check is refused as E_VALIDATION naming `field`, and changes nothing;
    the task and run it was sent for."""
    pid = env.project("demo", verification=True)
    tid = env.submitted(pid)
    run_id = env.call("POST", "/api/verifier/runs", "verifier", body={"task_id": tid}).json["run_id"]
    before = dump(env.ctx.store)
    resp = env.call(
        "POST", f"/api/verifier/runs/{tid}/{run_id}/finish", "verifier", body={"checks": {"unit": unit}}
    )
    assert (resp.status, resp.json["code"]) == (422, "E_VALIDATION"), resp
    assert field in json.dumps(resp.json)
    assert dump(env.ctx.store) == before
    return tid, run_id


@pytest.mark.parametrize(
    "bad",
    [DIGEST.upper(), DIGEST[:-1], DIGEST + "0", "z" * 64, f"sha256:{DIGEST}", "", 12],
    ids=["upper", "63", "65", "not-hex", "prefixed", "empty", "number"],
)
def test_a_report_digest_that_is_not_64_lowercase_hex_is_refused(env: Env, bad: object) -> None:
    _refused_finish(env, {"exit_code": 0, "report_sha256": bad}, "report_sha256")


def test_a_report_digest_is_stored_with_the_check_and_signed(env: Env) -> None:
    pid = env.project("demo", verification=True)
    tid = env.submitted(pid)
    run_id = env.call("POST", "/api/verifier/runs", "verifier", body={"task_id": tid}).json["run_id"]
    resp = env.call(
        "POST",
        f"/api/verifier/runs/{tid}/{run_id}/finish",
        "verifier",
        body={
            "checks": {
                "unit": {"exit_code": 1, "report_sha256": DIGEST},
                "lint": {"exit_code": 0, "report_sha256": None},
            }
        },
    )
    assert resp.status == 200, resp
    [stored] = env.call("GET", f"/api/tasks/{tid}").json["runs"]
    assert stored["checks"]["unit"]["report_sha256"] == DIGEST
    assert stored["checks"]["lint"]["report_sha256"] is None
    statement = json.loads(dsse.from_json(resp.json["run"]["attestation"]).payload)
    assert statement["predicate"]["taskgate"]["checks"] == {
        "lint": {"exitCode": 0},  # no report, no digest
        "unit": {"exitCode": 1, "reportDigest": {"sha256": DIGEST}},
    }


@pytest.mark.parametrize("bad", [2**53, -(2**53), 2**63, 2**32])
def test_an_exit_code_no_process_returns_is_refused_not_an_internal_error(env: Env, bad: int) -> None:
    """A check's exit code is signed (`taskgate.checks.<name>.exitCode`), and RFC 8785 writes no
    integer beyond +-(2**53 - 1): one that large used to fail the signing as E_INTERNAL. No
    process exits with anything near it (Linux: 0-255, or minus a signal number)."""
    tid, run_id = _refused_finish(env, {"exit_code": bad}, "exit_code")
    ok = env.call(
        "POST",
        f"/api/verifier/runs/{tid}/{run_id}/finish",
        "verifier",
        body={"checks": {"unit": {"exit_code": -9}}},  # killed by SIGKILL: still recorded
    )
    assert ok.status == 200, ok
