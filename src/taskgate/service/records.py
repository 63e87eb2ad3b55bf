"""Where each record lives in the store: key shapes and index keys, one place for both adapters.

Every key is built by a `*_key` function here (a partition alone by a `*_pk` one);
docs/architecture.md ("The store") tables them, and tests/unit/test_architecture_doc.py checks
the table against these functions.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import itertools
import secrets
import typing
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from taskgate.domain import chain
from taskgate.domain.clock import iso
from taskgate.domain.ids import parse_task_id
from taskgate.domain.models import (
    Attestation,
    Credential,
    Decision,
    HistoryEvent,
    Note,
    Project,
    Spec,
    Status,
    Task,
    VerificationRun,
)
from taskgate.store.port import IndexKey, Item
from taskgate.store.schema import IndexName

M = TypeVar("M", bound=BaseModel)

PRIORITY_MIN, PRIORITY_MAX = 0, 1000


def project_pk(project: str) -> str:
    return f"P#{project}"


def project_key(project: str) -> tuple[str, str]:
    return (project_pk(project), "PROJECT")


def base_moved_key(project: str) -> tuple[str, str]:
    return (project_pk(project), "BASE-MOVED")


def landing_key(project: str) -> tuple[str, str]:
    return (project_pk(project), "LANDING")


def counter_key(project: str) -> tuple[str, str]:
    return (project_pk(project), "COUNTER")


def directory_key(project: str) -> tuple[str, str]:
    return ("PROJECTS", project)


def spec_key(project: str, number: int) -> tuple[str, str]:
    return (project_pk(project), f"SPEC#{number:08d}")


TASK_SK_PREFIX = "TASK#"  # every task item's sort key starts so: a query for a project's tasks


def task_key(task_id: str) -> tuple[str, str]:
    project, number = parse_task_id(task_id)
    return (project_pk(project), f"{TASK_SK_PREFIX}{number:08d}")


def decision_key(project: str, number: int) -> tuple[str, str]:
    return (project_pk(project), f"DEC#{number:08d}")


def cascade_key(project: str, kind: str, number: int) -> tuple[str, str]:
    return (project_pk(project), f"CASCADE#{kind}#{number:08d}")


def request_key(project: str, actor: str, request_id: str) -> tuple[str, str]:
    return (project_pk(project), f"REQ#{actor}#{request_id}")


def ref_key(project: str, kind: str, ref: str) -> tuple[str, str]:
    """A test/command criterion's entry in its project's index (refs.py). Hashed: a ref is
    free text of any length, a sort key is not."""
    digest = hashlib.sha256(f"{kind}\n{ref}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return (project_pk(project), f"REF#{digest}")


def spec_tasks_key(project: str, number: int) -> tuple[str, str]:
    return (project_pk(project), f"TASKS-OF#SPEC#{number:08d}")


def notes_counter_key(task_id: str) -> tuple[str, str]:
    return (task_pk(task_id), "NOTES")


def task_pk(task_id: str) -> str:
    return f"T#{task_id}"


def credential_key(credential_id: str) -> tuple[str, str]:
    return ("KEYS", credential_id)


def queue_pk(project: str, status: Status) -> str:
    # Status before project: the cloud's stream filter selects tasks entering a status by the
    # prefix "Q#<status>#" (Lambda event filters match prefixes, not suffixes). Still one
    # partition per (status, project): never a bare status.
    return f"Q#{status.value}#{project}"


def key_hash_pk(key_hash: str) -> str:
    return f"KH#{key_hash}"


_SEQ = itertools.count()


def stamp(at: datetime) -> str:
    """A sort key that orders by time (then by order of writing within this process) and never
    collides between writers."""
    return f"{iso(at)}#{next(_SEQ):012d}{secrets.token_hex(3)}"


def queued_task_id(key: IndexKey) -> str:
    """The task a queue entry stands for, from its table key (P#<project> / TASK#<n:08>)."""
    return f"{key.pk.removeprefix('P#')}-{int(key.sk.removeprefix(TASK_SK_PREFIX))}"


def queued_band(key: IndexKey) -> str:
    """A queue entry's priority band: the priority part of its sort key (equal priority, equal band)."""
    return key.index_sk.partition("#")[0]


def best_band(keys: list[IndexKey]) -> list[IndexKey]:
    """The entries in the band of the first (best) one: queued_band(k) == queued_band(keys[0]),
    written out inline because a claim compares a whole window of entries (32)."""
    best = keys[0].index_sk.partition("#")[0]
    return [k for k in keys if k.index_sk.partition("#")[0] == best]


def _body(model: BaseModel) -> dict[str, Any]:
    return _compact(model, model.model_dump(mode="json", exclude={"version"}))


def _unset(field: FieldInfo, value: Any) -> bool:
    """Whether a field holds its "nothing here" default: None for a field that defaults to None,
    an empty text, list or map for one that defaults to an empty one. Only those are left out of what
    is stored (loading fills them back in): a store unit is paid per KB written, and a task
    holds many of them. A default with a meaning (a priority of 0, low risk, a lease of 30
    minutes) is always written, so a later change of a default never rewrites stored data."""
    if value is None:
        return field.default is None and field.default_factory is None
    if value == "":
        return bool(field.default == "")
    if value == [] or value == {}:
        return field.default_factory in (list, dict)
    return False


_EMPTIES: tuple[Any, ...] = (None, "", [], {})


@dataclass(frozen=True)
class _Plan:
    """What _compact does to a dump of one model class: the fields it may leave out, each with
    whether None, "", [] and {} is its "nothing here" default (_unset), and the fields that may
    hold models (dumped in turn: the same again)."""

    rules: tuple[tuple[str, tuple[bool, ...]], ...]
    nested: tuple[str, ...]


def _may_hold_model(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_may_hold_model(arg) for arg in typing.get_args(annotation))


@functools.cache
def _plan(model: type[BaseModel]) -> _Plan:
    """Worked out once per class, not per field per write: a write dumps a task and its event,
    and visiting every field of every nested record to find the ones that hold models on every
    write would cost more than the write's own work."""
    fields = model.model_fields.items()
    rules = ((name, tuple(_unset(field, empty) for empty in _EMPTIES)) for name, field in fields)
    nested = tuple(name for name, field in fields if _may_hold_model(field.annotation))
    return _Plan(tuple((name, rule) for name, rule in rules if any(rule)), nested)


def _compact(model: BaseModel, data: dict[str, Any]) -> dict[str, Any]:
    """Leave "nothing here" defaults out of `data`, model's own fresh dump (changed in place)."""
    plan = _plan(type(model))
    for name, rule in plan.rules:
        value = data.get(name, data)  # `data` itself: the field is not in the dump
        # Only None, "", [] and {} can be a "nothing here" default, and all four are falsy: one
        # truth test settles most fields (a write dumps a task and its event, ~60 fields).
        if value or value is data:
            continue
        if (
            (value is None and rule[0])
            or (rule[1] and isinstance(value, str))
            or (rule[2] and isinstance(value, list))
            or (rule[3] and isinstance(value, dict))
        ):
            del data[name]
    for name in plan.nested:
        value = data.get(name)
        if not value or not isinstance(value, dict | list):
            continue
        attr = getattr(model, name)
        if isinstance(attr, BaseModel):
            _compact(attr, value)
        elif isinstance(attr, list):
            for a, v in zip(attr, value, strict=True):
                if isinstance(a, BaseModel):
                    _compact(a, v)
        elif isinstance(attr, dict):
            for k, a in attr.items():
                if isinstance(a, BaseModel):
                    _compact(a, value[k])
    return data


def load(model: type[M], item: Item) -> M:
    data = dict(item.data)
    for name in _ENVELOPE_FIELDS.get(model, ()):
        if isinstance(data.get(name), dict):
            data[name] = _loaded_envelope(data[name])
    if "version" in model.model_fields:
        data["version"] = item.version
    return model.model_validate(data)


def _next(version: int) -> int:
    return version + 1


def project_item(p: Project) -> Item:
    pk, sk = project_key(p.name)
    return Item(pk, sk, _body(p), _next(p.version))


def spec_item(s: Spec) -> Item:
    pk, sk = spec_key(s.project, s.number)
    return Item(pk, sk, _body(s), _next(s.version))


def claimed_lapsed_before(now: datetime) -> str:
    """The QUEUE sort key bound below which a project's claimed tasks have lapsed at `now`:
    their keys are "<expiry>#<number>", and expiry <= now is lapsed ('#' sorts before '$')."""
    return f"{iso(now)}$"


def task_item(t: Task) -> Item:
    pk, sk = task_key(t.id)
    expires = iso(t.claim.expires_at) if t.status is Status.CLAIMED and t.claim is not None else None
    # Queues are ordered by priority, then age; a project's claimed tasks by lease expiry instead,
    # so every read can find the lapsed ones with one query (claimed_lapsed_before).
    order = f"{expires}#{t.number:08d}" if expires else f"{PRIORITY_MAX - t.priority:04d}#{t.number:08d}"
    indexes = {IndexName.QUEUE: (queue_pk(t.project, t.status), order)}
    return Item(pk, sk, _body(t), _next(t.version), indexes, expires)


def decision_item(d: Decision) -> Item:
    pk, sk = decision_key(d.project, d.number)
    return Item(pk, sk, _body(d), _next(d.version))


def credential_item(c: Credential) -> Item:
    pk, sk = credential_key(c.id)
    return Item(pk, sk, _body(c), _next(c.version), {IndexName.LOOKUP: (key_hash_pk(c.key_hash), "KEY")})


def history_key(task_id: str, seq: int) -> tuple[str, str]:
    """A task's event, keyed by the task version it was committed with: ordered, and unique by
    construction."""
    return (task_pk(task_id), chain.event_sk(seq))


def project_history_pk(project: str) -> str:
    return f"PH#{project}"


def project_history_key(project: str, at: datetime) -> tuple[str, str]:
    return (project_history_pk(project), stamp(at))


def event_item(e: HistoryEvent) -> Item:
    if e.task_id is not None:
        return Item(*history_key(e.task_id, e.seq), _body(e))
    return Item(*project_history_key(e.project, e.at), _body(e))


def attestation_key(task_id: str, seq: int) -> tuple[str, str]:
    return (task_pk(task_id), f"A#{seq:08d}")


def attestation_item(a: Attestation) -> Item:
    return Item(*attestation_key(a.task_id, a.seq), _stored_body(a))


# A signed statement is stored with its payload as text, not as the envelope's base64: the
# statement is JSON, which the DynamoDB adapter's zlib (store/body.py) shrinks to about a third,
# while base64 hides its repetition.
# Loading turns it back into the envelope, byte for byte: the signature is over those bytes.
_ENVELOPE_FIELDS: dict[type[BaseModel], tuple[str, ...]] = {
    Attestation: ("envelope",),
    VerificationRun: ("attestation",),
}


def _stored_body(model: BaseModel) -> dict[str, Any]:
    body = _body(model)
    for name in _ENVELOPE_FIELDS[type(model)]:
        body = _with_stored_envelope(body, name)
    return body


def _with_stored_envelope(body: dict[str, Any], name: str) -> dict[str, Any]:
    env = body.get(name)
    if not isinstance(env, dict) or not isinstance(env.get("payload"), str):
        return body
    try:
        raw = base64.b64decode(env["payload"], validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return body  # not ours to reshape: stored as it came
    if base64.b64encode(raw).decode("ascii") != env["payload"]:
        return body
    stored = {k: v for k, v in env.items() if k != "payload"}
    stored["payloadText"] = text
    return {**body, name: stored}


def _loaded_envelope(env: dict[str, Any]) -> dict[str, Any]:
    if "payloadText" not in env:
        return env  # stored as the envelope itself (before this form, or not UTF-8)
    out = {k: v for k, v in env.items() if k != "payloadText"}
    out["payload"] = base64.b64encode(str(env["payloadText"]).encode("utf-8")).decode("ascii")
    return out


def note_key(task_id: str, at: datetime) -> tuple[str, str]:
    return (task_pk(task_id), f"N#{stamp(at)}")


def note_item(n: Note) -> Item:
    return Item(*note_key(n.task_id, n.at), _body(n))


RUN_PREFIX = "R#"  # a task's verification runs, in its own partition


def run_key(task_id: str, run_id: str) -> tuple[str, str]:
    return (task_pk(task_id), f"{RUN_PREFIX}{run_id}")


def run_item(run: VerificationRun) -> Item:
    pk, sk = run_key(run.task_id, run.id)
    return Item(pk, sk, _stored_body(run), _next(run.version))


IMAGES_PK = "IMAGES"


def image_key(image: str) -> tuple[str, str]:
    return (IMAGES_PK, image)


def drain_key(project: str, slot: int) -> tuple[str, str]:
    return (f"DRAIN#{project}", f"SLOT#{slot:02d}")


def batch_key(project: str, batch_id: str) -> tuple[str, str]:
    return (project_pk(project), f"BATCH#{batch_id}")


def batch_counter_key(project: str) -> tuple[str, str]:
    return (project_pk(project), "BATCH-COUNTER")


def open_batch_key(project: str, batch_id: str) -> tuple[str, str]:
    """A batch waiting for or under verification: one partition per project, read by the
    verifier's work route; deleted when the batch ends."""
    return (f"BATCHQ#{project}", batch_id)


def in_batch_key(task_id: str) -> tuple[str, str]:
    """A task in an open batch: must not exist when a batch takes the task (one batch at a time)."""
    return (task_pk(task_id), "IN-BATCH")
