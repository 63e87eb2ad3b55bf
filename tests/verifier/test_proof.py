"""Proof of verification end to end: `taskgate serve`, `taskgate verify --once` on a real pytest
repository (each commit submitted abbreviated: the statements name the full commit the verifier
checked out, and the runner version its pytest check printed), a human's acceptance, then the CLI: `attest key`, `attest export`, `attest verify`
(offline, with the key file) passing on the export and failing, with the reason, after one byte
of the payload, the signature, the commit or the key is changed; securesystemslib's DSSE agrees;
`audit verify` finds every history chain intact, and names the event after one is edited."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from taskgate.signing.keys import PublicKey
from tests.attest.support import independent_verify
from tests.mcp.live import Live
from tests.verifier.support import (
    BROKEN,
    KEEPS_DIGITS,
    PYTEST_CHECK,
    SLUGIFY,
    SLUGIFY_TESTS,
    TASKGATE,
    Gate,
    Repo,
    git,
    pytest_config,
    pytest_runner,
)


def cli(live: Live, *args: str) -> subprocess.CompletedProcess[str]:
    """The `taskgate` command as a person runs it, against the live server with the admin token."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": live.base, "TASKGATE_TOKEN": live.admin_token}
    return subprocess.run([TASKGATE, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def _envelope_edit(line: str, field: str, change: Any) -> str:
    env = json.loads(line)
    if field == "payload":
        raw = bytearray(base64.b64decode(env["payload"]))
        raw[raw.index(b'"PASSED"') + 1] = ord("F")  # one byte: PASSED -> FASSED
        env["payload"] = base64.b64encode(bytes(raw)).decode()
    else:
        raw = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
        raw[len(raw) // 2] ^= 0x01  # one bit of one byte of the signature
        env["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()
    return json.dumps(env)


@pytest.fixture
def kept() -> Iterator[Path]:
    """Where the check leaves a copy of each JUnit file it wrote: the checks run as the check
    user and their checkout is gone after the run, so a directory anyone may write to."""
    where = Path(tempfile.mkdtemp(prefix="taskgate-reports-"))
    where.chmod(0o777)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_decisions_and_acceptance_are_signed_and_verify_offline(
    live: Live, tmp_path: Path, kept: Path
) -> None:
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": BROKEN, "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"}
    )
    # The check copies the report it wrote (named by the time it ran, to keep the order), then
    # exits with pytest's status.
    copy = f'; s=$?; cp reports/junit.xml "{kept}/$(date +%s%N).xml"; exit $s'
    # Not quiet: pytest's header names its version.
    command = str(PYTEST_CHECK["command"]).replace(" -q ", " ") + copy
    gate = Gate.create(live, repo, pytest_config(checks={"unit": {**PYTEST_CHECK, "command": command}}))
    tid = gate.task([KEEPS_DIGITS])
    broken = git(repo.path, "rev-parse", "HEAD")
    gate.submit(tid, broken[:7])
    [failed] = gate.verify_json()
    assert failed["verdict"] == "failed"
    fixed = repo.commit({"slug.py": SLUGIFY}, "keep digits")
    gate.submit(tid, fixed[:12])
    [passed] = gate.verify_json()
    assert passed["verdict"] == "passed"
    assert sorted(gate.detail(tid)["signed_runs"]) == sorted(r["id"] for r in gate.detail(tid)["runs"])
    live.ok("POST", f"/api/tasks/{tid}/accept")

    key = cli(live, "attest", "key", "--json")
    assert key.returncode == 0, key.stderr
    described = json.loads(key.stdout)
    pem = tmp_path / "key.pem"
    pem.write_text(described["pem"])
    assert (
        described["scheme"] == "ed25519" and PublicKey.from_pem(pem.read_bytes()).key_id == described["keyid"]
    )
    private = live.data_dir / "attestation-key.pem"
    assert oct(private.stat().st_mode & 0o777) == "0o600"
    assert "PRIVATE" not in key.stdout and private.read_text().strip() not in key.stdout

    export = cli(live, "attest", "export", tid)
    assert export.returncode == 0, export.stderr
    bundle_path = tmp_path / f"{tid}.intoto.jsonl"
    bundle_path.write_text(export.stdout)
    lines = export.stdout.splitlines()
    assert len(lines) == 3  # the failed run, the passed run, the acceptance
    statements = [
        json.loads(independent_verify(json.loads(line), PublicKey.from_pem(pem.read_bytes())))
        for line in lines
    ]
    assert [s["predicate"].get("result") for s in statements[:2]] == ["FAILED", "PASSED"]
    assert [s["subject"][0]["digest"]["gitCommit"] for s in statements] == [broken, fixed, fixed]
    assert statements[2]["predicate"]["verificationResult"] == "PASSED"
    assert statements[1]["predicate"]["url"].startswith(live.base)
    # Each run's statement carries the sha256 of the JUnit file its check wrote, as stored with the run.
    written = sorted(kept.glob("*.xml"), key=lambda p: int(p.stem))
    assert len(written) == 2
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in written]
    assert digests[0] != digests[1]  # a failing and a passing report
    runner = pytest_runner()
    assert [s["predicate"]["taskgate"]["checks"]["unit"] for s in statements[:2]] == [
        {"exitCode": 1, "reportDigest": {"sha256": digests[0]}, "runner": runner},
        # the passing run exits 1 over the verifier's tripwires alone (they must fail)
        {"exitCode": 1, "reportDigest": {"sha256": digests[1]}, "runner": runner},
    ]
    runs = {r["id"]: r for r in gate.detail(tid)["runs"]}
    # Each run keeps what was submitted and the full commit its verifier checked out.
    assert [
        (
            runs[s["predicate"]["taskgate"]["run"]]["commit_sha"],
            runs[s["predicate"]["taskgate"]["run"]]["resolved_commit"],
        )
        for s in statements[:2]
    ] == [(broken[:7], broken), (fixed[:12], fixed)]
    assert [
        runs[s["predicate"]["taskgate"]["run"]]["checks"]["unit"]["report_sha256"] for s in statements[:2]
    ] == digests

    ok = cli(live, "attest", "verify", str(bundle_path), "--key", str(pem), "--commit", fixed)
    assert ok.returncode == 0, ok.stderr
    assert "OK: 3 statements" in ok.stdout and fixed in ok.stdout

    def fails(path: Path, *extra: str) -> str:
        done = cli(live, "attest", "verify", str(path), *extra)
        assert done.returncode == 1, (done.stdout, done.stderr)
        return done.stderr

    for field, reason in (
        ("payload", "line 2: the signature does not verify"),
        ("sig", "line 2: the signature does not verify"),
    ):
        changed = tmp_path / f"changed-{field}.jsonl"
        changed.write_text("\n".join([lines[0], _envelope_edit(lines[1], field, None), lines[2]]) + "\n")
        assert reason in fails(changed, "--key", str(pem))
    assert "is not a full commit id" in fails(bundle_path, "--key", str(pem), "--commit", fixed[:12])
    other_commit = fixed[:-1] + ("0" if fixed[-1] != "0" else "1")
    assert f"about commit {fixed}, not {other_commit}" in fails(
        bundle_path, "--key", str(pem), "--commit", other_commit
    )
    stranger = tmp_path / "stranger.pem"
    stranger.write_bytes(
        ed25519.Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    assert "line 1: no signature by key" in fails(bundle_path, "--key", str(stranger))
    pem_bytes = bytearray(pem.read_bytes())
    pem_bytes[pem_bytes.index(b"\n") + 20] ^= 0x01  # one byte of the key itself
    bent = tmp_path / "bent.pem"
    bent.write_bytes(bytes(pem_bytes))
    assert "FAILED" in fails(bundle_path, "--key", str(bent))

    audit = cli(live, "audit", "verify", gate.project)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "every chain matches" in audit.stdout
    # Someone with the database rewrites who accepted: the audit names the event after it.
    db = sqlite3.connect(live.db_path)
    try:
        with db:
            pk = f"T#{tid}"
            sks = [
                r[0]
                for r in db.execute("SELECT sk FROM items WHERE pk=? AND sk LIKE 'H#%' ORDER BY sk", (pk,))
            ]
            (data,) = db.execute("SELECT data FROM items WHERE pk=? AND sk=?", (pk, sks[-2])).fetchone()
            db.execute(
                "UPDATE items SET data=? WHERE pk=? AND sk=?",
                (data.replace('"actor":"', '"actor":"human:mallory-was-', 1), pk, sks[-2]),
            )
    finally:
        db.close()
    tampered = cli(live, "audit", "verify", gate.project)
    assert tampered.returncode == 1
    assert f"{tid} {sks[-1]}: event {sks[-1]} does not follow event {sks[-2]}" in tampered.stdout
