"""Spec rules: criteria numbering, rendering SPEC-<n>.md, the duplicate-criterion warning."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from taskgate.domain.errors import ErrorCode, TaskgateError, invalid
from taskgate.domain.ids import criterion_id
from taskgate.domain.models import CriteriaChange, Criterion, CriterionInput, CriterionKind, Spec, Task

# A criteria change is kept on its task in short: the newest KEPT_CHANGES, each naming at most
# CHANGE_LABELS criteria per side in at most LABEL_CHARS (the history event holds them whole).
KEPT_CHANGES = 5
CHANGE_LABELS = 10
LABEL_CHARS = 160


def number_criteria(spec_number: int, given: list[CriterionInput]) -> list[Criterion]:
    """A spec's criteria, AC-<n>.<m>."""
    if not given:
        raise TaskgateError(ErrorCode.EMPTY_CRITERIA, "a spec needs at least one acceptance criterion")
    return numbered(given, lambda index: criterion_id(spec_number, index))


def numbered(given: list[CriterionInput], id_of: Callable[[int], str]) -> list[Criterion]:
    """Criteria with server-assigned ids; a test or command criterion must say what to run."""
    out = []
    for index, c in enumerate(given, start=1):
        if c.kind in (CriterionKind.TEST, CriterionKind.COMMAND) and not (c.verify_ref or "").strip():
            raise invalid(f"criterion {index}: a {c.kind.value} criterion needs verify_ref")
        if c.guard and c.kind is not CriterionKind.TEST:
            # Only a named test can pass before the change; a command or a review has no baseline run.
            raise invalid(f"criterion {index}: guard applies to test criteria only, not to a {c.kind.value}")
        out.append(
            Criterion(id=id_of(index), text=c.text, kind=c.kind, verify_ref=c.verify_ref, guard=c.guard)
        )
    return out


def criteria_of(task: Task, spec: Spec | None) -> list[Criterion]:
    """The criteria a task must meet: the spec's it holds, then its own."""
    held: list[Criterion] = []
    if spec is not None:
        wanted = set(task.spec_criteria) or {c.id for c in spec.criteria}
        held = [c for c in spec.criteria if c.id in wanted]
    return held + list(task.criteria)


def _label(c: Criterion) -> str:
    text = f"{c.id} ({c.kind.value}): {c.verify_ref or c.text}"
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1].rstrip() + "…"


def _labels(criteria: list[Criterion]) -> list[str]:
    shown = [_label(c) for c in criteria[:CHANGE_LABELS]]
    if len(criteria) > CHANGE_LABELS:
        shown.append(f"and {len(criteria) - CHANGE_LABELS} more (get_task's history has them all)")
    return shown


def criteria_change(
    before: list[Criterion], after: list[Criterion], *, after_attempt: int, by: str, at: datetime
) -> CriteriaChange | None:
    """What an edit changed in the criteria a task must meet, or None if it changed none.
    Criteria are compared by what they ask (kind, ref, text), not by id: a task's own criteria
    are renumbered by every edit."""

    def asks(c: Criterion) -> tuple[str, str | None, str, bool]:
        return (c.kind.value, c.verify_ref, c.text, c.guard)

    kept_before = {asks(c) for c in before}
    kept_after = {asks(c) for c in after}
    removed = [c for c in before if asks(c) not in kept_after]
    added = [c for c in after if asks(c) not in kept_before]
    if not removed and not added:
        return None
    return CriteriaChange(
        after_attempt=after_attempt, by=by, at=at, removed=_labels(removed), added=_labels(added)
    )


def checkable_refs(criteria: Iterable[Criterion]) -> set[tuple[str, str]]:
    return {(c.kind.value, c.verify_ref or "") for c in criteria if c.kind is not CriterionKind.REVIEW}


def shared_criterion(kind: str, ref: str, other_id: str) -> str:
    """A criterion this task shares with another open task, and whether that matters: each
    task's commit is verified on its own, so the check must pass on each commit."""
    return (
        f"{kind} criterion '{ref}' is also on open task {other_id}: each task is verified on its "
        f"own commit, so it must pass on both; that matters only if {other_id}'s work is what makes "
        "it pass, and then this task should build on it (block it on "
        f"{other_id} with blocked_by)"
    )


def duplicate_warnings(mine: list[Criterion], others: dict[str, list[Criterion]]) -> list[str]:
    """Warn when a test/command criterion of this task is also on another open task: each task
    is verified on its own commit, so the check can pass for only one of them."""
    warnings = []
    my_refs = checkable_refs(mine)
    for other_id, criteria in sorted(others.items()):
        for kind, ref in sorted(my_refs & checkable_refs(criteria)):
            warnings.append(shared_criterion(kind, ref, other_id))
    return warnings


def render_markdown(spec: Spec) -> str:
    lines = [
        f"# {spec.id}: {spec.title}",
        "",
        f"- Risk: {spec.risk.value}",
        f"- Status: {spec.status.value} (revision {spec.revision})",
    ]
    if spec.approved_by:
        when = spec.approved_at.date().isoformat() if spec.approved_at else ""
        lines.append(f"- Approved by: {spec.approved_by} {when}".rstrip())
    lines += ["", spec.body.strip(), "", "## Acceptance criteria", ""]
    for c in spec.criteria:
        ref = f" — `{c.verify_ref}`" if c.verify_ref else ""
        kind = f"{c.kind.value}, guard" if c.guard else c.kind.value
        lines.append(f"- **{c.id}** ({kind}) {c.text}{ref}")
    return "\n".join(line for line in lines).strip() + "\n"
