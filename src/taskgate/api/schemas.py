"""Request and response bodies of the REST API.

Requests are validated here for shape only (types, required fields, no unknown fields); every
rule (ranges, names, who may do what) stays in domain/ and service/, which answer E_VALIDATION
themselves. Responses reuse the domain records where they hold nothing secret; tasks and keys
get their own shapes so no hash (claim token, key) ever leaves the server.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from taskgate.domain import limits
from taskgate.domain.baseline import DEFAULT_PROTECT, protect_globs
from taskgate.domain.batches import Batch
from taskgate.domain.commit_ids import Sha
from taskgate.domain.errors import ErrorCode
from taskgate.domain.human_actions import HumanAction, human_actions
from taskgate.domain.landing import Landed
from taskgate.domain.merging import BaseTip, MergedBase, held_for, stale_line, stale_on
from taskgate.domain.models import (
    AgentRole,
    AllowedChange,
    Attempt,
    ClaimTip,
    Credential,
    CredentialKind,
    CriteriaChange,
    Criterion,
    CriterionInput,
    Decision,
    Finding,
    HistoryEvent,
    NeedsHuman,
    Note,
    Phase,
    Project,
    Risk,
    Spec,
    Status,
    Task,
    VerificationRun,
    VerifierKind,
)
from taskgate.domain.run_report import CheckResult, CriterionResult, RunReport
from taskgate.domain.taskview import attempt_state, flags, mismatches
from taskgate.domain.text import CheckedText
from taskgate.domain.verifier_config import VerifierConfig
from taskgate.service.review import Resolution


class In(CheckedText):
    """A request body: unknown fields are an error, so a typo never passes silently; text that
    is not valid Unicode is refused anywhere in it (domain.text)."""

    model_config = ConfigDict(extra="forbid")


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- errors -----------------------------------------------------------------------------------


class FieldError(Out):
    loc: str = Field(description="Where, e.g. body.checks.unit.command")
    msg: str


class ErrorBody(Out):
    code: ErrorCode
    message: str
    hint: str = Field(description="What to do next")
    current_status: str | None = Field(
        default=None,
        description="The record's status now (a task's, or a spec's) when that is why it refused.",
    )
    missing: list[str] | None = Field(
        default=None, description="Only when switching verification on is refused: what the project lacks."
    )
    errors: list[FieldError] | None = Field(
        default=None, description="Only when the request was malformed: each failing field."
    )


# -- health -----------------------------------------------------------------------------------


class Health(Out):
    status: Literal["ok"]
    version: str


# -- projects ---------------------------------------------------------------------------------


class ProjectCreate(In):
    name: str = Field(description="lowercase letters, digits and '-', 1-40 chars")
    repo: str = ""
    description: str = ""


class ProjectPatch(In):
    max_attempts: int | None = None
    lease_minutes: int | None = None
    description: str | None = None
    repo: str | None = None


class ExecutionDefaultsIn(In):
    verification_commands: list[str] | None = None
    conventions: list[str] | None = None


class ProjectList(Out):
    items: list[Project]


class HistoryPage(Out):
    items: list[HistoryEvent]
    cursor: str | None


# -- tasks ------------------------------------------------------------------------------------


class ClaimOut(Out):
    """A live claim as the board shows it: who and until when (never the token's hash)."""

    actor: str
    credential_id: str
    attempt: int
    claimed_at: datetime
    expires_at: datetime
    lease_minutes: int
    phase: Phase
    last_heartbeat_at: datetime | None


class AttemptOut(Attempt):
    """An attempt as the board shows it: its record, what it is doing in words, and its flags."""

    state: str = Field(
        description="How it ended (e.g. 'verification failed'), or 'in progress', or where its "
        "submission waits ('submitted, waiting for verification', 'submitted, waiting for a human')"
    )
    self_report_mismatch: list[str] = Field(
        description="Criteria this attempt's executor reported as pass and a verifier failed"
    )


class FlagOut(Out):
    kind: Literal["self_report_mismatch", "verifier_errors"]
    text: str
    attempt: int | None = Field(description="The attempt the flag belongs to (the current one)")
    criteria: list[str] = Field(description="self_report_mismatch: the criteria")
    count: int | None = Field(description="verifier_errors: how many in a row")


class TaskOut(Out):
    id: str
    project: str
    number: int
    title: str
    description: str
    status: Status
    priority: int
    risk: Risk
    spec_id: str | None
    spec_criteria: list[str]
    criteria: list[Criterion]
    blocked_by: list[str]
    verification_commands: list[str] | None
    max_attempts: int | None
    attempts_used: int
    attempts: list[AttemptOut]
    findings: list[Finding]
    criteria_changes: list[CriteriaChange]
    claim: ClaimOut | None
    live_run: str | None
    verifier_errors_in_row: int
    history_head: str | None = Field(
        default=None, description="sha256 of the task's last history event: the head of its hash chain"
    )
    attestation_head: str | None = Field(
        default=None, description="sha256 of the payload of the task's last signed statement"
    )
    needs_human: NeedsHuman | None = Field(
        description="While the task is in needs_human: why (attempts used up, verifier errors, a "
        "spec error, an escalation, a reported failure) and the reason in words"
    )
    allowed: AllowedChange | None = Field(
        default=None,
        description="Protected paths a human allowed the submission (commit_sha, as submitted) to change",
    )
    flags: list[FlagOut] = Field(
        description="Flags of the current attempt only (earlier attempts keep theirs in attempts[])"
    )
    conflicts_in_row: int = 0
    verified_base: MergedBase | None = Field(
        default=None, description="The base the task's verdict holds for (null: none, or the commit alone)"
    )
    verified_on: str | None = Field(default=None, description="verified_base in words")
    landed: Landed | None = Field(
        default=None,
        description="With landing on, once done: the commit its work landed as on the base branch, "
        "its tree, the tip the push moved from and the run that verified that exact commit",
    )
    queue: QueuePlace | None = Field(
        default=None, description="While landing: its place in the project's landing queue and its state"
    )
    stale: bool = Field(
        default=False,
        description="Verified on a base tip that is no longer the base branch's: re-verification is due",
    )
    stale_note: str | None = Field(
        default=None, description="When stale: where the base branch is now, in words"
    )
    actions: list[HumanAction] | None = Field(
        default=None,
        description="What a human may do to the task now (accept, reopen, allow, ...), from the "
        "rules the server enforces; null where the response did not read the project's switch "
        "(a write's answer): GET the task for them",
    )
    created_by: str
    created_at: datetime
    updated_at: datetime
    status_changed_at: datetime
    version: int

    @classmethod
    def of(cls, task: Task, verification_on: bool | None = None, base_tip: BaseTip | None = None) -> TaskOut:
        """`verification_on`: the project's switch, when read (an attempt's state says who its
        submission waits for); `base_tip`: the project's known base tip, when read (stale)."""
        # dependents is the cascade's own bookkeeping (a superset), not something to show
        data = task.model_dump(exclude={"claim", "dependents"})
        claim = task.claim.model_dump(exclude={"token_hash"}) if task.claim is not None else None
        attempts = [
            {
                **a.model_dump(),
                "state": attempt_state(task, a, verification_on),
                "self_report_mismatch": mismatches(task, a.number),
            }
            for a in task.attempts
        ]
        flagged = [
            {
                "kind": f.kind,
                "text": f.text,
                "attempt": f.attempt,
                "criteria": list(f.criteria),
                "count": f.count,
            }
            for f in flags(task)
        ]
        base = task.verified_base
        merged: dict[str, object] = {
            "verified_on": held_for(base) if task.status is Status.VERIFIED and base is not None else None,
            "stale": task.status is Status.VERIFIED and stale_on(base, base_tip),
        }
        if merged["stale"] and base_tip is not None:
            merged["stale_note"] = stale_line(base_tip)
        if verification_on is not None:
            merged["actions"] = human_actions(task, verification_on=verification_on)
        return cls.model_validate({**data, "claim": claim, "attempts": attempts, "flags": flagged, **merged})


class QueuePlace(Out):
    position: int = Field(description="1 is the head of the queue: next to land")
    of: int = Field(description="How many tasks the queue holds")
    state: str = Field(description="waiting, testing (on top of the tasks ahead), or landing")


class TaskCreate(In):
    title: limits.Title
    description: limits.Text = ""
    spec_id: str | None = None
    spec_criteria: Annotated[list[str] | None, Field(max_length=limits.CRITERIA)] = None
    criteria: Annotated[list[CriterionInput] | None, Field(max_length=limits.CRITERIA)] = None
    blocked_by: Annotated[list[str] | None, Field(max_length=limits.BLOCKERS)] = None
    priority: int = 0
    risk: Risk | None = None
    verification_commands: limits.Lines | None = None
    max_attempts: int | None = None
    request_id: str | None = Field(
        default=None,
        description="Optional id the client chooses (e.g. a UUID): a retry with the same id answers "
        "with what the first request created instead of creating another.",
    )


class TaskWritten(Out):
    task: TaskOut
    warnings: list[str]


class Accepted(TaskOut):
    """The task accepted, and what its acceptance said."""

    warnings: list[str] = Field(
        default_factory=list,
        description="Said about the acceptance: the verdict accepted was stale (the base branch moved "
        "since it was reached, as a verifier, a push webhook or the server's own read of a local "
        "repository found)",
    )


class TaskPage(Out):
    items: list[TaskOut]
    cursor: str | None


class TaskDetail(Out):
    task: TaskOut
    history: list[HistoryEvent]
    history_cursor: str | None = Field(
        description="Query history_cursor with it for more history; null: no more"
    )
    runs: list[VerificationRun]
    signed_runs: list[str] = Field(
        default_factory=list,
        description="Ids of the runs whose signed statement verifies with this server's attestation key",
    )
    notes: list[Note]
    notes_cursor: str | None = Field(
        description="Query notes_cursor with it for the next notes; null: no more"
    )


class TaskPatch(In):
    """Only the fields given change. A task is edited only while nobody holds it (backlog,
    ready, blocked, needs_human); blocked_by may move it between ready and blocked."""

    title: limits.Title | None = None
    description: limits.Text | None = None
    priority: int | None = None
    blocked_by: list[str] | None = Field(
        default=None, description="Replaces the list; [] clears it.", max_length=limits.BLOCKERS
    )
    criteria: list[CriterionInput] | None = Field(
        default=None, description="Replaces the task's own criteria (renumbered).", max_length=limits.CRITERIA
    )
    spec_criteria: Annotated[list[str] | None, Field(max_length=limits.CRITERIA)] = None
    verification_commands: limits.Lines | None = None


class NoteIn(In):
    body: limits.NoteText


class BatchAccept(In):
    task_ids: list[str]
    together: bool = Field(
        default=False,
        description="Verify the tasks together first: the verifier merges their commits in this order "
        "onto the base branch's tip and runs the checks once; what passes together is accepted (by "
        "you), a task that breaks the batch goes back to ready. Needs verification on and merge not "
        "'none'; answered with the batch, nothing is accepted yet.",
    )


class Refusal(Out):
    task_id: str
    code: ErrorCode
    message: str
    hint: str
    current_status: str | None = None


class BatchResult(Out):
    accepted: list[TaskOut]
    refused: list[Refusal]
    batch: Batch | None = Field(
        default=None, description="With together: the batch queued to be verified together"
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="Said about accepted tasks: a verdict that was stale (the base branch moved since)",
    )


class ReopenIn(In):
    findings: limits.Lines = Field(description="What the next attempt must fix; at least one.")


class CancelIn(In):
    reason: str = ""


class ResolveIn(In):
    resolution: Resolution
    blocked_by: list[str] | None = None
    note: str = ""


# -- specs ------------------------------------------------------------------------------------


class SpecCreate(In):
    title: limits.Title
    body: limits.Text = ""
    risk: Risk = Risk.LOW
    criteria: Annotated[list[CriterionInput], Field(max_length=limits.CRITERIA)]
    request_id: str | None = Field(
        default=None,
        description="Optional id the client chooses (e.g. a UUID): a retry with the same id answers "
        "with what the first request created instead of creating another.",
    )


class SpecRevise(In):
    title: limits.Title | None = None
    body: limits.Text | None = None
    risk: Risk | None = None
    criteria: Annotated[list[CriterionInput] | None, Field(max_length=limits.CRITERIA)] = None


class SpecPage(Out):
    items: list[Spec]
    cursor: str | None


class SpecApproved(Out):
    spec: Spec
    moved: list[str] = Field(description="Backlog tasks the approval moved to ready (or blocked).")


class SpecMarkdown(Out):
    path: str
    markdown: str


# -- decisions and search ---------------------------------------------------------------------


class DecisionIn(In):
    title: limits.Title
    body: limits.Text = ""
    spec_id: str | None = None
    supersedes: str | None = Field(
        default=None, description="DEC-<n> this decision replaces; that one is marked superseded."
    )


class DecisionList(Out):
    items: list[Decision]


class SearchHit(Out):
    kind: Literal["decision", "spec", "task"]
    id: str
    title: str
    status: str | None = None
    score: float


class SearchResults(Out):
    items: list[SearchHit]


# -- who is calling ---------------------------------------------------------------------------


class Me(Out):
    actor: str = Field(description="human:<name>, as history records it")


# -- verification switch and config -----------------------------------------------------------


class VerificationState(Out):
    on: bool
    missing: list[str] = Field(description="What the project lacks before verification can be on.")
    warnings: list[str]


class VerificationSwitch(In):
    on: bool


class VerifierConfigIn(In, VerifierConfig):
    """The verifier config as a request body (the same fields, checked like every body)."""


class VerifierConfigOut(Out):
    config: VerifierConfig | None
    protect_default: list[str] = Field(
        default_factory=list, description="The protect globs that apply when the config names none"
    )
    protect_in_force: list[str] = Field(
        default_factory=list,
        description="The globs in force: the config's protect (or the default) and the files its "
        "checks run by path; [] when protection is off or there is no config",
    )

    @classmethod
    def of(cls, config: VerifierConfig | None) -> VerifierConfigOut:
        in_force = (
            protect_globs(config.protect, [c.command for c in config.checks.values()])
            if config is not None
            else []
        )
        return cls(config=config, protect_default=list(DEFAULT_PROTECT), protect_in_force=in_force)


class ProtectIn(In):
    """The verifier config's protect globs alone; the rest of the config stays as stored."""

    protect: list[str] | None = Field(
        description="Globs of the paths a submission may not change without a human; null: the "
        "default harness (protect_default); []: protection off",
        max_length=200,
    )


class VerifierConfigDraft(Out):
    config: VerifierConfig = Field(description="A draft from the project's verification commands; not saved.")
    notes: list[str] = Field(description="What a human still has to review or decide before saving it.")


# -- keys -------------------------------------------------------------------------------------


class CredentialOut(Out):
    id: str
    kind: CredentialKind
    name: str
    role: AgentRole | None
    verifier_kind: VerifierKind | None
    projects: list[str]
    delegations: list[str]
    created_by: str
    created_at: datetime
    revoked_at: datetime | None
    revoked_by: str | None
    live: bool

    @classmethod
    def of(cls, cred: Credential) -> CredentialOut:
        data = cred.model_dump(exclude={"key_hash", "version"})
        return cls.model_validate({**data, "live": cred.live})


class KeyCreate(In):
    kind: CredentialKind
    name: str
    role: AgentRole | None = None
    verifier_kind: VerifierKind | None = None
    projects: list[str] | None = Field(default=None, description="Omit for a key that covers every project.")
    delegations: list[str] | None = Field(
        default=None, description="human:<name> this agent key may act for."
    )


class KeyMinted(Out):
    key: str = Field(description="The secret. Shown once: only its hash is stored.")
    credential: CredentialOut


class KeyList(Out):
    items: list[CredentialOut]


class KeyRevoked(Out):
    credential: CredentialOut
    warnings: list[str]


# -- verifier endpoints -----------------------------------------------------------------------


class ProjectQueue(Out):
    project: str
    verification_on: bool
    waiting: int = Field(description="Tasks a verifier could start on now")
    running: int = Field(description="Tasks with a verification run in progress")
    for_human: int = Field(description="Submitted tasks a human accepts directly (verification is off)")
    repo: str = Field(default="", description="The project's repository")
    base_branch: str | None = Field(
        default=None, description="The base branch the config names, else the one last reported"
    )
    base_tip: Sha | None = Field(default=None, description="The base branch's tip as last reported")
    merge: str | None = Field(default=None, description="The verifier config's merge setting")
    stale: int = Field(default=0, description="Verified tasks to verify again on the moved base")


class WaitingBatch(Out):
    project: str
    id: str


class WaitingWork(Out):
    items: list[str] = Field(description="Ids of tasks waiting for verification, oldest submission first.")
    batches: list[WaitingBatch] = Field(
        default_factory=list,
        description="Batches a human asked to verify together, with a run to start (POST "
        "/api/verifier/projects/{project}/batches/{id}/runs), oldest first.",
    )
    landing: list[str] = Field(
        default_factory=list,
        description="Projects whose landing queue has a step to start (POST "
        "/api/verifier/projects/{project}/landing/runs).",
    )
    projects: list[ProjectQueue] = Field(
        description="What waits in each project asked about (every project the key covers with "
        "verification on, or with submitted work): why there may be nothing to start."
    )
    wait_s: float = Field(
        default=0.0,
        description="How long the server would wait for work before answering (the `wait` asked "
        "for; 0 when none was). A verifier that sees it may ask again at once.",
    )


class BaseMovedIn(In):
    """A base branch's new tip: `{ref, tip}`, from a verifier that read it or a CI step, or a git
    host's push payload (`ref`, `after`; its other fields are ignored)."""

    model_config = ConfigDict(extra="ignore")
    ref: str = Field(min_length=1, max_length=300, description="refs/heads/<branch>, or <branch>")
    tip: str | None = Field(
        default=None, min_length=1, max_length=200, description="The branch's new tip (full commit id)"
    )
    after: str | None = Field(
        default=None, min_length=1, max_length=200, description="The same, as a push payload names it"
    )

    @model_validator(mode="after")
    def _one_tip(self) -> BaseMovedIn:
        if self.tip is None and self.after is None:
            raise ValueError("the new tip is missing: send `tip` (a push payload's `after` also does)")
        if self.tip is not None and self.after is not None and self.tip.strip() != self.after.strip():
            raise ValueError("`tip` and `after` name different commits: send one of them")
        return self

    @property
    def new_tip(self) -> str:
        return self.tip if self.tip is not None else self.after or ""


class BaseMoved(Out):
    project: str
    branch: str
    tip: Sha
    changed: bool = Field(description="The tip was new to the server")
    ignored: str | None = Field(description="Why the push changed nothing (another branch), when it did not")
    stale: list[str] = Field(
        description="Verified tasks now stale, oldest first: the verifier re-verifies them"
    )


class StartRun(In):
    task_id: str


class RunSpec(Out):
    id: str
    title: str
    body: str


class RunWork(Out):
    """Everything a verifier needs to run one task's checks
    (docs/architecture.md, "Verification and the outcome rule")."""

    run_id: str
    task_id: str
    repo: str
    commit_sha: str
    # The base branch's tip when the attempt was claimed (None: the server could not read the
    # repository): the baseline of a submission already on that branch.
    claimed_base: ClaimTip | None = None
    config: VerifierConfig | None
    criteria: list[Criterion]
    command_criteria_allowed: bool
    guards: list[str] = Field(
        default_factory=list,
        description="The guard criteria whose guard counts: their new named tests need no run on the baseline's code",
    )
    spec: RunSpec | None
    reverify: bool = Field(
        default=False, description="A verified task whose base branch moved: verified again on the new tip"
    )


class ReviewIn(In):
    controls_allowed = True  # a reviewer's output, stored made plain (domain.text)

    results: dict[str, CriterionResult]


class FinishIn(In, RunReport):
    """A run's report (domain/run_report.py) as a request body, checked like every body."""

    controls_allowed = True  # what the checks printed, stored made plain (domain.text)


class RunFinished(Out):
    run: VerificationRun
    task_status: Status
    needs_human: NeedsHuman | None = Field(
        default=None, description="Why the task now waits for a human, when the run sent it there"
    )


class AttestationKey(Out):
    keyid: str = Field(description="sha256 (hex) of the key's DER SubjectPublicKeyInfo; the DSSE keyid")
    scheme: str = Field(
        description="ed25519 (local); rsassa-pss-sha256 or ecdsa-sha2-nistp256 (AWS KMS, per AttestationKeySpec)"
    )
    pem: str
    jwk: dict[str, str]


class ChainMismatch(Out):
    task: str
    event: str | None = Field(
        description="The first event (H#<seq>) that does not match; null: the task's head, or the "
        "task itself (missing, or a number never handed out)"
    )
    reason: str


class UnchainedTask(Out):
    task: str
    events: int = Field(description="Its first events, written before this server kept a hash chain")


class AuditOut(Out):
    project: str
    ok: bool = Field(description="No mismatch (unchained events are not one, and are not verified either)")
    tasks: int
    events: int
    statements: int = Field(description="Signed statements checked against the history they name")
    mismatches: list[ChainMismatch] = Field(description="The first mismatch of each task that has one")
    unchained: int = Field(
        description="Events written before this server kept a hash chain: neither a mismatch nor verified"
    )
    unchained_tasks: list[UnchainedTask] = Field(
        description="Each task whose chain matches from its first chained event and has unchained events"
    )
    acceptances: dict[str, int] = Field(
        default_factory=dict,
        description="Acceptances by how they were made: board, terminal, script, delegated "
        "(unrecorded: made before the server recorded it)",
    )


class BatchFinishIn(In):
    """One run of a batch: its tasks' commits merged in order onto `tip` (tree `tree`), the
    checks run once, and each task's criteria mapped to the checks' reports."""

    controls_allowed = True  # what the checks printed, stored made plain (domain.text)

    branch: str | None = Field(default=None, min_length=1, max_length=200)
    tip: Sha | None = None
    tree: Sha | None = None
    checks: dict[str, CheckResult] = Field(default_factory=dict)
    results: dict[str, dict[str, CriterionResult]] = Field(
        default_factory=dict, description="Task id -> criterion id -> evidence, for the run's tasks only"
    )
    conflict_task: str | None = Field(default=None, description="The task whose commit did not merge")
    conflict_paths: list[str] = Field(default_factory=list, max_length=10_000)
    error: str | None = Field(default=None, max_length=20_000)


class LandingPrefixIn(In):
    """One prefix of a landing step: `task_id` merged onto the ones before it in the chain."""

    controls_allowed = True  # what the checks printed, stored made plain (domain.text)

    task_id: str = Field(min_length=1, max_length=200)
    head: Sha | None = Field(default=None, description="The prefix's merge commit")
    tree: Sha | None = None
    already: bool = Field(default=False, description="Its commit was on the branch already")
    reused: bool = Field(
        default=False, description="Its tree is the one its own verdict was reached on: no run"
    )
    conflict_paths: list[str] = Field(default_factory=list, max_length=10_000)
    checks: dict[str, CheckResult] = Field(default_factory=dict)
    results: dict[str, CriterionResult] = Field(default_factory=dict)


class LandingEvidenceIn(In):
    """What a landing step built on `tip` of `branch` and how each prefix did, in chain order
    (up to the first that failed or did not merge); or the error that stopped it."""

    controls_allowed = True

    branch: str | None = Field(default=None, min_length=1, max_length=200)
    tip: Sha | None = None
    prefixes: list[LandingPrefixIn] = Field(default_factory=list, max_length=64)
    error: str | None = Field(default=None, max_length=20_000)


class LandingPushIn(In):
    """What the push of the commit the server chose did: `pushed`, or refused and why."""

    head: Sha
    pushed: bool
    why: str | None = Field(default=None, max_length=4000)
