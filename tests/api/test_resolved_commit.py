"""The full commit behind an abbreviated submission, through the REST API: the verifier's finish
may carry `commit` (the full commit it checked out); one that is not 40 or 64 lowercase hex, or
does not start with the submitted sha, is refused (E_VALIDATION, nothing written). A valid one
is kept on the run and its submission and signed as the subject's gitCommit, by the run's
statement, by a later run that ended without an answer, and by the acceptance. Where only the
abbreviation is known, no statement puts it under gitCommit, and `taskgate attest verify` says
why such a bundle does not verify."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from taskgate import runtime
from taskgate.domain import dsse, statements
from taskgate.service import attestations, claims, verification
from taskgate.signing import bundle
from tests.api.support import Env
from tests.support.world import dump
from tests.verifier.support import TASKGATE

FULL = "0123456789abcdef0123456789abcdef01234567"
SHORT = FULL[:9]
FULL_256 = "89abcdef" * 8


def _submitted(env: Env, project: str, sha: str) -> str:
    tid = env.task(project, criteria=env.test_criterion())
    who = env.actings["agent"]
    token = claims.claim(env.ctx, who, project, task_id=tid).token
    claims.submit(env.ctx, who, tid, token, commit_sha=sha, evidence="done")
    return tid


def _started(env: Env, sha: str) -> tuple[str, str]:
    tid = _submitted(env, env.project("demo", verification=True), sha)
    run_id = env.call("POST", "/api/verifier/runs", "verifier", body={"task_id": tid}).json["run_id"]
    return tid, run_id


def _finish(env: Env, tid: str, run_id: str, **body: Any) -> Any:
    return env.call("POST", f"/api/verifier/runs/{tid}/{run_id}/finish", "verifier", body=body)


def _statement(envelope: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(dsse.from_json(envelope).payload)
    return out


@pytest.mark.parametrize(
    "bad",
    [
        "fedcba9876543210fedcba9876543210fedcba98",  # full, but another commit
        FULL[:8] + "f" + FULL[9:],  # full, differs inside what was submitted
        FULL.upper(),
        FULL[:-1],
        FULL + "8",
        SHORT,  # the abbreviation itself is no resolution
        FULL[:39] + "g",
        " " + FULL,
        "",
    ],
    ids=["other", "differs-in-prefix", "upper", "39", "41", "abbreviation", "not-hex", "space", "empty"],
)
def test_a_resolved_commit_that_is_not_the_full_submitted_one_is_refused(env: Env, bad: str) -> None:
    tid, run_id = _started(env, SHORT)
    before = dump(env.ctx.store)
    resp = _finish(env, tid, run_id, checks={"unit": {"exit_code": 0}}, commit=bad)
    assert (resp.status, resp.json["code"]) == (422, "E_VALIDATION"), resp
    assert "commit" in resp.json["message"] and "nothing was recorded" in resp.json["message"]
    assert dump(env.ctx.store) == before


def test_a_commit_sent_with_a_missing_commit_is_refused(env: Env) -> None:
    tid, run_id = _started(env, SHORT)
    before = dump(env.ctx.store)
    resp = _finish(env, tid, run_id, commit_missing=True, commit=FULL)
    assert (resp.status, resp.json["code"]) == (422, "E_VALIDATION"), resp
    assert "a run whose commit is missing ran nothing" in resp.json["message"]
    assert dump(env.ctx.store) == before


def test_the_resolved_commit_is_stored_and_signed_by_every_statement_of_the_submission(env: Env) -> None:
    tid, run_id = _started(env, SHORT)
    # An error of the run after the checkout still resolved the commit.
    resp = _finish(env, tid, run_id, checks={}, error="the reviewer broke", commit=FULL)
    assert resp.status == 200, resp
    assert resp.json["run"]["resolved_commit"] == FULL and resp.json["run"]["commit_sha"] == SHORT
    first = _statement(resp.json["run"]["attestation"])
    assert first["subject"] == [{"name": "/tmp/repo", "digest": {"gitCommit": FULL}}]
    task = env.ctx.task(tid)
    submission = task.last_submission()
    assert submission is not None and submission.resolved_commit == FULL and submission.commit_sha == SHORT

    # A run that ends without the verifier's answer resolved nothing: it signs what the run
    # before it resolved for the same submission.
    run_id = env.call("POST", "/api/verifier/runs", "verifier", body={"task_id": tid}).json["run_id"]
    # The handler's context: the one that holds the attestation key.
    assert verification.end_as_error(runtime.context(), tid, run_id, "no answer") is not None
    [ended] = [r for r in env.call("GET", f"/api/tasks/{tid}").json["runs"] if r["id"] == run_id]
    assert ended["resolved_commit"] is None
    signed = [_statement(e) for e in attestations.bundle(env.ctx, env.world.human, tid)]
    assert [s["predicate"]["taskgate"]["run"] for s in signed][-1] == run_id
    assert signed[-1]["subject"][0]["digest"] == {"gitCommit": FULL}

    run_id = env.call("POST", "/api/verifier/runs", "verifier", body={"task_id": tid}).json["run_id"]
    resp = _finish(
        env, tid, run_id, checks={"unit": {"exit_code": 0}}, results=_passes(env, tid), commit=FULL
    )
    assert resp.status == 200 and resp.json["run"]["status"] == "passed", resp
    accepted = env.call("POST", f"/api/tasks/{tid}/accept", "admin")
    assert accepted.status == 200, accepted
    summary = _statement(attestations.bundle(env.ctx, env.world.human, tid)[-1])
    assert summary["predicateType"] == statements.VSA
    assert summary["subject"] == [{"name": "/tmp/repo", "digest": {"gitCommit": FULL}}]
    assert summary["predicate"]["resourceUri"] == f"git+file:///tmp/repo@{FULL}"


def _passes(env: Env, tid: str) -> dict[str, Any]:
    source = {"check": "unit", "report": "reports/junit.xml"}
    return {
        c.id: {"result": "pass", "detail": "ok", "source": {**source, "ref": c.verify_ref}}
        for c in env.ctx.task(tid).criteria
    }


def test_a_sha256_repository_commit_extends_a_40_digit_prefix(env: Env) -> None:
    tid, run_id = _started(env, FULL_256[:40])
    resp = _finish(env, tid, run_id, checks={}, error="broke after checkout", commit=FULL_256)
    assert resp.status == 200, resp
    assert _statement(resp.json["run"]["attestation"])["subject"][0]["digest"] == {"gitCommit": FULL_256}


def test_an_abbreviation_nobody_resolved_is_never_signed_as_git_commit(env: Env, tmp_path: Path) -> None:
    # Verification off: a human accepts what the agent submitted, and nothing resolved it.
    tid = _submitted(env, env.project("demo", verification=False), SHORT)
    assert env.call("POST", f"/api/tasks/{tid}/accept", "admin").status == 200
    [envelope] = attestations.bundle(env.ctx, env.world.human, tid)
    [subject] = _statement(envelope)["subject"]
    assert subject["digest"] == {statements.COMMIT_PREFIX: SHORT}
    assert subject["annotations"]["abbreviatedCommit"] == SHORT

    attestor = runtime.context().attestor
    assert attestor is not None
    key = tmp_path / "key.pem"
    key.write_text(attestor.public_key().pem)
    path = tmp_path / "bundle.jsonl"
    path.write_text(json.dumps(envelope) + "\n")
    # Its signature and chain verify: it is a signed statement about what was submitted...
    done = subprocess.run(
        [TASKGATE, "attest", "verify", str(path), "--key", str(key)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "the last is about an abbreviated commit " + SHORT in done.stdout
    # ...but it is about no full commit, so it matches none.
    done = subprocess.run(
        [TASKGATE, "attest", "verify", str(path), "--key", str(key), "--commit", FULL],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert f"names only the abbreviated commit {SHORT} (no verifier resolved it" in done.stderr


@pytest.mark.parametrize(
    "digest",
    [{"gitCommit": SHORT}, {"gitCommit": FULL.upper()}, {"gitCommit": FULL + "\n"}, {"sha1": FULL}, {}],
)
def test_a_subject_without_a_full_git_commit_or_our_prefix_is_refused(digest: dict[str, str]) -> None:
    stmt = {"subject": [{"name": "repo", "digest": digest}]}
    with pytest.raises(bundle.Invalid, match="line 1: "):
        bundle.subject_commit(stmt, "line 1")
    assert bundle.subject_commit({"subject": [{"name": "r", "digest": {"gitCommit": FULL}}]}, "l") == FULL
