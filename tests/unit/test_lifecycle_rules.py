"""The lifecycle table as data: lookups, guards, attempt and error accounting."""

from __future__ import annotations

import itertools

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.lifecycle import (
    TABLE,
    VERIFIER_ERRORS_TO_NEEDS_HUMAN,
    Action,
    Guard,
    Move,
    MoveResult,
    depends_on_project,
    find_move,
    land,
    why_human,
)
from taskgate.domain.merging import CONFLICTS_TO_NEEDS_HUMAN
from taskgate.domain.models import Status, WhyHuman


def _open(guard: Guard | None, on: bool, land_on: bool) -> bool:
    return {
        None: True,
        Guard.VERIFICATION_OFF: not on,
        Guard.VERIFICATION_ON: on,
        Guard.LAND_OFF: not land_on,
        Guard.LAND_ON: land_on,
    }[guard]


def _allowed(source: Status | None, action: Action, on: bool, land_on: bool = False) -> bool:
    return any(m.source == source and m.action == action and _open(m.guard, on, land_on) for m in TABLE)


@pytest.mark.parametrize("land_on", [False, True])
@pytest.mark.parametrize("on", [False, True])
def test_every_pair_outside_the_table_is_wrong_state(on: bool, land_on: bool) -> None:
    sources: list[Status | None] = [None, *Status]
    checked = 0
    for source, action in itertools.product(sources, Action):
        if _allowed(source, action, on, land_on):
            assert find_move(source, action, verification_on=on, land_on=land_on).action is action
            continue
        with pytest.raises(TaskgateError) as err:
            find_move(source, action, verification_on=on, land_on=land_on)
        assert err.value.code is ErrorCode.WRONG_STATE
        assert err.value.current_status == (source.value if source else None)
        checked += 1
    assert checked > 200  # the table is small; most pairs are refused


def test_table_has_no_duplicate_unguarded_rows() -> None:
    seen = set()
    for m in TABLE:
        key = (m.source, m.action, m.guard)
        assert key not in seen, key
        seen.add(key)


def test_accept_and_reopen_from_needs_verification_depend_on_the_switch() -> None:
    assert find_move(Status.NEEDS_VERIFICATION, Action.ACCEPT, verification_on=False).target is Status.DONE
    with pytest.raises(TaskgateError, match="verification is on"):
        find_move(Status.NEEDS_VERIFICATION, Action.ACCEPT, verification_on=True)
    with pytest.raises(TaskgateError, match="verification is on"):
        find_move(Status.NEEDS_VERIFICATION, Action.REOPEN, verification_on=True)
    assert find_move(Status.VERIFIED, Action.ACCEPT, verification_on=False).target is Status.DONE


def test_the_last_attempt_sends_to_needs_human_instead_of_ready() -> None:
    fail = find_move(Status.CLAIMED, Action.FAIL_OTHER)
    assert land(fail, attempts_used=0, max_attempts=3, verifier_errors_in_row=0).target is Status.READY
    assert land(fail, attempts_used=1, max_attempts=3, verifier_errors_in_row=0).target is Status.READY
    last = land(fail, attempts_used=2, max_attempts=3, verifier_errors_in_row=0)
    assert (last.target, last.attempts_used, last.exhausted) == (Status.NEEDS_HUMAN, 3, True)
    release = find_move(Status.CLAIMED, Action.RELEASE)
    assert land(release, attempts_used=2, max_attempts=3, verifier_errors_in_row=0).target is Status.READY
    dependency = find_move(Status.CLAIMED, Action.FAIL_DEPENDENCY)  # to blocked, not ready
    assert (
        land(dependency, attempts_used=2, max_attempts=3, verifier_errors_in_row=0).target is Status.BLOCKED
    )


def test_third_verifier_error_in_a_row_goes_to_needs_human() -> None:
    err = find_move(Status.NEEDS_VERIFICATION, Action.VERIFY_ERROR)
    one = land(err, attempts_used=0, max_attempts=3, verifier_errors_in_row=0)
    two = land(err, attempts_used=0, max_attempts=3, verifier_errors_in_row=one.verifier_errors_in_row)
    three = land(err, attempts_used=0, max_attempts=3, verifier_errors_in_row=two.verifier_errors_in_row)
    assert [one.target, two.target, three.target] == [
        Status.NEEDS_VERIFICATION,
        Status.NEEDS_VERIFICATION,
        Status.NEEDS_HUMAN,
    ]
    assert three.attempts_used == 0
    passed = land(
        find_move(Status.NEEDS_VERIFICATION, Action.VERIFY_PASS),
        attempts_used=0,
        max_attempts=3,
        verifier_errors_in_row=2,
    )
    assert passed.verifier_errors_in_row == 0


def test_cancel_from_any_status_but_done() -> None:
    for s in Status:
        if s in (Status.DONE, Status.CANCELLED):
            with pytest.raises(TaskgateError):
                find_move(s, Action.CANCEL)
        else:
            assert find_move(s, Action.CANCEL).target is Status.CANCELLED


def test_a_move_to_ready_under_a_draft_spec_lands_in_backlog_unless_it_is_the_last_attempt() -> None:
    release = find_move(Status.CLAIMED, Action.RELEASE)
    fail = find_move(Status.CLAIMED, Action.FAIL_OTHER)
    kw = {"max_attempts": 3, "verifier_errors_in_row": 0}
    assert land(release, attempts_used=0, spec_draft=True, **kw).target is Status.BACKLOG
    assert land(fail, attempts_used=0, spec_draft=True, **kw).target is Status.BACKLOG
    assert land(fail, attempts_used=2, spec_draft=True, **kw).target is Status.NEEDS_HUMAN
    escalate = find_move(Status.CLAIMED, Action.ESCALATE)  # not a move to ready: unchanged
    assert land(escalate, attempts_used=0, spec_draft=True, **kw).target is Status.NEEDS_HUMAN


def test_a_move_that_does_not_depend_on_the_project_lands_alike_whatever_its_settings() -> None:
    """Services skip reading the project where depends_on_project says it cannot matter: for
    every such (status, action) the row and its landing are the same with the switch on or off
    and for any max_attempts; and the rows it says do depend on it really do, for some setting."""
    pairs = {(m.source, m.action) for m in TABLE}
    independent = {p for p in pairs if not depends_on_project(*p)}
    assert (Status.CLAIMED, Action.SUBMIT) in independent and (Status.LANDING, Action.LAND) in independent
    assert (Status.NEEDS_VERIFICATION, Action.ACCEPT) not in independent
    # accepting verified work lands it in done, or in the landing queue when taskgate lands
    assert (Status.VERIFIED, Action.ACCEPT) not in independent
    for source, action in pairs:
        outcomes = set()
        for on, land_on in itertools.product((False, True), (False, True)):
            try:
                row = find_move(source, action, verification_on=on, land_on=land_on)
            except TaskgateError:
                outcomes.add(("refused", on))
                continue
            for max_attempts in (1, 2, 3, 5):
                for used in range(max_attempts + 1):
                    out = land(row, attempts_used=used, max_attempts=max_attempts, verifier_errors_in_row=0)
                    outcomes.add((row.target, out.target, out.attempts_used - used))
        if (source, action) in independent:
            assert len({o for o in outcomes if o[0] != "refused"}) == 1 and not any(
                o[0] == "refused" for o in outcomes
            ), (source, action, outcomes)
        else:
            assert len(outcomes) > 1 or any(o[0] == "refused" for o in outcomes), (source, action, outcomes)


# -- a human's move asked for as a status (update_task(status)) ---------------------------------


def test_a_human_move_is_found_by_where_it_goes() -> None:
    from taskgate.domain.lifecycle import OWN_CALL, Who, human_move

    # reopening a held submission (needs_human -> ready) is its own call, with findings
    assert {(Status.NEEDS_HUMAN, Action.REOPEN)} == OWN_CALL
    human_rows = [m for m in TABLE if m.who is Who.HUMAN and (m.source, m.action) not in OWN_CALL]
    pairs = {(m.source, m.target) for m in human_rows}
    assert len(pairs) == len({(m.source, m.target, m.action) for m in human_rows})  # one action per pair
    for m in human_rows:
        assert m.source is not None
        assert human_move(m.source, m.target) is m.action
    assert human_move(Status.NEEDS_HUMAN, Status.READY) is Action.REQUEUE
    assert human_move(Status.NEEDS_HUMAN, Status.BACKLOG) is Action.REVISE_SPEC
    assert human_move(Status.VERIFIED, Status.READY) is Action.REOPEN
    for source, target in itertools.product(Status, Status):
        if (source, target) in pairs:
            continue
        with pytest.raises(TaskgateError) as refused:
            human_move(source, target)
        assert refused.value.code is ErrorCode.WRONG_STATE
        assert refused.value.current_status == source.value


def _landings_in_needs_human() -> list[tuple[Move, MoveResult]]:
    """Every way a row can land in needs_human: its own target, the third verifier error, or the
    last attempt used (any move to ready that may run out)."""
    found = []
    for m in TABLE:
        errors = VERIFIER_ERRORS_TO_NEEDS_HUMAN - 1 if m.action is Action.VERIFY_ERROR else 0
        # Used up by this move, or already (a system move to ready with nothing left).
        used = 2 if m.uses_attempt else 3
        conflicts = (
            CONFLICTS_TO_NEEDS_HUMAN - 1 if m.action in (Action.VERIFY_CONFLICT, Action.STALE_CONFLICT) else 0
        )
        out = land(
            m, attempts_used=used, max_attempts=3, verifier_errors_in_row=errors, conflicts_in_row=conflicts
        )
        if out.target is Status.NEEDS_HUMAN:
            found.append((m, out))
    return found


def test_every_landing_in_needs_human_says_why() -> None:
    seen = {}
    for m, out in _landings_in_needs_human():
        why, reason = why_human(m, out, max_attempts=3, text="the text")
        assert reason and "the text" in reason, (m, reason)
        seen[m.action] = why
    assert seen == {
        Action.FAIL_OTHER: WhyHuman.ATTEMPTS_USED_UP,
        Action.EXPIRE: WhyHuman.ATTEMPTS_USED_UP,
        Action.ESCALATE: WhyHuman.ESCALATED,
        Action.FAIL_SPEC_GAP: WhyHuman.REPORTED_FAILURE,
        Action.FAIL_DESIGN_CONFLICT: WhyHuman.REPORTED_FAILURE,
        Action.VERIFY_FAIL: WhyHuman.ATTEMPTS_USED_UP,
        Action.VERIFY_ERROR: WhyHuman.VERIFIER_ERRORS,
        Action.VERIFY_SPEC_ERROR: WhyHuman.SPEC_ERROR,
        Action.VERIFY_HOLD: WhyHuman.HELD,
        Action.REOPEN: WhyHuman.ATTEMPTS_USED_UP,
        Action.BLOCKERS_DONE: WhyHuman.ATTEMPTS_USED_UP,
        Action.SPEC_APPROVED: WhyHuman.ATTEMPTS_USED_UP,
        Action.VERIFY_CONFLICT: WhyHuman.MERGE_CONFLICTS,
        Action.STALE_CONFLICT: WhyHuman.MERGE_CONFLICTS,
        Action.STALE_FAIL: WhyHuman.ATTEMPTS_USED_UP,
    }


def test_a_spec_error_is_one_row_that_uses_no_attempt() -> None:
    [row] = [m for m in TABLE if m.action is Action.VERIFY_SPEC_ERROR]
    assert (row.source, row.target, row.uses_attempt) == (
        Status.NEEDS_VERIFICATION,
        Status.NEEDS_HUMAN,
        False,
    )
    out = land(row, attempts_used=1, max_attempts=3, verifier_errors_in_row=2)
    assert (out.target, out.attempts_used, out.verifier_errors_in_row) == (Status.NEEDS_HUMAN, 1, 0)
    assert why_human(row, out, max_attempts=3, text="spec error: AC-1.3 `x` matches 2 tests")[1] == (
        "spec error: AC-1.3 `x` matches 2 tests"
    )


def test_third_re_verification_error_in_a_row_goes_to_needs_human() -> None:
    """A re-verification that errs leaves the verdict, but counts: left verified and stale, the
    task would be handed out again at once to a verifier that cannot run it."""
    err = find_move(Status.VERIFIED, Action.STALE_ERROR)
    one = land(err, attempts_used=1, max_attempts=3, verifier_errors_in_row=0)
    two = land(err, attempts_used=1, max_attempts=3, verifier_errors_in_row=one.verifier_errors_in_row)
    three = land(err, attempts_used=1, max_attempts=3, verifier_errors_in_row=two.verifier_errors_in_row)
    assert [one.target, two.target, three.target] == [Status.VERIFIED, Status.VERIFIED, Status.NEEDS_HUMAN]
    assert [one.verifier_errors_in_row, two.verifier_errors_in_row] == [1, 2]
    assert three.attempts_used == 1
    why, text = why_human(err, three, max_attempts=3, text="verifier error: checkout failed")
    assert why is WhyHuman.VERIFIER_ERRORS
    assert text == "3 verifier errors in a row; the last: verifier error: checkout failed"
    passed = land(
        find_move(Status.VERIFIED, Action.STALE_PASS),
        attempts_used=1,
        max_attempts=3,
        verifier_errors_in_row=2,
    )
    assert passed.verifier_errors_in_row == 0
