"""What every use case needs: the store, the clock, and loading/committing records."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from taskgate import telemetry
from taskgate.domain import chain
from taskgate.domain.clock import Clock, SystemClock, SystemTiming, Timing
from taskgate.domain.entropy import Entropy, SystemEntropy
from taskgate.domain.errors import ErrorCode, TaskgateError, invalid, not_found
from taskgate.domain.ids import parse_spec_id
from taskgate.domain.models import HistoryEvent, Project, Spec, SpecStatus, Status, Task, VerificationRun
from taskgate.domain.principals import Acting
from taskgate.domain.text import unencodable
from taskgate.service import records
from taskgate.service.offers import OFFERS, Offers
from taskgate.service.wakeups import Polling, Wakeups, brings_work
from taskgate.store.port import (
    ConflictError,
    Item,
    Op,
    Put,
    Store,
    TooLarge,
    Unencodable,
)
from taskgate.store.schema import IndexName
from taskgate.telemetry import Metric

if TYPE_CHECKING:
    from taskgate.service.attestations import Attestor
    from taskgate.service.images import TaskDefinitions

T = TypeVar("T")

SYSTEM = "system:taskgate"

# The most a use case spends running again after lost races, well inside a function's timeout
# (29 s behind API Gateway) with the store's own calls bounded too (taskgate.aws).
RETRY_BUDGET_S = 5.0
_retrying: ContextVar[bool] = ContextVar("taskgate_retrying", default=False)


def _no_fault(point: str) -> None:
    return None


@dataclass
class Context:
    store: Store
    clock: Clock = field(default_factory=SystemClock)
    # Called at named points inside long operations (each step of a cascade, a holder's write
    # just before it commits). A no-op in normal use; tests and TASKGATE_FAULT (runtime.py)
    # use it to stop the process or move the clock at an exact point.
    checkpoint: Callable[[str], None] = _no_fault
    # The cloud's registrar of a task definition per verifier image (service/images.py); None
    # where there is no cloud (a local server keeps an image in the config and registers nothing).
    task_definitions: TaskDefinitions | None = None
    # Which task each caller was just shown first (service/offers.py): one per process in use;
    # a test that needs repeatable choices gives its context one of its own, on its own clock.
    offers: Offers = field(default_factory=lambda: OFFERS)
    # The server's attestation key (service/attestations.py): decisions and acceptances are
    # signed with it. None: nothing is signed (a context for tests of other rules).
    attestor: Attestor | None = None
    # Wakes verifiers waiting for work (service/wakeups.py): `taskgate serve` sets one its own
    # commits signal; elsewhere a waiting request reads the store again every few seconds.
    wakeups: Wakeups = field(default_factory=Polling)
    # Where keys, claim tokens, run ids and claim-next picks draw their randomness: the OS's in
    # use; a seeded one makes a test or a model run repeatable (domain/entropy.py).
    entropy: Entropy = field(default_factory=SystemEntropy)
    # Elapsed time and pauses for the waits a use case makes (retries after lost races): the
    # system's in use; a test gives one whose pauses take no time (domain/clock.py).
    timing: Timing = field(default_factory=SystemTiming)

    # -- commits -----------------------------------------------------------------------------

    def commit(self, ops: Sequence[Op]) -> None:
        """The one way a use case writes. A lost race is an answer: E_CONFLICT, nothing written."""
        _check_chained(ops)
        try:
            self.store.commit(ops)
        except ConflictError as exc:
            telemetry.count(Metric.LOST_RACES)
            raise TaskgateError(
                ErrorCode.CONFLICT, "changed by someone else at the same time; retry"
            ) from exc
        except TooLarge as exc:
            raise TaskgateError(
                ErrorCode.VALIDATION, "this would make the record too large; send shorter text"
            ) from exc
        except Unencodable as exc:
            raise TaskgateError(
                ErrorCode.VALIDATION, "text must be valid Unicode (it holds a lone UTF-16 surrogate)"
            ) from exc
        if brings_work(ops):
            self.wakeups.notify()

    def retrying(self, attempt: Callable[[], T], *, tries: int = 20) -> T:
        """Run read-decide-commit again when only a version race (not a rule) stopped it.

        The one retry policy of the services: the stores retry no race themselves, and a
        `retrying` inside another runs its attempt once and leaves the retrying to the outer
        one, so tries never multiply. Within RETRY_BUDGET_S in all, whatever `tries` says."""
        if _retrying.get():
            return attempt()
        token = _retrying.set(True)
        try:
            deadline = self.timing.monotonic() + RETRY_BUDGET_S
            for n in range(tries):
                try:
                    return attempt()
                except TaskgateError as exc:
                    if exc.code is not ErrorCode.CONFLICT or n == tries - 1:
                        raise
                    pause = random.uniform(0, 0.002 * (n + 1))
                    if self.timing.monotonic() + pause > deadline:
                        raise
                    self.timing.sleep(pause)
            raise AssertionError("unreachable")
        finally:
            _retrying.reset(token)

    # -- loads -------------------------------------------------------------------------------

    def project(self, name: str) -> Project:
        item = self.store.get(*records.project_key(name))
        if item is None:
            raise not_found(f"project {name}")
        return records.load(Project, item)

    def task(self, task_id: str) -> Task:
        item = self.store.get(*records.task_key(task_id))
        if item is None:
            raise not_found(f"task {task_id}")
        return records.load(Task, item)

    def spec_is_draft(self, task: Task) -> bool:
        """Whether the task's spec is a draft now (one read; False for a task without a spec).
        Moves to ready ask it, to land in backlog instead. A revise that commits between this
        read and the move's commit can still leave the task ready under a draft: the claim path
        refuses such a task and puts it back (claims._spec_still_approved)."""
        return task.spec_id is not None and self.spec(task.project, task.spec_id).status is SpecStatus.DRAFT

    def spec(self, project: str, spec_id: str) -> Spec:
        item = self.store.get(*records.spec_key(project, parse_spec_id(spec_id)))
        if item is None:
            raise not_found(f"{spec_id} in project {project}")
        return records.load(Spec, item)

    def all_pages(self, fetch: Callable[[str | None], Any]) -> Iterator[Item]:
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield from page.items
            cursor = page.cursor
            if cursor is None:
                return

    def project_names(self) -> list[str]:
        """Every project's name, from the directory partition."""
        return [i.sk for i in self.all_pages(lambda c: self.store.query("PROJECTS", limit=200, cursor=c))]

    def tasks_in_status(self, project: str, status: Status) -> Iterator[Task]:
        pk = records.queue_pk(project, status)
        for item in self.all_pages(
            lambda c: self.store.query_index(IndexName.QUEUE, pk, limit=200, cursor=c)
        ):
            yield records.load(Task, item)

    def runs(self, task_id: str) -> Iterator[VerificationRun]:
        """Every verification run of a task, oldest first."""
        pk = records.task_pk(task_id)
        for item in self.all_pages(
            lambda c: self.store.query(pk, sk_prefix=records.RUN_PREFIX, limit=200, cursor=c)
        ):
            yield records.load(VerificationRun, item)


def _check_chained(ops: Sequence[Op]) -> None:
    """A task event is written only with its task, whose head is that event's hash: a use case
    that forgot `chained` fails here, in every test that reaches it, not in an audit later."""
    puts = {(op.item.pk, op.item.sk): op for op in ops if isinstance(op, Put)}
    for (pk, sk), op in puts.items():
        if pk.startswith("T#") and sk.startswith("H#"):
            task = puts.get(records.task_key(op.item.data["task_id"]))
            head = op.digest if isinstance(op, EventPut) else chain.digest(op.item.data)
            if task is None or task.item.data.get("history_head") != head:
                raise AssertionError(f"event {pk}/{sk} is not chained to its task in the same commit")


@dataclass(frozen=True)
class EventPut(Put):
    """The write of a history event, with the chain hash of exactly the item it writes (computed
    from `item.data` where it was made), so no one hashes an event twice."""

    digest: str = ""


def _event_put(ev: HistoryEvent) -> EventPut:
    item = records.event_item(ev)
    return EventPut(item, digest=chain.digest(item.data) if ev.task_id is not None else "")


# The write `chained` made for an event, handed to `put_event` for the same event object (a use
# case calls the two on adjacent lines): encoding and hashing an event is most of what the chain
# costs a state change. Keyed by id() and holding the event itself, so an id is never reused
# while its entry lives; a use case that chains an event and then fails before writing it leaves
# an entry behind, hence the bound.
_MADE: dict[int, tuple[HistoryEvent, EventPut]] = {}
_MADE_MAX = 256


def event(
    who: Acting | str,
    action: str,
    *,
    project: str,
    at: Any,
    task: Task | None = None,
    from_status: Status | None = None,
    to_status: Status | None = None,
    **detail: Any,
) -> HistoryEvent:
    if isinstance(who, Acting):
        actor, cred, obo = who.actor, who.credential_id, who.on_behalf_of
    else:
        actor, cred, obo = who, None, None
    return HistoryEvent(
        task_id=task.id if task else None,
        seq=task.version + 1 if task else 0,
        project=project,
        at=at,
        actor=actor,
        credential_id=cred,
        on_behalf_of=obo,
        action=action,
        from_status=from_status,
        to_status=to_status,
        detail={k: v for k, v in detail.items() if v is not None},
        prev=task.history_head if task else None,
    )


def chained(new: Task, ev: HistoryEvent) -> Task:
    """The task as it is written with its event `ev`: its chain head is now that event's hash
    (domain/chain.py). Every commit of a task event goes with its task (Context.commit checks)."""
    return new.model_copy(update={"history_head": chain_head(ev)})


def chain_head(ev: HistoryEvent) -> str:
    """What `chained` sets as the task's history_head, for a caller that copies the task with
    other changes anyway (transitions.move): one copy of the task instead of two."""
    put = _event_put(ev)
    if len(_MADE) >= _MADE_MAX:
        _MADE.clear()
    _MADE[id(ev)] = (ev, put)
    return put.digest


def put_task(old: Task | None, new: Task, *, alive_at: str | None = None) -> Put:
    """The conditional write of a task. Ended attempts are forward-only: never rewritten.
    alive_at: the write lands only if the stored claim's lease runs past that time."""
    if old is not None:
        for before, after in zip(old.attempts, new.attempts, strict=False):
            if before.ended_at is not None and before != after:
                raise AssertionError(f"attempt {before.number} of {old.id} ended and may not change")
        if len(new.attempts) < len(old.attempts):
            raise AssertionError(f"attempts of {old.id} may not be removed")
    return Put(records.task_item(new), None if old is None else old.version, alive_at)


def put_event(e: HistoryEvent) -> Put:
    made = _MADE.pop(id(e), None)
    if made is not None and made[0] is e:
        return made[1]
    return _event_put(e)


MAX_LINES = 10
MAX_LINE_CHARS = 2000
MAX_TEXT_CHARS = 20_000


def lines(values: list[str], what: str) -> list[str]:
    """Non-empty, bounded lines of text (findings): records stay small, forever."""
    out = [v.strip() for v in values if v.strip()]
    if len(out) > MAX_LINES or any(len(v) > MAX_LINE_CHARS for v in out):
        raise invalid(f"{what}: at most {MAX_LINES} entries of at most {MAX_LINE_CHARS} characters")
    return out


def text(value: str | None, what: str, limit: int = MAX_TEXT_CHARS) -> str | None:
    """A text argument within its limit and storable (see `storable`)."""
    if value is not None and len(value) > limit:
        raise invalid(f"{what}: at most {limit} characters")
    return storable(value, what)


def storable(value: str | None, what: str) -> str | None:
    """Text with a UTF-8 form. The interfaces refuse a lone surrogate first (domain.text's
    CheckedText); this is the services' own check, for fields that become part of a record
    before the store's last net could see them (a title fails in pydantic there)."""
    if value is not None and unencodable(value) is not None:
        raise invalid(f"{what}: text must be valid Unicode (it holds a lone UTF-16 surrogate)")
    return value
