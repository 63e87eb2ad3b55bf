"""Which open tasks hold a test or command criterion: what create_task and update_task warn
from (a check that is on two open tasks can pass for only one of them, each being
verified on its own commit), read in O(the new task's criteria), not O(the project's tasks).

Two kinds of items, in the project's partition:

- REF#<hash of kind and ref>: the tasks listed as holding that ref among their own criteria,
  and the specs listed as holding it among theirs;
- TASKS-OF#SPEC#<n>: every task created under spec n (a task never changes spec).

The lists are a superset, never the answer: a warning is decided on the tasks as read now
(open, holding the ref now, through their own criteria or their spec as it is now), so an
entry left behind by a task that closed or dropped the ref costs a read, not a wrong warning.
They stay complete because an owner is listed in the same commit that gives it a ref: a
task's create, an update of its criteria and its reopen from done list the task under its own
refs; a spec's create and every change of its criteria list the spec under its refs; a create
under a spec lists the task under the spec. Those task writes also rewrite the REF items of
every ref the task holds (its own and its spec's), conditioned on their versions, even where
nothing changes: two writers sharing a ref then race on one item, and the loser, retried, sees
the winner (so the warning is exact under concurrent creates too). A task's writer prunes the
entries it read as closed (done, cancelled) or no longer holding the ref; that is safe because
a task regains a ref (reopen from done, a criteria update) only through such a rewrite, which
makes a prune decided on a stale read lose its race. Specs are never pruned (they neither
close nor are many).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from taskgate.domain.errors import invalid
from taskgate.domain.ids import parse_spec_id
from taskgate.domain.models import OPEN_STATUSES, Criterion, Spec, Task
from taskgate.domain.specs import checkable_refs, criteria_of, duplicate_warnings
from taskgate.service import records
from taskgate.service.context import Context
from taskgate.store.port import Item, Put

# Distinct test/command refs one task or spec may hold: each is an item of the commit that lists
# it, and a commit holds at most 100 items (with the task, its event, guards and blockers).
MAX_REFS = 60

Ref = tuple[str, str]  # (criterion kind, verify_ref)
Key = tuple[str, str]
Read = Mapping[Key, Item | None]  # items already read in this attempt (None: read, absent)


def ref_key(project: str, ref: Ref) -> Key:
    return records.ref_key(project, *ref)


def keys_for(project: str, criteria: Iterable[Criterion]) -> list[Key]:
    return [ref_key(project, r) for r in sorted(checkable_refs(criteria))]


def read(ctx: Context, keys: Iterable[Key]) -> dict[Key, Item | None]:
    """Items by key, None where there is none: one request (BatchGetItem)."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return {}
    found = {(i.pk, i.sk): i for i in ctx.store.get_many(wanted)}
    return {k: found.get(k) for k in wanted}


def _complete(ctx: Context, keys: Iterable[Key], given: Read | None) -> dict[Key, Item | None]:
    given = given or {}
    out = {k: given[k] for k in keys if k in given}
    return out | read(ctx, [k for k in keys if k not in out])


def _listed(item: Item | None, what: str) -> list[str]:
    return [str(x) for x in item.data.get(what, [])] if item is not None else []


def _put(key: Key, item: Item | None, ref: Ref, tasks: list[str], specs: list[str]) -> Put:
    data = {"kind": ref[0], "ref": ref[1], "tasks": tasks, "specs": specs}
    version = item.version if item is not None else None
    return Put(Item(*key, data, (version or 0) + 1), version)


@dataclass
class TaskRefs:
    """What a task's write needs from the index: the warnings, and the writes to commit with it."""

    warnings: list[str] = field(default_factory=list)
    ops: list[Put] = field(default_factory=list)


def for_task(
    ctx: Context, task: Task, spec: Spec | None, *, given: Read | None = None, list_it: bool
) -> TaskRefs:
    """The duplicate-criterion warnings for `task` as it is about to be committed (its spec
    `spec`, as read), and, with list_it, the rewrites of the REF items of all its refs that
    list it under its own ones (pruning what they read as stale). `given`: items this attempt
    already read."""
    mine = criteria_of(task, spec)
    refs = checkable_refs(mine)
    own = checkable_refs(task.criteria)
    if len(refs) > MAX_REFS:
        raise invalid(f"a task holds at most {MAX_REFS} distinct test or command criteria")
    if not refs:
        return TaskRefs()
    ref_items = _complete(ctx, [ref_key(task.project, r) for r in refs], given)
    candidates: set[str] = set()
    spec_ids: set[str] = set()
    for item in ref_items.values():
        candidates.update(_listed(item, "tasks"))
        spec_ids.update(_listed(item, "specs"))
    # A spec listed under one of these refs may hold it: its tasks are candidates, read with it.
    specs_read: dict[str, Spec] = {}
    if spec_ids:
        spec_keys = {sid: records.spec_key(task.project, parse_spec_id(sid)) for sid in sorted(spec_ids)}
        member_keys = {
            sid: records.spec_tasks_key(task.project, parse_spec_id(sid)) for sid in sorted(spec_ids)
        }
        got = read(ctx, [*spec_keys.values(), *member_keys.values()])
        for sid in sorted(spec_ids):
            spec_item = got[spec_keys[sid]]
            if spec_item is not None:
                specs_read[sid] = records.load(Spec, spec_item)
            candidates.update(_listed(got[member_keys[sid]], "tasks"))
    candidates.discard(task.id)
    found = ctx.store.get_many([records.task_key(c) for c in sorted(candidates)]) if candidates else []
    others = {t.id: t for t in (records.load(Task, i) for i in found)}
    # Another task's held spec criteria matter only if its spec holds one of these refs, and
    # then that spec was listed under it and read above.
    open_others = {
        t.id: criteria_of(t, specs_read.get(t.spec_id) if t.spec_id else None)
        for t in others.values()
        if t.status in OPEN_STATUSES
    }
    out = TaskRefs(warnings=duplicate_warnings(mine, open_others))
    for r in sorted(refs) if list_it else []:
        key = ref_key(task.project, r)
        item = ref_items[key]
        keep = [
            tid
            for tid in _listed(item, "tasks")
            if tid != task.id
            and (o := others.get(tid)) is not None
            and o.status in OPEN_STATUSES
            and r in checkable_refs(o.criteria)
        ]
        mine_too = [task.id] if r in own else []
        out.ops.append(_put(key, item, r, [*keep, *mine_too], _listed(item, "specs")))
    return out


def list_under_spec(
    ctx: Context, project: str, spec_number: int, task_id: str, given: Read | None = None
) -> Put:
    """The write that lists a new task under its spec (commit it with the task's create)."""
    key = records.spec_tasks_key(project, spec_number)
    item = _complete(ctx, [key], given)[key]
    version = item.version if item is not None else None
    data = {"tasks": [*_listed(item, "tasks"), task_id]}
    return Put(Item(*key, data, (version or 0) + 1), version)


def for_spec(ctx: Context, spec: Spec) -> list[Put]:
    """The writes that list a spec under each of its refs (commit them with the spec's change).
    Idempotent: a spec already listed is not written again (nobody prunes specs)."""
    refs = checkable_refs(spec.criteria)
    if len(refs) > MAX_REFS:
        raise invalid(f"a spec holds at most {MAX_REFS} distinct test or command criteria")
    keys = {ref_key(spec.project, r): r for r in sorted(refs)}
    out = []
    for key, item in read(ctx, keys).items():
        specs = _listed(item, "specs")
        if spec.id not in specs:
            out.append(_put(key, item, keys[key], _listed(item, "tasks"), [*specs, spec.id]))
    return out
