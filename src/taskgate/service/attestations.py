"""Signed statements of what the server decided: one per decided run (test-result), one per
acceptance (verification summary). Each is built and signed before the commit that decides,
and written in that commit, so a decision and its statement are never apart.

An Attestor is the server's attestation key plus the names it signs under. A Context without one
(service tests of unrelated rules) decides exactly as before and signs nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from taskgate.domain import commit_ids, dsse, statements
from taskgate.domain.baseline import statement_facts as baseline_facts
from taskgate.domain.chain import canonical, digest
from taskgate.domain.clock import iso
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.ids import parse_task_id
from taskgate.domain.models import Attestation, Spec, Task, VerificationRun
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting, Via
from taskgate.service import records
from taskgate.service.context import Context
from taskgate.signing.port import Signer, SigningError

if TYPE_CHECKING:
    from taskgate.signing.keys import PublicKey


@dataclass
class Attestor:
    signer: Signer
    # verifier.id of the summaries: a URI naming this server (its public URL, or a URN)
    server_id: str | None = None
    # The board's base URL, for a run's `url` (optional in the predicate: left out without one)
    public_url: str | None = None

    def public_key(self) -> PublicKey:
        try:
            return self.signer.public_key()
        except SigningError as exc:
            raise TaskgateError(ErrorCode.UNAVAILABLE, str(exc)) from exc

    def verifier_id(self) -> str:
        return self.server_id or self.public_url or f"urn:taskgate:key:{self.public_key().key_id}"

    def sign(self, statement: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The DSSE envelope of a statement and the sha256 of its payload. The payload is the
        statement's RFC 8785 form: the same statement always signs the same bytes."""
        payload = canonical(statement)
        try:
            sig = self.signer.sign(dsse.pae(dsse.INTOTO_PAYLOAD_TYPE, payload))
            keyid = self.public_key().key_id
        except SigningError as exc:
            raise TaskgateError(ErrorCode.UNAVAILABLE, f"{exc}; nothing was decided, try again") from exc
        envelope = dsse.Envelope(dsse.INTOTO_PAYLOAD_TYPE, payload, (dsse.Signature(keyid, sig),))
        return envelope.to_json(), hashlib.sha256(payload).hexdigest()


def _spec_view(spec: Spec | None) -> dict[str, Any] | None:
    return spec.model_dump(mode="json") if spec is not None else None


def for_run(
    attestor: Attestor,
    *,
    task: Task,
    new: Task,
    repo: str,
    run: VerificationRun,
    verdict: str,
    config: Mapping[str, Any] | None,
    spec: Spec | None,
    criteria: Sequence[Mapping[str, Any]],
    error: str | None,
    now: datetime,
) -> tuple[dict[str, Any], str]:
    """The signed test-result statement of a decided run (`new`: the task as it is committed,
    its chain head already that of the decision's event)."""
    submission = task.last_submission()
    url = (
        f"{attestor.public_url.rstrip('/')}/api/tasks/{task.id}#run={run.id}" if attestor.public_url else None
    )
    facts: dict[str, Any] = {
        "task": task.id,
        "run": run.id,
        "attempt": run.attempt,
        "seq": task.version + 1,
        "decidedAt": iso(now),
        "verifierCredential": run.credential_id,
        "executor": submission.actor if submission else None,
        "executorCredential": submission.credential_id if submission else None,
        "historyHead": new.history_head,
        "previous": task.attestation_head,
    }
    if error:
        facts["error"] = error
    else:
        facts["baseline"] = baseline_facts(run.baseline)
    if run.hidden_tests is not None:
        # Which hidden tests were run (their commit), never what they hold.
        h = run.hidden_tests
        facts["hiddenTests"] = {"commit": h["commit"], "ran": h["ran"], "failed": h.get("failed_count", 0)}
    if run.screened:
        facts["screened"] = [{"path": h["path"], "line": h["line"], "rule": h["rule"]} for h in run.screened]
    # The subject stays the submitted commit; what the checks ran on is said here: the base tip
    # it was merged onto and the merge's tree id (or the conflict that stopped the run).
    if run.base is not None:
        facts["base"] = run.base.model_dump(mode="json", exclude_none=True)
    if run.conflict is not None:
        facts["conflict"] = run.conflict.model_dump(mode="json")
    if run.reverify:
        facts["reverify"] = True
    # The full commit: the one this run's verifier checked out, else one an earlier run resolved
    # for the same submission (a run ended without an answer resolved nothing itself); None when
    # only an abbreviation is known (statements.subject says how that is signed).
    earlier = submission.resolved_commit if submission and submission.commit_sha == run.commit_sha else None
    statement = statements.test_result(
        repo=repo,
        commit_sha=run.commit_sha,
        full_commit=commit_ids.full_commit(run.commit_sha, run.resolved_commit, earlier),
        verdict=verdict,
        url=url,
        config=config,
        spec=_spec_view(spec),
        criteria=criteria,
        evidence=run.evidence,
        checks=run.checks,
        facts=facts,
    )
    return attestor.sign(statement)


def for_acceptance(
    attestor: Attestor,
    *,
    task: Task,
    new: Task,
    repo: str,
    spec: Spec | None,
    verified: bool,
    who: str,
    now: datetime,
    via: Via,
    on_behalf_of: str | None,
    batch: bool,
    stale: bool = False,
    together: dict[str, Any] | None = None,
) -> Attestation | None:
    """The signed verification summary of an acceptance; None for a task with no submission.
    `via`, `on_behalf_of`, `batch`: how the acceptance was made (domain/principals.py Via).
    `together`: the batch run that verified it with others onto one tip, when one did."""
    submission = task.last_submission()
    if submission is None:
        return None
    if spec is not None:
        policy_uri = f"urn:taskgate:{spec.project}:{spec.id}:r{spec.revision}"
        policy_digest = statements.spec_digest(spec.model_dump(mode="json"))
    else:
        policy_uri = f"urn:taskgate:{task.id}:criteria"
        policy_digest = digest([c.model_dump(mode="json") for c in task.criteria])
    # Verified work was verified by the run whose statement is the task's last: nothing else is
    # signed between a pass and the acceptance.
    source = (
        (f"urn:taskgate:{task.id}:attestations", task.attestation_head)
        if verified and task.attestation_head
        else None
    )
    facts: dict[str, Any] = {
        "task": task.id,
        "seq": task.version + 1,
        "acceptedBy": who,
        "acceptedVia": via.value,
        **({"onBehalfOf": on_behalf_of} if on_behalf_of else {}),
        "batch": batch,
        "executor": submission.actor,
        "executorCredential": submission.credential_id,
        "historyHead": new.history_head,
        "previous": task.attestation_head,
    }
    if verified and task.verified_base is not None:
        facts["verifiedOn"] = task.verified_base.model_dump(mode="json", exclude_none=True)
        facts["stale"] = stale
    if together is not None:
        facts["together"] = together
        facts["stale"] = stale
    statement = statements.verification_summary(
        repo=repo,
        commit_sha=submission.commit_sha,
        full_commit=commit_ids.full_commit(submission.commit_sha, submission.resolved_commit),
        verifier_id=attestor.verifier_id(),
        at=now,
        policy_uri=policy_uri,
        policy_digest=policy_digest,
        input_statement=source,
        facts=facts,
    )
    envelope, _ = attestor.sign(statement)
    return Attestation(task_id=task.id, seq=task.version + 1, at=now, envelope=envelope)


def for_landing(
    attestor: Attestor, *, task: Task, new: Task, repo: str, run: VerificationRun | None, now: datetime
) -> Attestation | None:
    """The signed statement of a landing (`new.landed`): None for a task whose acceptance was
    not signed (there is nothing for it to carry out)."""
    landed, submission = new.landed, task.last_submission()
    if landed is None or submission is None or task.attestation_head is None:
        return None
    verified_by: dict[str, Any] = {"already": landed.already}
    if run is not None:
        body = run.model_dump(mode="json", include={"id", "status", "checks", "evidence", "base"})
        verified_by |= {"run": run.id, "runDigest": digest(body)}
    elif landed.reused_run is not None:
        verified_by |= {"reusedRun": landed.reused_run, "tree": landed.tree}
    facts: dict[str, Any] = {
        "task": task.id,
        "seq": task.version + 1,
        "landedBy": landed.by,
        "historyHead": new.history_head,
        "previous": task.attestation_head,
    }
    statement = statements.landing(
        repo=repo,
        branch=landed.branch,
        landed_commit=landed.commit,
        tree=landed.tree,
        from_tip=landed.from_tip,
        submitted_commit=submission.resolved_commit or submission.commit_sha,
        verified_by=verified_by,
        acceptance=task.attestation_head,
        at=now,
        facts=facts,
    )
    envelope, _ = attestor.sign(statement)
    return Attestation(task_id=task.id, seq=task.version + 1, at=now, envelope=envelope)


def payload_digest(envelope: Mapping[str, Any]) -> str:
    return hashlib.sha256(dsse.from_json(envelope).payload).hexdigest()


def bundle(ctx: Context, who: Acting, task_id: str) -> list[dict[str, Any]]:
    """A task's signed statements, oldest first (by the task version each was committed with):
    the runs' test results and the acceptances' summaries."""
    project, _ = parse_task_id(task_id)
    authorize(Op.READ, who, project=project)
    ctx.task(task_id)  # E_NOT_FOUND
    pk = records.task_pk(task_id)
    found: list[tuple[int, dict[str, Any]]] = []
    for run in ctx.runs(task_id):
        if run.attestation is not None and run.attestation_seq is not None:
            found.append((run.attestation_seq, run.attestation))
    for item in ctx.all_pages(lambda c: ctx.store.query(pk, sk_prefix="A#", limit=100, cursor=c)):
        att = records.load(Attestation, item)
        found.append((att.seq, att.envelope))
    return [envelope for _, envelope in sorted(found, key=lambda f: f[0])]


def signed_by(
    attestor: Attestor | None, envelope: Mapping[str, Any] | None, *, run: VerificationRun | None = None
) -> bool:
    """Whether an envelope carries a valid signature of this server's key (the board's "signed");
    with `run`, also that it is that run's own statement (`misplaced`)."""
    if attestor is None or envelope is None:
        return False
    try:
        env = dsse.from_json(envelope)
        key = attestor.public_key()
    except (dsse.BadEnvelope, TaskgateError):
        return False
    data = dsse.pae(env.payload_type, env.payload)
    if not any(s.keyid == key.key_id and key.verifies(s.sig, data) for s in env.signatures):
        return False
    return run is None or misplaced(envelope, run.task_id, run.attestation_seq, run) is None


def misplaced(
    envelope: Mapping[str, Any], task_id: str, seq: int | None, run: VerificationRun | None
) -> str | None:
    """Why a signed statement is not the one of the item it is stored with, or None. The store's
    fields around it are not signed: a valid statement copied to another run, or a run's status
    edited under its statement ("passed" over a signed FAILED), still verifies by signature."""
    try:
        facts = json.loads(dsse.from_json(envelope).payload)["predicate"]["taskgate"]
        task, signed_seq = facts.get("task"), facts.get("seq")
    except (ValueError, KeyError, TypeError, AttributeError, dsse.BadEnvelope) as exc:
        return f"it cannot be read: {exc}"
    if task != task_id or signed_seq != seq:
        return f"it was signed for task {task!r} at version {signed_seq!r}, and is stored with {task_id} at {seq!r}"
    if run is not None and (facts.get("run"), facts.get("verdict")) != (run.id, run.status):
        return (
            f"it was signed for run {facts.get('run')!r} {facts.get('verdict')!r}, and is stored with run "
            f"{run.id} {run.status!r}"
        )
    return None
