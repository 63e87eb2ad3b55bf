"""Who may take which action (docs/architecture.md, "Principals")."""

from __future__ import annotations

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import AgentRole, Risk, VerifierKind
from taskgate.domain.permissions import BOARD_ONLY, CRITERIA_HINT, RULES, Op, Role, authorize
from taskgate.domain.principals import Acting, Principal, PrincipalKind, acting, human

EXEC = Principal(PrincipalKind.AGENT, "bob", "k1", role=AgentRole.EXECUTOR, delegations=("human:alice",))
ARCH = Principal(PrincipalKind.AGENT, "ann", "k2", role=AgentRole.ARCHITECT)
LOCAL = Principal(PrincipalKind.VERIFIER, "ci", "k3", verifier_kind=VerifierKind.LOCAL)
REVIEWER = Principal(PrincipalKind.VERIFIER, "rv", "k4", verifier_kind=VerifierKind.REVIEWER)
SCOPED = Principal(PrincipalKind.AGENT, "sam", "k5", role=AgentRole.EXECUTOR, projects=("alpha",))


def _may(who: Acting, op: Op, **kw: object) -> bool:
    try:
        authorize(op, who, **kw)  # type: ignore[arg-type]
    except TaskgateError as exc:
        assert exc.code is ErrorCode.FORBIDDEN
        return False
    return True


HUMAN_ONLY = [
    Op.CREATE_PROJECT,
    Op.REOPEN,
    Op.CANCEL,
    Op.RESOLVE,
    Op.SET_VERIFICATION,
    Op.SET_VERIFIER_CONFIG,
    Op.MANAGE_KEYS,
    Op.REVISE_SPEC,
]


@pytest.mark.parametrize("op", HUMAN_ONLY)
def test_human_only_actions(op: Op) -> None:
    assert _may(acting(human("alice")), op)
    for p in (EXEC, ARCH, LOCAL, REVIEWER):
        assert not _may(acting(p), op)


def test_architect_approves_low_risk_only() -> None:
    assert _may(acting(ARCH), Op.APPROVE_SPEC, risk=Risk.LOW)
    assert not _may(acting(ARCH), Op.APPROVE_SPEC, risk=Risk.MEDIUM)
    assert not _may(acting(ARCH), Op.APPROVE_SPEC, risk=Risk.HIGH)
    assert not _may(acting(EXEC), Op.APPROVE_SPEC, risk=Risk.LOW)
    assert _may(acting(human("alice")), Op.APPROVE_SPEC, risk=Risk.HIGH)


def test_delegation_gives_human_permissions_within_limits() -> None:
    delegated = acting(EXEC, on_behalf_of="human:alice")
    assert _may(delegated, Op.ACCEPT, risk=Risk.LOW)
    assert not _may(delegated, Op.ACCEPT, risk=Risk.MEDIUM)
    assert _may(delegated, Op.REOPEN)
    for op in (Op.SET_VERIFICATION, Op.SET_VERIFIER_CONFIG, Op.MANAGE_KEYS):
        assert not _may(delegated, op)  # switches and keys are made on the board
    assert not _may(acting(EXEC), Op.ACCEPT, risk=Risk.LOW)


def test_verifiers_only_verify() -> None:
    assert _may(acting(LOCAL), Op.VERIFY) and not _may(acting(LOCAL), Op.REVIEW)
    assert _may(acting(REVIEWER), Op.REVIEW) and not _may(acting(REVIEWER), Op.VERIFY)
    for op in (Op.CLAIM, Op.WORK, Op.ACCEPT, Op.CREATE_TASK):
        assert not _may(acting(LOCAL), op)
    assert not _may(acting(human("alice")), Op.VERIFY)


def test_key_scope_limits_projects() -> None:
    assert _may(acting(SCOPED), Op.CLAIM, project="alpha")
    assert not _may(acting(SCOPED), Op.CLAIM, project="beta")


def test_every_op_has_a_rule() -> None:
    assert set(RULES) == set(Op)
    assert all(RULES[op] <= set(Role) for op in Op)


# -- the goalposts: a task's criteria ----------------------------------------------------------


def test_the_table_gives_criteria_to_humans_and_architects_only() -> None:
    assert RULES[Op.CHANGE_CRITERIA] == {Role.HUMAN, Role.ARCHITECT}
    assert Op.CHANGE_CRITERIA in BOARD_ONLY  # never a delegated agent
    assert RULES[Op.SET_STATUS] == {Role.HUMAN}


@pytest.mark.parametrize("draft", [False, True])
def test_criteria_change_only_by_a_human_or_an_architect_on_a_draft(draft: bool) -> None:
    assert _may(acting(human("alice")), Op.CHANGE_CRITERIA, spec_draft=draft)
    assert _may(acting(ARCH), Op.CHANGE_CRITERIA, spec_draft=draft) is draft
    for p in (EXEC, SCOPED, LOCAL, REVIEWER):
        assert not _may(acting(p), Op.CHANGE_CRITERIA, spec_draft=draft)
    # A delegated key has the human's permissions, but not this one: it may claim the task next.
    assert not _may(acting(EXEC, on_behalf_of="human:alice"), Op.CHANGE_CRITERIA, spec_draft=draft)
    delegated_arch = Principal(
        PrincipalKind.AGENT, "ann", "k6", role=AgentRole.ARCHITECT, delegations=("human:alice",)
    )
    assert not _may(acting(delegated_arch, on_behalf_of="human:alice"), Op.CHANGE_CRITERIA, spec_draft=draft)


def test_a_refused_criteria_change_tells_the_agent_what_to_do_instead() -> None:
    with pytest.raises(TaskgateError) as refused:
        authorize(Op.CHANGE_CRITERIA, acting(EXEC), project="demo")
    assert refused.value.code is ErrorCode.FORBIDDEN
    assert "fixed once work can start" in refused.value.message
    assert refused.value.hint == CRITERIA_HINT
    assert "report_failure(kind='spec_gap'" in refused.value.hint
    with pytest.raises(TaskgateError) as architect:
        authorize(Op.CHANGE_CRITERIA, acting(ARCH), project="demo", spec_draft=False)
    assert "no draft spec" in architect.value.message and architect.value.hint == CRITERIA_HINT


def test_only_humans_and_delegated_agents_set_a_status() -> None:
    assert _may(acting(human("alice")), Op.SET_STATUS)
    assert _may(acting(EXEC, on_behalf_of="human:alice"), Op.SET_STATUS)
    for p in (EXEC, ARCH, LOCAL, REVIEWER):
        with pytest.raises(TaskgateError) as refused:
            authorize(Op.SET_STATUS, acting(p), project="demo")
        assert refused.value.code is ErrorCode.FORBIDDEN
        assert "on_behalf_of" in refused.value.hint and "report_failure" in refused.value.hint
