"""Walk a project's task histories against their hash chains (domain/chain.py), and each task's
signed statements against the history they name: reads only.

A task written before this server kept the chain starts with events holding no `prev`: those
are counted as unchained (domain/chain.py read_chain), apart from mismatches and never verified.

The chain alone shows a history changed in place; whoever can write the database can also
recompute every hash of it. The signed statements cannot be recomputed without the attestation
key, and each names the chain head at its decision: so a history rewritten before a decision no
longer matches that decision's statement. Each also names the statement before it, and the task
item the last: so a statement deleted from the store is found too; and task numbers are dense,
so a task deleted whole is found by the gap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from taskgate.domain import dsse, ids
from taskgate.domain.chain import Mismatch, digest, event_sk, read_chain
from taskgate.domain.models import Attestation, VerificationRun
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.service import attestations, counters, records
from taskgate.service.context import Context
from taskgate.signing import bundle

PAGE = 200


@dataclass
class Audit:
    project: str
    tasks: int = 0
    events: int = 0
    statements: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)  # the first of each task that has one
    # Per task whose chain matches: its events written before this server kept a chain (if any)
    unchained: dict[str, int] = field(default_factory=dict)
    # Acceptances by how they were made (Via's values; "unrecorded" before the server kept it)
    acceptances: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No mismatch. Unchained events are not a mismatch, and not verified either."""
        return not self.mismatches

    @property
    def unchained_events(self) -> int:
        return sum(self.unchained.values())


Signed = tuple[int, dict[str, Any], VerificationRun | None]  # version, envelope, the run it is stored with


def _statements(ctx: Context, task_id: str) -> list[Signed]:
    """The task's signed statements: the task version each was committed with, its envelope, and
    the run it is stored with (None: an acceptance's)."""
    pk = records.task_pk(task_id)
    out: list[Signed] = []
    for run in ctx.runs(task_id):
        if run.attestation is not None and run.attestation_seq is not None:
            out.append((run.attestation_seq, run.attestation, run))
    for item in ctx.all_pages(lambda c: ctx.store.query(pk, sk_prefix="A#", limit=PAGE, cursor=c)):
        att = records.load(Attestation, item)
        out.append((att.seq, att.envelope, None))
    return sorted(out, key=lambda s: s[0])


def _statement_mismatch(
    ctx: Context, task_id: str, hashes: dict[str, str], signed: Signed
) -> Mismatch | None:
    seq, envelope, run = signed
    sk = event_sk(seq)
    if ctx.attestor is not None and not attestations.signed_by(ctx.attestor, envelope):
        return Mismatch(task_id, sk, f"the statement of {sk} is not signed by this server's attestation key")
    why = attestations.misplaced(envelope, task_id, seq, run)
    if why is not None:
        return Mismatch(task_id, sk, f"the statement of {sk} is not the one stored there: {why}")
    try:
        statement = json.loads(dsse.from_json(envelope).payload)
        head = statement["predicate"]["taskgate"]["historyHead"]
    except (ValueError, KeyError, TypeError, dsse.BadEnvelope) as exc:
        return Mismatch(task_id, sk, f"the statement of {sk} cannot be read: {exc}")
    if hashes.get(sk) != head:
        return Mismatch(
            task_id,
            sk,
            f"the signed statement of {sk} names history head {head!r}; the stored history hashes to "
            f"{hashes.get(sk)!r} there: the history up to it was rewritten after it was signed",
        )
    return None


def _statements_linked(task_id: str, signed: list[Signed], last: str | None) -> Mismatch | None:
    """The statements follow one another as `attest verify` checks a bundle (signing/bundle.py
    Links: each names the one before it, and a summary relies only on passed runs of its commit
    before it), and the task item names the last (`attestation_head`, written in the same
    commit): so a statement removed from the store, not only one edited, is found, and so is a
    status edited to verified over a failed run (the server signs the acceptance's summary from
    the stored status). Whoever can write the database could still remove the last statements
    and set the task's head back to match: only a bundle exported before shows that."""
    links = bundle.Links()
    for seq, envelope, _ in signed:
        sk = event_sk(seq)
        try:
            payload = dsse.from_json(envelope).payload
            statement = json.loads(payload)
            why = links.follow(statement, payload, bundle.subject_commit(statement, sk))
        except (ValueError, KeyError, TypeError, AttributeError, dsse.BadEnvelope, bundle.Invalid) as exc:
            return Mismatch(task_id, sk, f"the statement of {sk} cannot be read: {exc}")
        if why is not None:
            return Mismatch(task_id, sk, f"the statement of {sk}: {why}")
    if last != links.last:
        return Mismatch(
            task_id,
            None,
            f"the task names {last!r} as its last signed statement; the last one stored hashes to "
            f"{links.last!r}: a signed statement was removed",
        )
    return None


@dataclass(frozen=True)
class TaskChain:
    events: int
    statements: int
    unchained: int
    mismatch: Mismatch | None
    acceptances: tuple[str, ...] = ()  # how each of its acceptances was made, oldest first


UNRECORDED = "unrecorded"


def accepted_via(event: dict[str, Any]) -> str | None:
    """How an acceptance event says it was made; None for any other event."""
    if event.get("action") != "accept":
        return None
    via = (event.get("detail") or {}).get("via")
    return via if isinstance(via, str) and via else UNRECORDED


def task_chain(ctx: Context, task_id: str, head: str | None, last_statement: str | None = None) -> TaskChain:
    """How many events and statements the task has, how many events came before its chain, and
    the first place they do not match. `last_statement`: the task's `attestation_head`."""
    events = [
        (i.sk, i.data)
        for i in ctx.all_pages(
            lambda c: ctx.store.query(records.task_pk(task_id), sk_prefix="H#", limit=PAGE, cursor=c)
        )
    ]
    signed = _statements(ctx, task_id)
    reading = read_chain(task_id, head, events, signed_from=signed[0][0] if signed else None)
    mismatch = reading.mismatch
    if mismatch is None:
        hashes = {sk: digest(body) for sk, body in events}
        for one in signed:
            mismatch = _statement_mismatch(ctx, task_id, hashes, one)
            if mismatch is not None:
                break
    if mismatch is None:
        mismatch = _statements_linked(task_id, signed, last_statement)
    vias = tuple(v for _, body in events if (v := accepted_via(body)) is not None)
    return TaskChain(len(events), len(signed), reading.unchained if mismatch is None else 0, mismatch, vias)


def verify_project(ctx: Context, who: Acting, project: str) -> Audit:
    authorize(Op.READ, who, project=project)
    ctx.project(project)  # E_NOT_FOUND for a project that does not exist
    out = Audit(project)
    pk = records.project_pk(project)
    numbers: set[int] = set()
    for item in ctx.all_pages(
        lambda c: ctx.store.query(pk, sk_prefix=records.TASK_SK_PREFIX, limit=PAGE, cursor=c)
    ):
        task_id = str(item.data.get("id"))
        number = item.sk.removeprefix(records.TASK_SK_PREFIX)
        if number.isdigit():  # a key this server never writes is not a number handed out
            numbers.add(int(number))
        head, last = item.data.get("history_head"), item.data.get("attestation_head")
        chain = task_chain(
            ctx, task_id, head if isinstance(head, str) else None, last if isinstance(last, str) else None
        )
        out.tasks += 1
        out.events += chain.events
        out.statements += chain.statements
        for via in chain.acceptances:
            out.acceptances[via] = out.acceptances.get(via, 0) + 1
        if chain.mismatch is not None:
            out.mismatches.append(chain.mismatch)
        elif chain.unchained:
            out.unchained[task_id] = chain.unchained
    out.mismatches += _numbering(project, numbers, int(counters.current(ctx, project).data.get("task", 0)))
    return out


def _numbering(project: str, numbers: set[int], handed_out: int) -> list[Mismatch]:
    """Task numbers are handed out one by one, in the commit that writes the task, and no task
    is ever deleted: so every number up to the project's counter names a task, and none past it.
    A task item deleted from the database (its history, runs and statements with it or not)
    is found by its number; one who also sets the counter back hides only the last tasks."""
    out = [
        Mismatch(
            ids.task_id(project, n),
            None,
            f"task {ids.task_id(project, n)} is missing: the project has handed out {handed_out} task "
            "numbers and no task holds this one (its item was deleted)",
        )
        for n in sorted(set(range(1, handed_out + 1)) - numbers)
    ]
    out += [
        Mismatch(
            ids.task_id(project, n),
            None,
            f"task {ids.task_id(project, n)} has a number the project never handed out (it has handed "
            f"out {handed_out}): it was not written by this server",
        )
        for n in sorted(n for n in numbers if n > handed_out)
    ]
    return out
