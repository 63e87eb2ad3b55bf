"""Every decided run leaves a signed in-toto test-result statement in the deciding commit, every
acceptance a signed SLSA verification summary; the bundle verifies with our verifier and with
securesystemslib's DSSE, on both adapters (local Ed25519 key; KMS P-256 key on moto)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from taskgate.domain import dsse, statements
from taskgate.domain.chain import digest
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import Status
from taskgate.domain.run_report import CheckResult, Evidence, RunReport
from taskgate.service import attestations, audit, claims, keys, review, sweeper, tasks, verification
from taskgate.service.attestations import Attestor
from taskgate.signing import bundle
from taskgate.signing.keys import PublicKey
from taskgate.signing.kms import KmsSigner
from tests.attest.support import independent_verify, signing_world, statement_of
from tests.service.scenarios import new_scene, reach
from tests.support.dynamo import REGION
from tests.support.evidence import OK, local_results, run_verifier
from tests.support.world import SHA, World, dump


@pytest.fixture(params=["sqlite", "dynamodb", "dynamodb:ECC_NIST_P256"])
def signed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with signing_world(request.param, tmp_path) as world:
        yield world


def _submitted(world: World) -> tuple[Any, str]:
    scene = new_scene(world, verification_on=True)
    reach(scene, Status.NEEDS_VERIFICATION)
    return scene, scene.task_id


def _resubmit(world: World, scene: Any) -> None:
    c = claims.claim(world.ctx, scene.agent, "demo", task_id=scene.task_id)
    claims.submit(world.ctx, scene.agent, scene.task_id, c.token, commit_sha=SHA, evidence="fixed")


def _lines(world: World, task_id: str) -> list[str]:
    return [json.dumps(e) for e in attestations.bundle(world.ctx, world.human, task_id)]


def test_a_passed_run_is_signed_in_its_deciding_commit(signed: World) -> None:
    world = signed
    scene, tid = _submitted(world)
    run, task = run_verifier(world.ctx, scene.verifier, tid, Evidence.PASS)
    assert run.status == "passed" and task.status is Status.VERIFIED
    [stored] = tasks.runs(world.ctx, world.human, tid)
    assert stored.attestation is not None and stored.attestation_seq == task.version
    key = world.ctx.attestor.public_key()  # type: ignore[union-attr]
    payload = independent_verify(stored.attestation, key)
    stmt = json.loads(payload)
    assert stmt["_type"] == "https://in-toto.io/Statement/v1"
    assert stmt["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    assert stmt["subject"] == [{"name": "/tmp/repo", "digest": {"gitCommit": SHA}}]
    pred = stmt["predicate"]
    assert pred["result"] == "PASSED" and pred["failedTests"] == []
    criteria = world.ctx.task(tid).criteria
    assert sorted(pred["passedTests"]) == sorted(statements.criterion_name(c.model_dump()) for c in criteria)
    config = world.ctx.project("demo").verifier_config
    assert config is not None
    assert pred["configuration"][0]["digest"] == {"sha256": digest(config.model_dump(mode="json"))}
    assert pred["configuration"][1]["digest"]["sha256"] == digest(
        [c.model_dump(mode="json") for c in criteria]
    )
    reloaded = world.ctx.task(tid)
    facts = pred["taskgate"]
    assert facts["historyHead"] == reloaded.history_head  # the head includes the deciding event
    assert facts["previous"] is None and facts["run"] == run.id
    assert facts["verifierCredential"] == scene.verifier.credential_id
    assert facts["executorCredential"] == scene.agent.credential_id
    assert facts["checks"] == {"unit": {"exitCode": 0}}
    assert reloaded.attestation_head == hashlib.sha256(payload).hexdigest()
    assert attestations.signed_by(world.ctx.attestor, stored.attestation)


def test_failed_and_error_runs_are_signed_too_and_chain(signed: World) -> None:
    world = signed
    scene, tid = _submitted(world)
    run_verifier(world.ctx, scene.verifier, tid, None, error="checkout failed: no such ref")  # error
    run_verifier(world.ctx, scene.verifier, tid, Evidence.FAIL, checks={"unit": CheckResult(exit_code=1)})
    _resubmit(world, scene)
    run_verifier(world.ctx, scene.verifier, tid, Evidence.PASS)
    review.accept(world.ctx, world.human, tid)
    lines = _lines(world, tid)
    stmts = [statement_of(json.loads(line)) for line in lines]
    assert [s["predicate"].get("result") or s["predicate"]["verificationResult"] for s in stmts] == [
        "WARNED",
        "FAILED",
        "PASSED",
        "PASSED",
    ]
    assert stmts[0]["predicate"]["taskgate"]["error"] == "checkout failed: no such ref"
    assert stmts[1]["predicate"]["failedTests"] and stmts[1]["predicate"]["taskgate"]["checks"] == {
        "unit": {"exitCode": 1}
    }
    vsa = stmts[3]
    assert vsa["predicateType"] == "https://slsa.dev/verification_summary/v1"
    payloads = [dsse.from_json(json.loads(line)).payload for line in lines]
    passed_sha = hashlib.sha256(payloads[2]).hexdigest()
    assert vsa["predicate"]["inputAttestations"] == [
        {"uri": f"urn:taskgate:{tid}:attestations", "digest": {"sha256": passed_sha}}
    ]
    assert vsa["predicate"]["verifiedLevels"] == ["TASKGATE_VERIFIED", "TASKGATE_ACCEPTED"]
    assert vsa["predicate"]["taskgate"]["acceptedBy"] == "human:alice"
    assert vsa["predicate"]["timeVerified"].endswith("Z")
    key = world.ctx.attestor.public_key()  # type: ignore[union-attr]
    for line in lines:
        independent_verify(json.loads(line), key)
    done = bundle.verify(lines, key, SHA)
    assert len(done.statements) == 4


def test_runs_ended_without_an_answer_are_signed_warned_and_chain(signed: World) -> None:
    """The three ways a run ends with no verifier's answer (the sweeper finds it overdue, a new
    run starts over an overdue one, its verifier key is revoked) are decided runs: each is signed
    WARNED with its reason in the ending commit, the bundle chains and the audit passes."""
    world = signed
    scene, tid = _submitted(world)
    overdue = verification.start(world.ctx, scene.verifier, task_id=tid).run
    world.clock.advance(hours=24)
    assert sweeper.sweep(world.ctx).abandoned_runs == [tid]
    replaced = verification.start(world.ctx, scene.verifier, task_id=tid).run
    world.clock.advance(hours=24)
    revoked = verification.start(world.ctx, scene.verifier, task_id=tid).run  # ends `replaced`
    keys.revoke(world.ctx, world.human, scene.verifier.credential_id)  # ends `revoked`
    runs = {r.id: r for r in tasks.runs(world.ctx, world.human, tid)}
    assert [runs[r.id].status for r in (overdue, replaced, revoked)] == ["error"] * 3
    lines = _lines(world, tid)
    stmts = [statement_of(json.loads(line)) for line in lines]
    assert [s["predicate"]["result"] for s in stmts] == ["WARNED"] * 3
    assert [s["predicate"]["taskgate"]["run"] for s in stmts] == [overdue.id, replaced.id, revoked.id]
    errors = [s["predicate"]["taskgate"]["error"] for s in stmts]
    assert errors[0].startswith(f"run {overdue.id} got no answer within")
    assert errors[1].startswith(f"run {replaced.id} got no answer within")
    assert errors[2] == f"verifier key {scene.verifier.credential_id} was revoked"
    assert all(s["predicate"]["taskgate"]["verdict"] == "error" for s in stmts)
    assert stmts[0]["predicate"]["taskgate"]["verifierCredential"] == scene.verifier.credential_id
    reloaded = world.ctx.task(tid)
    last = dsse.from_json(json.loads(lines[-1])).payload
    assert reloaded.attestation_head == hashlib.sha256(last).hexdigest()
    assert stmts[-1]["predicate"]["taskgate"]["historyHead"] == reloaded.history_head
    key = world.ctx.attestor.public_key()  # type: ignore[union-attr]
    for line in lines:
        independent_verify(json.loads(line), key)
    assert len(bundle.verify(lines, key, SHA).statements) == 3
    checked = audit.verify_project(world.ctx, world.human, "demo")
    assert checked.ok and checked.statements == 3


def _flip(text: str, at: int) -> str:
    return text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1 :]


def test_the_bundle_fails_with_a_reason_after_any_change(signed: World, tmp_path: Path) -> None:
    world = signed
    scene, tid = _submitted(world)
    run_verifier(world.ctx, scene.verifier, tid, Evidence.FAIL, checks={"unit": CheckResult(exit_code=1)})
    _resubmit(world, scene)
    run_verifier(world.ctx, scene.verifier, tid, Evidence.PASS)
    review.accept(world.ctx, world.human, tid)
    lines = _lines(world, tid)
    key = world.ctx.attestor.public_key()  # type: ignore[union-attr]
    bundle.verify(lines, key, SHA)

    def fails(changed: list[str], commit: str | None = SHA, k: Any = key) -> str:
        with pytest.raises(bundle.Invalid) as err:
            bundle.verify(changed, k, commit)
        return str(err.value)

    env = json.loads(lines[1])
    payload = bytearray(dsse.from_json(env).payload)
    payload[payload.index(b"PASSED")] = ord("F")  # one byte of the statement
    forged = {**env, "payload": base64.b64encode(bytes(payload)).decode()}
    assert "signature does not verify" in fails([lines[0], json.dumps(forged), lines[2]])
    sig = env["signatures"][0]["sig"]
    bad_sig = {**env, "signatures": [{**env["signatures"][0], "sig": _flip(sig, 10)}]}
    assert "line 2" in fails([lines[0], json.dumps(bad_sig), lines[2]])
    other = SHA[:-1] + ("0" if SHA[-1] != "0" else "1")
    assert f"not {other}" in fails(lines, other)
    assert "does not follow" in fails([lines[0], lines[2]])  # a statement left out
    assert "does not follow" in fails([lines[1], lines[0], lines[2]])  # reordered
    stranger = PublicKey(ed25519.Ed25519PrivateKey.generate().public_key())
    assert f"no signature by key {stranger.key_id}" in fails(lines, SHA, stranger)


def test_accepting_without_verification_signs_a_summary_with_no_input(signed: World) -> None:
    world = signed
    scene = new_scene(world)
    reach(scene, Status.NEEDS_VERIFICATION)
    review.accept(world.ctx, world.human, scene.task_id)
    [line] = _lines(world, scene.task_id)
    vsa = statement_of(json.loads(line))
    assert vsa["predicate"]["inputAttestations"] == []
    assert vsa["predicate"]["verifiedLevels"] == ["TASKGATE_ACCEPTED"]
    assert vsa["subject"][0]["digest"] == {"gitCommit": SHA}


def test_a_key_that_cannot_sign_decides_nothing(tmp_path: Path) -> None:
    with signing_world("dynamodb", tmp_path) as world:
        scene, tid = _submitted(world)
        started = verification.start(world.ctx, scene.verifier, task_id=tid)
        before = dump(world.store)
        world.ctx.attestor = Attestor(KmsSigner("alias/no-such-key", region_name=REGION))
        with pytest.raises(TaskgateError) as err:
            verification.finish(
                world.ctx,
                scene.verifier,
                tid,
                started.run.id,
                RunReport(
                    checks={"unit": OK}, results=local_results(started.work["criteria"], Evidence.PASS)
                ),
            )
        assert err.value.code is ErrorCode.UNAVAILABLE
        assert dump(world.store) == before


def test_attest_verify_says_what_the_last_statement_decided(tmp_path: Path) -> None:
    """A failed run's bundle verifies (the proof holds) and is about the commit, so `attest verify
    --commit` exits 0: its OK must say the run failed, or a gate reading it would take a failing
    commit for a verified one."""
    import subprocess

    from tests.verifier.support import TASKGATE

    with signing_world("sqlite", tmp_path) as world:
        scene, tid = _submitted(world)
        run_verifier(world.ctx, scene.verifier, tid, Evidence.FAIL, checks={"unit": CheckResult(exit_code=1)})
        key = tmp_path / "key.pem"
        key.write_text(world.ctx.attestor.public_key().pem)  # type: ignore[union-attr]
        path = tmp_path / "bundle.jsonl"

        def verify(*extra: str) -> subprocess.CompletedProcess[str]:
            path.write_text("\n".join(_lines(world, tid)) + "\n")
            return subprocess.run(
                [TASKGATE, "attest", "verify", str(path), "--key", str(key), "--commit", SHA, *extra],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )

        failed = verify()
        assert failed.returncode == 0, failed.stderr
        assert f"the last is about commit {SHA}: a FAILED test result" in failed.stdout
        assert json.loads(verify("--json").stdout)["result"] == "FAILED"
        _resubmit(world, scene)
        run_verifier(world.ctx, scene.verifier, tid, Evidence.PASS)
        review.accept(world.ctx, world.human, tid)
        accepted = verify()
        assert accepted.returncode == 0, accepted.stderr
        # made through the service with no request, so with nothing to say a person was there
        assert f"{SHA}: an acceptance by a script (TASKGATE_VERIFIED, TASKGATE_ACCEPTED)" in accepted.stdout
        assert json.loads(verify("--json").stdout)["result"] == "PASSED"
