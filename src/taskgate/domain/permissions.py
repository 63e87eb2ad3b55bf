"""Which principal may take which action, as one table (docs/architecture.md, "Principals")."""

from __future__ import annotations

from enum import StrEnum

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import AgentRole, Risk, VerifierKind
from taskgate.domain.principals import Acting, PrincipalKind


class Op(StrEnum):
    READ = "read"
    CREATE_PROJECT = "create_project"
    UPDATE_PROJECT = "update_project"
    CREATE_SPEC = "create_spec"
    UPDATE_SPEC = "update_spec"
    LOWER_RISK = "lower_risk"  # of a draft spec; raising it is part of UPDATE_SPEC
    APPROVE_SPEC = "approve_spec"
    REVISE_SPEC = "revise_spec"
    CREATE_TASK = "create_task"
    UPDATE_TASK = "update_task"  # title, description, priority, blockers, verification commands
    # A task's acceptance criteria (its own, or which of its spec's it holds): fixed once work can
    # start on them; an architect may change them only while the task's spec is a draft.
    CHANGE_CRITERIA = "change_criteria"
    SET_STATUS = "set_status"  # a human's lifecycle move asked for as a status (update_task)
    CLAIM = "claim"
    WORK = "work"  # heartbeat, release, report_failure, escalate, submit: also needs the claim token
    ACCEPT = "accept"
    REOPEN = "reopen"
    CANCEL = "cancel"
    RESOLVE = "resolve"
    LOG_DECISION = "log_decision"
    ADD_NOTE = "add_note"
    SET_EXECUTION_DEFAULTS = "set_execution_defaults"
    SET_VERIFICATION = "set_verification"
    SET_VERIFIER_CONFIG = "set_verifier_config"
    MANAGE_KEYS = "manage_keys"
    VERIFY = "verify"  # local verifier: start and finish runs
    REVIEW = "review"  # reviewer verifier: judge review criteria


class Role(StrEnum):
    HUMAN = "human"  # a human, or an agent acting on_behalf_of a human who delegated to its key
    AGENT = "agent"  # any agent key
    ARCHITECT = "architect"  # an agent key with the architect role
    LOCAL_VERIFIER = "local_verifier"
    REVIEWER = "reviewer"


H, AG, AR, LV, RV = Role.HUMAN, Role.AGENT, Role.ARCHITECT, Role.LOCAL_VERIFIER, Role.REVIEWER

RULES: dict[Op, frozenset[Role]] = {
    Op.READ: frozenset({H, AG, AR, LV, RV}),
    Op.CREATE_PROJECT: frozenset({H}),
    Op.UPDATE_PROJECT: frozenset({H}),
    Op.CREATE_SPEC: frozenset({H, AG}),
    Op.UPDATE_SPEC: frozenset({H, AG}),
    Op.LOWER_RISK: frozenset({H}),  # and board-only: never a delegated agent
    Op.APPROVE_SPEC: frozenset({H, AR}),  # architect: low risk only (see authorize)
    Op.REVISE_SPEC: frozenset({H}),
    Op.CREATE_TASK: frozenset({H, AG}),
    Op.UPDATE_TASK: frozenset({H, AG}),
    Op.CHANGE_CRITERIA: frozenset({H, AR}),  # architect: spec still a draft (see authorize); board only
    Op.SET_STATUS: frozenset({H}),  # then the move's own op: accept, reopen, cancel or resolve
    Op.CLAIM: frozenset({AG}),
    Op.WORK: frozenset({AG}),
    Op.ACCEPT: frozenset({H}),  # a delegated agent: low risk only (see authorize)
    Op.REOPEN: frozenset({H}),
    Op.CANCEL: frozenset({H}),
    Op.RESOLVE: frozenset({H}),
    Op.LOG_DECISION: frozenset({H, AG}),
    Op.ADD_NOTE: frozenset({H, AG}),
    Op.SET_EXECUTION_DEFAULTS: frozenset({H, AG}),
    Op.SET_VERIFICATION: frozenset({H}),
    Op.SET_VERIFIER_CONFIG: frozenset({H}),
    Op.MANAGE_KEYS: frozenset({H}),
    Op.VERIFY: frozenset({LV}),
    Op.REVIEW: frozenset({RV}),
}

# Ops a delegated agent may not take with the human's permissions: the human-only switches
# (verification, its config, keys, risk) must be made by the human on the board, never from an agent's chat. Criteria are
# among them for the reason lowering risk is: a delegated key is an agent that may claim the task
# next, and the goalposts it moved would then be its own.
BOARD_ONLY = frozenset(
    {Op.SET_VERIFICATION, Op.SET_VERIFIER_CONFIG, Op.MANAGE_KEYS, Op.LOWER_RISK, Op.CHANGE_CRITERIA}
)

# What an agent refused a criteria change should do instead (the code's general hint, "ask for
# another role", would send it looking for a key that may move its goalposts).
CRITERIA_HINT = (
    "Meet the criteria as they are. If one is wrong or cannot be met, say so: claim the task and "
    "call report_failure(kind='spec_gap', findings=[...]) (or escalate with a question), or "
    "add_note for a human; a human changes criteria on the board."
)
SCOPE_HINT = (
    "Check the project name: list_projects shows the projects this key covers. Work on another "
    "project needs a key a human mints for it."
)
STATUS_HINT = (
    "Move your own work with the lifecycle tools: claim_task, heartbeat, release_task, "
    "report_failure, escalate, submit_task. Cancel, reopen, accept and resolve are a human's: on "
    "the board, or by you with on_behalf_of='human:<name>' only when that human asked you to and "
    "has delegated to your key."
)


def roles_of(acting: Acting) -> frozenset[Role]:
    p = acting.principal
    if p.kind is PrincipalKind.HUMAN:
        return frozenset({H})
    if p.kind is PrincipalKind.VERIFIER:
        return frozenset({LV if p.verifier_kind is VerifierKind.LOCAL else RV})
    roles = {AG}
    if p.role is AgentRole.ARCHITECT:
        roles.add(AR)
    if acting.on_behalf_of is not None:
        roles.add(H)
    return frozenset(roles)


def authorize(
    op: Op,
    acting: Acting,
    *,
    project: str | None = None,
    risk: Risk | None = None,
    spec_draft: bool = False,
) -> None:
    """Raise E_FORBIDDEN unless `acting` may take `op` (on `project`, at `risk`; for
    CHANGE_CRITERIA, `spec_draft`: the task's spec is a draft now)."""
    p = acting.principal
    if project is not None and p.kind is not PrincipalKind.HUMAN and not p.may_use_project(project):
        # One answer whether the project exists or not (a scoped key learns nothing of the others),
        # and a hint that sends the agent to its own projects, not to "another role".
        raise TaskgateError(
            ErrorCode.FORBIDDEN,
            f"project {project} not found or not covered by this key",
            hint=SCOPE_HINT,
        )
    roles = roles_of(acting)
    if op is Op.CHANGE_CRITERIA:
        _criteria_change(acting, roles, spec_draft)
        return
    if acting.is_delegated and op in BOARD_ONLY:
        raise TaskgateError(
            ErrorCode.FORBIDDEN, f"{op.value} is for a human on the board, not a delegated agent"
        )
    allowed = RULES[op] & roles
    if not allowed and op is Op.SET_STATUS:
        raise TaskgateError(
            ErrorCode.FORBIDDEN,
            f"{acting.actor} may not set a task's status: status moves only by the lifecycle's "
            "actions, and the ones set as a status (cancel, reopen, accept, resolve) are a human's",
            hint=STATUS_HINT,
        )
    if not allowed:
        raise TaskgateError(ErrorCode.FORBIDDEN, f"{acting.actor} may not {op.value.replace('_', ' ')}")
    human_itself = p.kind is PrincipalKind.HUMAN
    if op is Op.APPROVE_SPEC and not human_itself and H not in allowed and risk is not Risk.LOW:
        raise TaskgateError(ErrorCode.FORBIDDEN, "an architect agent may approve only low-risk specs")
    if op is Op.APPROVE_SPEC and acting.is_delegated and risk is not Risk.LOW:
        raise TaskgateError(
            ErrorCode.FORBIDDEN, "medium and high risk specs are approved by a human on the board"
        )
    if op is Op.ACCEPT and acting.is_delegated and risk is not Risk.LOW:
        raise TaskgateError(
            ErrorCode.FORBIDDEN, "medium and high risk work is accepted by a human on the board"
        )


def _criteria_change(acting: Acting, roles: frozenset[Role], spec_draft: bool) -> None:
    """A task's criteria and risk are fixed once work can start on them;
    only a human (or an architect, while the spec is a draft: its approval then covers them)
    changes them. Never a delegated agent (BOARD_ONLY), whatever its role."""
    allowed = RULES[Op.CHANGE_CRITERIA] & roles
    fixed = "a task's acceptance criteria are fixed once work can start on them"
    if acting.is_delegated:
        why = f"{fixed}; a human changes them on the board, not a delegated agent"
    elif H in allowed or (AR in allowed and spec_draft):
        return
    elif AR in allowed:
        why = f"{fixed}: this task has no draft spec, so only a human changes them (on the board)"
    else:
        why = f"{fixed}: only a human (or an architect, while the task's spec is a draft) changes them"
    raise TaskgateError(
        ErrorCode.FORBIDDEN, f"{acting.actor} may not change a task's criteria: {why}", hint=CRITERIA_HINT
    )
