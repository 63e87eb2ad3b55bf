"""How records are stored: empty "nothing here" fields are left out (a write unit is paid per KB
written), and loading gives back exactly the record that was written."""

from __future__ import annotations

from datetime import UTC, datetime

from taskgate.domain.models import (
    Attempt,
    Claim,
    Criterion,
    CriterionKind,
    Finding,
    FindingSource,
    HistoryEvent,
    Project,
    Risk,
    Status,
    Submission,
    Task,
)
from taskgate.service import records

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _task(**changes: object) -> Task:
    base = Task(
        id="shop-7",
        project="shop",
        number=7,
        title="Cart",
        status=Status.READY,
        criteria=[Criterion(id="AC-shop-7.1", text="works")],
        created_by="human:alice",
        created_at=NOW,
        updated_at=NOW,
        status_changed_at=NOW,
        version=3,
    )
    return base.model_copy(update=changes)


def test_empty_fields_are_left_out_and_come_back_on_load() -> None:
    task = _task()
    item = records.task_item(task)
    for absent in ("description", "spec_id", "spec_criteria", "blocked_by", "attempts", "findings", "claim"):
        assert absent not in item.data
    assert "verify_ref" not in item.data["criteria"][0]
    assert records.load(Task, item) == task.model_copy(update={"version": 4})


def test_defaults_with_a_meaning_are_always_written() -> None:
    # A priority of 0, low risk, no attempts used, a phase: stored even though they are the
    # defaults, so changing a default later never changes what a stored record says.
    claim = Claim(
        token_hash="ab" * 32,
        actor="agent:a",
        credential_id="key_1",
        attempt=1,
        claimed_at=NOW,
        expires_at=NOW,
        lease_minutes=30,
    )
    data = records.task_item(_task(status=Status.CLAIMED, claim=claim)).data
    assert data["priority"] == 0 and data["risk"] == Risk.LOW.value and data["attempts_used"] == 0
    assert data["claim"]["phase"] == "implementing" and "last_heartbeat_at" not in data["claim"]
    project = records.project_item(Project(name="shop", created_by="human:a", created_at=NOW)).data
    assert project["max_attempts"] == 3 and project["lease_minutes"] == 30
    assert project["verification_on"] is False and "verifier_config" not in project


def test_values_that_only_look_empty_are_kept_where_the_default_is_not_empty() -> None:
    # An explicit empty override of the project's verification commands is not "no override".
    task = _task(verification_commands=[], description="")
    item = records.task_item(task)
    assert item.data["verification_commands"] == []
    assert records.load(Task, item).verification_commands == []


def test_nested_records_round_trip() -> None:
    submission = Submission(
        commit_sha="ab" * 20, evidence="done", actor="agent:a", credential_id="key_1", submitted_at=NOW
    )
    attempt = Attempt(number=1, actor="agent:a", credential_id="key_1", started_at=NOW, submission=submission)
    finding = Finding(attempt=1, source=FindingSource.HUMAN, by="human:b", at=NOW, summary="no")
    task = _task(
        attempts=[attempt],
        findings=[finding],
        criteria=[Criterion(id="AC-shop-7.1", text="t", kind=CriterionKind.TEST, verify_ref="a.b")],
    )
    item = records.task_item(task)
    stored = item.data["attempts"][0]
    assert "self_report" not in stored["submission"] and "ended_at" not in stored
    assert item.data["findings"][0]["attempt"] == 1 and "details" not in item.data["findings"][0]
    assert records.load(Task, item) == task.model_copy(update={"version": 4})
    event = HistoryEvent(project="shop", at=NOW, actor="human:a", action="x")
    assert records.load(HistoryEvent, records.event_item(event)) == event
