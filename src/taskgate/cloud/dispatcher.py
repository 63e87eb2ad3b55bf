"""The dispatcher function: the table's stream in, a Fargate verifier draining the project out.

The event source mapping's filter passes only items whose new image is in a needs_verification
queue (GSI1PK "Q#needs_verification#<project>", i.e. task items); this function keeps the
records where the task *entered* that status (the old image was in another one) and hands
the project to `service.dispatch.ensure`, which reads the project's switch and starts a
verifier task only when fewer than the project's concurrency are draining it (else the running
ones pick the submission up). Records are processed with Powertools' batch processor: a record
that fails (unreadable image, ECS refusing to start) is reported in `batchItemFailures`, so
Lambda retries from it while the records before it stay done.

The base branch moving (a git host's push webhook, a verifier's read of the tip: service/
staleness.py) rewrites the project's BASE-MOVED item in the same commit; the filter passes that
item's records too, and the function hands the project to `service.dispatch.restale`, which
starts a verifier under the same slots when the move left verified tasks stale. An accept that
puts a task in a project's landing queue rewrites its LANDING item: the filter passes that too,
and `service.dispatch.land` starts a verifier when a landing step waits.

Two schedules invoke the same function. {"sweep": true, "execution_id"} (every few minutes):
lapsed slots of lost or stuck tasks are logged, and every project with work waiting (submissions,
stale verified tasks) and no live slot gets a task, so no submission waits on a task that is
gone. {"nightly": true, ...}: the same, logged as the nightly run, and also for every project
whose verdicts hold for a base tip: the cloud has no other way to learn that the tip moved when
no webhook said so, so the task reads it (verifier/tips.py) and re-verifies what went stale. A project it could not start is logged as an error and
fails the invocation, so the schedule retries it (the starts carry the execution id in their
idempotency tokens: what already started is not started again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from taskgate import runtime
from taskgate.cloud import observe
from taskgate.cloud.ecs import EcsLauncher
from taskgate.domain.models import Status, Task
from taskgate.service import records
from taskgate.service.dispatch import DispatchOutcome, Entered, ensure, land, restale, sweep
from taskgate.store import body
from taskgate.store.port import Item

PRINCIPAL = "system:dispatcher"


class UnreadableRecord(ValueError):
    """A stream record of a task item that does not parse: reported as a batch item failure."""


def entered(raw: Mapping[str, Any]) -> Entered | None:
    """The submission a stream record announces, or None if the record is no such thing.

    Only a MODIFY whose old image was not waiting for verification and whose new one is: a
    run starting or erring on a waiting task rewrites it without entering the status again."""
    if raw.get("eventName") != "MODIFY":
        return None
    images = raw.get("dynamodb") or {}
    new, old = images.get("NewImage"), images.get("OldImage")
    if not isinstance(new, Mapping) or not isinstance(old, Mapping):
        return None
    if not str((new.get("SK") or {}).get("S", "")).startswith(records.TASK_SK_PREFIX):
        return None
    try:
        task = records.load(Task, Item(new["PK"]["S"], new["SK"]["S"], body.decode(new), int(new["V"]["N"])))
        before = body.decode(old).get("status")
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise UnreadableRecord(f"stream record {raw.get('eventID')}: task image unreadable: {exc}") from exc
    attempt = task.current_attempt()
    if task.status is not Status.NEEDS_VERIFICATION or before == Status.NEEDS_VERIFICATION.value:
        return None
    if attempt is None:  # never so for a task that was submitted; nothing to verify
        return None
    return Entered(task_id=task.id, project=task.project, attempt=attempt.number, version=task.version)


@dataclass(frozen=True)
class BaseMove:
    """The base branch of `project` moved to `tip` (the BASE-MOVED item's `version`)."""

    project: str
    tip: str
    version: int


def _project_item(
    raw: Mapping[str, Any], key: Callable[[str], tuple[str, str]]
) -> tuple[str, Mapping[str, Any]] | None:
    """The project and new image of a stream record that writes the project's item `key` names
    (an insert or a change), or None if the record is no such thing."""
    if raw.get("eventName") not in ("INSERT", "MODIFY"):
        return None
    new = (raw.get("dynamodb") or {}).get("NewImage")
    if not isinstance(new, Mapping):
        return None
    pk, sk = str((new.get("PK") or {}).get("S", "")), str((new.get("SK") or {}).get("S", ""))
    project = pk.removeprefix(records.project_pk(""))
    if not project or pk == project or (pk, sk) != key(project):
        return None
    return project, new


def base_move(raw: Mapping[str, Any]) -> BaseMove | None:
    """The move a stream record of a project's BASE-MOVED item announces, or None if the record
    is no such thing."""
    found = _project_item(raw, records.base_moved_key)
    if found is None:
        return None
    project, new = found
    try:
        return BaseMove(project=project, tip=str(body.decode(new)["tip"]), version=int(new["V"]["N"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise UnreadableRecord(f"stream record {raw.get('eventID')}: base move unreadable: {exc}") from exc


def queue_changed(raw: Mapping[str, Any]) -> tuple[str, int] | None:
    """The project and version of a stream record of a project's LANDING item (its landing
    queue), or None if the record is no such thing."""
    found = _project_item(raw, records.landing_key)
    if found is None:
        return None
    project, new = found
    try:
        return project, int(new["V"]["N"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UnreadableRecord(
            f"stream record {raw.get('eventID')}: landing queue unreadable: {exc}"
        ) from exc


_launcher: EcsLauncher | None = None


def launcher() -> EcsLauncher:
    global _launcher
    if _launcher is None:
        _launcher = EcsLauncher.from_env()
    return _launcher


def _record(record: DynamoDBRecord) -> str:
    raw = record.raw_event
    event_id = raw.get("eventID")
    try:
        found = entered(raw)
        if found is None:
            moved = base_move(raw)
            if moved is not None:
                return _moved(moved, event_id)
            queued = queue_changed(raw)
            if queued is not None:
                return _to_land(*queued, event_id)
            observe.logger.info("not a submission entering verification", event_id=event_id)
            return "skipped"
        observe.bind(task_id=found.task_id)
        result = ensure(
            runtime.context(),
            found.project,
            launcher().launch_drain,
            base=launcher().task_definition,
            # A redelivered record asks again with the same id (the start's idempotency token).
            start_id=f"{found.task_id}|{found.attempt}|{found.version}",
            stack_concurrency=launcher().concurrency,
            stale=_stale,
        )
        outcome = result.outcome
    except Exception:
        observe.logger.exception("record failed; Lambda delivers it again", event_id=event_id)
        raise
    finally:
        observe.logger.remove_keys(["task_id"])
    observe.logger.info(
        "dispatch",
        outcome=outcome.value,
        task_id=found.task_id,
        attempt=found.attempt,
        project=found.project,
        slot=result.slot,
        event_id=event_id,
    )
    return outcome.value


def _moved(moved: BaseMove, event_id: Any) -> str:
    result = restale(
        runtime.context(),
        moved.project,
        launcher().launch_drain,
        base=launcher().task_definition,
        # The item's version: a redelivered record asks again with the same id, a later move of
        # the branch back to an earlier tip with another.
        start_id=f"base|{moved.project}|{moved.tip}|{moved.version}",
        stack_concurrency=launcher().concurrency,
        stale=_stale,
    )
    observe.logger.info(
        "base moved",
        outcome=result.outcome.value,
        project=moved.project,
        tip=moved.tip,
        slot=result.slot,
        event_id=event_id,
    )
    return result.outcome.value


def _to_land(project: str, version: int, event_id: Any) -> str:
    result = land(
        runtime.context(),
        project,
        launcher().launch_drain,
        base=launcher().task_definition,
        # The queue item's version: a redelivered record asks again with the same id.
        start_id=f"land|{project}|{version}",
        stack_concurrency=launcher().concurrency,
        stale=_stale,
    )
    observe.logger.info(
        "landing queue", outcome=result.outcome.value, project=project, slot=result.slot, event_id=event_id
    )
    return result.outcome.value


def _stale(project: str, task_definition: str) -> None:
    observe.logger.warning(
        "the project's image runs a task definition copied from an older revision of the stack's; "
        "saving its verifier config again registers a current one",
        project=project,
        task_definition=task_definition,
    )


class NightlyIncomplete(RuntimeError):
    """Some project with waiting work got no verifier on a scheduled run: the schedule retries."""


def _scheduled(event: dict[str, Any], kind: str) -> dict[str, Any]:
    run_id = str(event.get("execution_id") or event.get("scheduled_time") or "")
    if not run_id:
        raise ValueError(f"a {kind} event carries the schedule's execution_id")
    observe.bind(scheduled_time=str(event.get("scheduled_time") or "") or None)
    report = sweep(
        runtime.context(),
        run_id,
        launcher().launch_drain,
        base=launcher().task_definition,
        stack_concurrency=launcher().concurrency,
        stale=_stale,
        prefix=kind,
        read_tips=kind == "nightly",
    )
    for project, slot in report.lapsed:
        observe.logger.warning(
            "verifier slot lapsed: its task stopped renewing its lease (crashed, stopped, or stuck)",
            project=project,
            slot=slot,
        )
    for project, result in report.started:
        if result.outcome is DispatchOutcome.STARTED:
            observe.logger.info(
                f"{kind} verifier started",
                project=project,
                why=report.why[project].value,
                slot=result.slot,
                task_definition=result.task_definition,
                started=result.started,
            )
    for project, why in report.failed.items():
        observe.logger.error(f"{kind} verifier not started", project=project, reason=why)
    started = {p: r.started for p, r in report.started if r.outcome is DispatchOutcome.STARTED}
    if report.started or report.failed or report.lapsed or kind == "nightly":
        observe.logger.info(f"{kind} done", started=len(started), failed=len(report.failed))
    if report.failed:
        raise NightlyIncomplete(f"no verifier started for {', '.join(sorted(report.failed))}")
    return {"started": started, "lapsed": [f"{p}#{n}" for p, n in report.lapsed]}


# A batch whose every record failed is answered like any other (all its records in
# batchItemFailures), not by raising: Lambda retries from the first either way, and the
# function does not count as failed for records it reported.
_processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)


def _dispatch_batch(event: dict[str, Any], context: Any) -> dict[str, Any]:
    observe.bind(principal=PRINCIPAL)
    if event.get("nightly") is True:
        return _scheduled(event, "nightly")
    if event.get("sweep") is True:
        return _scheduled(event, "sweep")
    result = process_partial_response(
        event=event, record_handler=_record, processor=_processor, context=context
    )
    return dict(result)


handler = observe.instrument(_dispatch_batch, correlation_id_path="execution_id")
