"""Proof of verification: the server's public attestation key, a task's signed statements as a
JSON Lines bundle, and the audit of a project's history chains."""

from __future__ import annotations

import json

from aws_lambda_powertools.event_handler import Response

from taskgate import runtime
from taskgate.api.access import Access, caller, route
from taskgate.api.schemas import AttestationKey, AuditOut, ChainMismatch, UnchainedTask
from taskgate.api.serial import unlocked
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.service import attestations, audit

TAGS = ("attestations",)
JSONL = "application/jsonl"


def _attestor() -> attestations.Attestor:
    attestor = runtime.context().attestor
    if attestor is None:
        raise TaskgateError(ErrorCode.NOT_FOUND, "this server has no attestation key: it signs nothing")
    return attestor


@route(
    "GET",
    "/api/attestations/key",
    Access.PUBLIC,
    summary="The public key statements are signed with",
    tags=TAGS,
)
def attestation_key() -> AttestationKey:
    return AttestationKey(**_attestor().public_key().describe())


@route(
    "GET",
    "/api/tasks/<task_id>/attestations",
    Access.HUMAN,
    summary="A task's signed statements: in-toto JSON Lines, one DSSE envelope a line, oldest first",
    tags=TAGS,
)
def task_attestations(task_id: str) -> Response[str]:
    envelopes = attestations.bundle(runtime.context(), caller(), task_id)
    body = "".join(json.dumps(e, separators=(",", ":"), sort_keys=True) + "\n" for e in envelopes)
    return Response(
        status_code=200,
        content_type=JSONL,
        body=body,
        headers={"Content-Disposition": f'attachment; filename="{task_id}.intoto.jsonl"'},
    )


@route(
    "GET",
    "/api/projects/<project>/audit",
    Access.HUMAN,
    summary="Walk every task's history hash chain; name the first event of each that does not match "
    "and count the events written before the chain was kept",
    tags=TAGS,
)
def audit_project(project: str) -> AuditOut:
    with unlocked():  # it reads every task of the project: other requests go on meanwhile
        done = audit.verify_project(runtime.context(), caller(), project)
    return AuditOut(
        project=done.project,
        ok=done.ok,
        tasks=done.tasks,
        events=done.events,
        statements=done.statements,
        mismatches=[ChainMismatch(task=m.task_id, event=m.event, reason=m.reason) for m in done.mismatches],
        unchained=done.unchained_events,
        unchained_tasks=[UnchainedTask(task=t, events=n) for t, n in done.unchained.items()],
        acceptances=done.acceptances,
    )
