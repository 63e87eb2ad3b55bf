"""The records taskgate keeps. Pydantic models: validation at the edge, plain data inside."""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, field_validator

from taskgate.domain.commit_ids import Sha
from taskgate.domain.errors import invalid
from taskgate.domain.landing import Landed
from taskgate.domain.merging import BaseTip, MergeConflict, MergedBase
from taskgate.domain.verifier_config import VerifierConfig

PROJECT_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
ACTOR_RE = re.compile(r"^(human|agent):[a-z0-9][a-z0-9._-]{0,63}$")

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

DEFAULT_MAX_ATTEMPTS = 3
MAX_ATTEMPTS_LIMIT = 20  # a project's or a task's max_attempts is 1..this
DEFAULT_LEASE_MINUTES = 30
MAX_LEASE_MINUTES = 120


def check_max_attempts(max_attempts: int | None) -> None:
    """E_VALIDATION for a max_attempts out of range; None (not given) passes."""
    if max_attempts is not None and not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
        raise invalid(f"max_attempts must be between 1 and {MAX_ATTEMPTS_LIMIT}")


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Status(StrEnum):
    BACKLOG = "backlog"
    READY = "ready"
    CLAIMED = "claimed"
    NEEDS_VERIFICATION = "needs_verification"
    VERIFIED = "verified"
    # Accepted with landing on: in the project's landing queue until the verifier lands it on the
    # base branch (then done). See domain/landing.py.
    LANDING = "landing"
    DONE = "done"
    BLOCKED = "blocked"
    NEEDS_HUMAN = "needs_human"
    CANCELLED = "cancelled"


OPEN_STATUSES = frozenset(Status) - {Status.DONE, Status.CANCELLED}


class Risk(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


RISK_ORDER = {Risk.LOW: 0, Risk.MEDIUM: 1, Risk.HIGH: 2}


class CriterionKind(StrEnum):
    TEST = "test"
    COMMAND = "command"
    REVIEW = "review"


class Phase(StrEnum):
    IMPLEMENTING = "implementing"
    TESTING = "testing"
    FIXING = "fixing"


class FailureKind(StrEnum):
    DEPENDENCY = "dependency"
    SPEC_GAP = "spec_gap"
    DESIGN_CONFLICT = "design_conflict"
    OTHER = "other"


class SelfReport(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NOT_RUN = "not_run"


def _unset(value: bool) -> bool:
    return not value


# A test criterion that guards behaviour the baseline already has: its named test passing
# without the change is what it expects. Written only when set, so the records, digests and
# briefs of every other criterion read as they did before the field existed.
Guard = Annotated[StrictBool, Field(default=False, exclude_if=_unset)]


class Criterion(Record):
    id: str
    text: NonEmpty
    kind: CriterionKind = CriterionKind.REVIEW
    verify_ref: str | None = None
    guard: Guard = False

    @field_validator("verify_ref")
    @classmethod
    def _strip(cls, v: str | None) -> str | None:
        return v.strip() or None if v is not None else None


class CriterionInput(Record):
    """A criterion as a caller writes it; the id is assigned by the server."""

    text: NonEmpty
    kind: CriterionKind = CriterionKind.REVIEW
    verify_ref: str | None = None
    guard: Guard = False


class ExecutionDefaults(Record):
    verification_commands: list[str] = Field(default_factory=list)
    conventions: list[str] = Field(default_factory=list)


class Project(Record):
    name: str
    repo: str = ""
    description: str = ""
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    lease_minutes: int = DEFAULT_LEASE_MINUTES
    verification_on: bool = False
    execution_defaults: ExecutionDefaults = Field(default_factory=ExecutionDefaults)
    verifier_config: VerifierConfig | None = None
    base_tip: BaseTip | None = None  # the base branch's tip as last reported: older verdicts are stale
    created_by: str
    created_at: datetime
    version: int = 0

    def lands(self) -> bool:
        """Whether taskgate lands accepted work (a verifier to land it, and the config's `land`)."""
        return self.verification_on and self.verifier_config is not None and self.verifier_config.land


class SpecStatus(StrEnum):
    DRAFT = "draft"
    APPROVED = "approved"


class Spec(Record):
    id: str  # SPEC-<n>
    project: str
    number: int
    title: NonEmpty
    body: str = ""
    risk: Risk = Risk.LOW
    criteria: list[Criterion]
    status: SpecStatus = SpecStatus.DRAFT
    revision: int = 1
    created_by: str
    created_at: datetime
    updated_at: datetime
    approved_by: str | None = None
    approved_at: datetime | None = None
    approved_as_human: bool = False  # a human (or a delegated human) approved, not only an architect agent
    version: int = 0


class Claim(Record):
    token_hash: str
    actor: str
    credential_id: str
    attempt: int
    claimed_at: datetime
    expires_at: datetime
    lease_minutes: int
    phase: Phase = Phase.IMPLEMENTING
    last_heartbeat_at: datetime | None = None


class Submission(Record):
    commit_sha: str
    evidence: str
    self_report: dict[str, SelfReport] = Field(default_factory=dict)
    actor: str
    credential_id: str
    submitted_at: datetime
    # The full commit a verifier checked out for it (commit_sha may be an abbreviation): set by
    # the server from a run's finish, never from the submitter; what statements sign as gitCommit.
    resolved_commit: Sha | None = None


class AttemptEnding(StrEnum):
    RELEASED = "released"
    FAILED = "failed"
    EXPIRED = "expired"
    ESCALATED = "escalated"
    # A submitted attempt stays open until its submission's fate is decided:
    ACCEPTED = "accepted"
    VERIFICATION_FAILED = "verification_failed"
    REOPENED = "reopened"
    RESOLVED = "resolved"  # a human requeued, blocked or sent back a task stuck in needs_human
    CANCELLED = "cancelled"
    # The submission did not merge onto the base: the executor's to fix, no attempt used.
    MERGE_CONFLICT = "merge_conflict"
    # Written by earlier versions, which ended an attempt at submit; still read, never written.
    SUBMITTED = "submitted"


class ClaimTip(Record):
    """The base branch's tip when a task was claimed, as the server read it from a local
    repository: the baseline of a submission committed straight onto that branch."""

    branch: str = Field(max_length=200)
    commit: Sha


class Attempt(Record):
    """One claim of a task, from the claim until its outcome is known: it ends when the claim
    ends without a submission (released, failed, expired, escalated), or, once submitted, when
    the submission is accepted, fails verification, is reopened or the task leaves the gate.
    `used` says whether it counted toward max_attempts. Once `ended_at` is set it is frozen."""

    number: int
    actor: str
    credential_id: str
    started_at: datetime
    ended_at: datetime | None = None
    ending: AttemptEnding | None = None
    used: bool = False  # counted toward max_attempts
    failure_kind: FailureKind | None = None
    findings: list[str] = Field(default_factory=list)
    learned: str | None = None
    submission: Submission | None = None
    claimed_tip: ClaimTip | None = None  # None: the server could not read the repository


class FindingSource(StrEnum):
    VERIFIER = "verifier"
    HUMAN = "human"


class FailedTest(Record):
    """A failing test as its report wrote it: its full name and its own failure message."""

    __test__ = False  # not a pytest test class
    name: str = Field(max_length=2000)
    message: str = Field(default="", max_length=20_000)


class FailedCriterion(Record):
    """A criterion a verifier run did not pass, with what the verifier saw."""

    id: str
    result: str  # the evidence: fail, skipped, missing or ambiguous
    detail: str = ""
    tests: list[FailedTest] = Field(default_factory=list)  # the failing tests, each with its message
    spec_error: bool = False  # its ref matched more than one test or group: the spec's to fix


class FailedCheck(Record):
    """A check that exited non-zero, with the end of its output (where runners print their
    summary and last error), cut on a line boundary."""

    name: str
    exit_code: int | None
    output_end: str = ""


class Finding(Record):
    """A verdict that came after an attempt ended (a failed verification, a reopen).

    A verifier's finding holds one line per failing criterion and check in `details`, failing
    criteria first; `criteria` and `checks` hold the same with the tests' messages and each
    check's output, for the next brief and the board."""

    attempt: int | None
    source: FindingSource
    by: str
    at: datetime
    summary: str
    details: list[str] = Field(default_factory=list)
    self_report_mismatch: list[str] = Field(default_factory=list)
    criteria: list[FailedCriterion] = Field(default_factory=list)
    checks: list[FailedCheck] = Field(default_factory=list)
    # Failing hidden tests, as much as the verifier config reveals of them (names, or messages).
    hidden_tests: list[FailedTest] = Field(default_factory=list)


class WhyHuman(StrEnum):
    """Why a task waits in needs_human."""

    ATTEMPTS_USED_UP = "attempts_used_up"
    VERIFIER_ERRORS = "verifier_errors"  # the third verifier error in a row
    SPEC_ERROR = "spec_error"  # a ref of the spec matched more than one test or group
    ESCALATED = "escalated"
    REPORTED_FAILURE = "reported_failure"  # report_failure kind spec_gap or design_conflict
    READS_GRADER = "reads_grader"  # the screen found code that reads or ends its grader
    HELD = "held"  # the gate's rules hold the submission for a person (protected paths changed)
    MERGE_CONFLICTS = "merge_conflicts"  # the third merge conflict in a row
    # A changed expectation: existing tests (named ones or not) pass only with the submission's
    # own edits to them, and fail with the baseline's.
    TESTS_EDITED = "tests_edited"
    # A named test the submission wrote passes on the baseline's code too: no evidence of the change.
    PASSES_WITHOUT_CHANGE = "passes_without_change"
    # A tripwire of the grading run (a twin of a named test, a canary) was not reported failed.
    TRIPWIRE = "tripwire"


# The reasons a gate rule holds a submission for a person (the verdict needs_human): a human
# allows it and verifies again, or reopens the task with findings.
RULE_HOLDS = frozenset(
    {
        WhyHuman.HELD,
        WhyHuman.TESTS_EDITED,
        WhyHuman.PASSES_WITHOUT_CHANGE,
        WhyHuman.READS_GRADER,
        WhyHuman.TRIPWIRE,
    }
)


class NeedsHuman(Record):
    """Why a task is in needs_human, set by the move that put it there (cleared when it leaves)."""

    why: WhyHuman
    reason: str  # for a person: "spec error: AC-1.3 `test_basic` matches 71 tests: ..."
    at: datetime
    by: str  # who moved it there: the holder, the server, the sweeper
    attempt: int | None = None
    failure_kind: FailureKind | None = None
    # The resolution that answers it, where one does: revise_spec for a spec error (of a task
    # with a spec), reverify once the verifier is fixed. None: the human decides.
    suggested: Literal["revise_spec", "reverify"] | None = None
    # HELD: the protected paths the submission changes and their diff, which a human allows
    # (resolve "allow") or answers with findings (reopen).
    paths: list[str] = Field(default_factory=list)
    diff: str = ""
    # PASSES_WITHOUT_CHANGE: the criteria whose new named test passes on the baseline's code
    # too, which a human allows (resolve "allow") or answers with findings (reopen).
    criteria: list[str] = Field(default_factory=list)


class AllowedChange(Record):
    """A human's allowance for one submission (its commit as submitted) to change protected
    paths, and for criteria of it to pass without the change."""

    commit_sha: str
    paths: list[str]
    by: str
    at: datetime
    criteria: list[str] = Field(default_factory=list)


class CriteriaChange(Record):
    """A change of a task's criteria made after work on it began: the next attempt's brief
    says what changed since the attempts it reads about. The task's history keeps the whole
    before and after; this keeps short labels (domain/specs.criteria_change)."""

    after_attempt: int  # the task's last attempt when the change was made
    by: str
    at: datetime
    removed: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)


class Task(Record):
    id: str  # <project>-<n>
    project: str
    number: int
    title: NonEmpty
    description: str = ""
    status: Status
    priority: int = 0  # higher is claimed first
    risk: Risk = Risk.LOW
    spec_id: str | None = None
    spec_criteria: list[str] = Field(default_factory=list)  # ids of the spec's criteria this task holds
    criteria: list[Criterion] = Field(default_factory=list)  # criteria of its own
    blocked_by: list[str] = Field(default_factory=list)
    # Tasks made to wait for this one (a superset: one may have stopped waiting since), listed in
    # the commit that made each wait: its accept looks at these, not at every blocked task.
    dependents: list[str] = Field(default_factory=list)
    verification_commands: list[str] | None = None  # overrides project defaults in the brief
    max_attempts: int | None = None
    attempts_used: int = 0
    attempts: list[Attempt] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    criteria_changes: list[CriteriaChange] = Field(default_factory=list)  # the newest few, oldest first
    claim: Claim | None = None
    live_run: str | None = None
    verifier_errors_in_row: int = 0
    conflicts_in_row: int = 0  # submissions in a row that did not merge onto the base
    # The base the task's verdict holds for (set by a passing run; None: the commit alone)
    verified_base: MergedBase | None = None
    # Where the task's work landed on the base branch (landing on: set as it moves to done)
    landed: Landed | None = None
    needs_human: NeedsHuman | None = None  # why, while the task is in needs_human
    # Protected paths a human allowed a submission to change: its runs do not hold it for them.
    allowed: AllowedChange | None = None
    # sha256 of the task's last history event (domain/chain.py), written in the same commit
    history_head: str | None = None
    # sha256 of the payload of the task's last signed statement: the next one names it
    attestation_head: str | None = None
    created_by: str
    created_at: datetime
    updated_at: datetime
    status_changed_at: datetime
    version: int = 0  # the store's version of this item; not trusted from input

    def effective_max_attempts(self, project: Project) -> int:
        return self.max_attempts if self.max_attempts is not None else project.max_attempts

    def current_attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    def last_submission(self) -> Submission | None:
        for attempt in reversed(self.attempts):
            if attempt.submission is not None:
                return attempt.submission
        return None


class HistoryEvent(Record):
    task_id: str | None = None
    seq: int = 0  # for a task event: the task version this event was committed with
    project: str
    at: datetime
    actor: str
    credential_id: str | None = None
    on_behalf_of: str | None = None
    action: str
    from_status: Status | None = None
    to_status: Status | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
    # A task event: sha256 of the task's event before it (None for its first; domain/chain.py)
    prev: str | None = None


class Decision(Record):
    id: str  # DEC-<n>
    project: str
    number: int
    title: NonEmpty
    body: str = ""
    spec_id: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    created_by: str
    created_at: datetime
    version: int = 0


class Note(Record):
    id: str
    task_id: str
    project: str
    author: str
    body: NonEmpty
    at: datetime


class CredentialKind(StrEnum):
    AGENT = "agent"
    VERIFIER = "verifier"


class AgentRole(StrEnum):
    EXECUTOR = "executor"
    ARCHITECT = "architect"


class VerifierKind(StrEnum):
    LOCAL = "local"
    REVIEWER = "reviewer"


class Credential(Record):
    """A minted key. Only the hash of the secret is kept."""

    id: str
    kind: CredentialKind
    name: str  # agent name, or a label for a verifier
    role: AgentRole | None = None
    verifier_kind: VerifierKind | None = None
    projects: list[str] = Field(default_factory=list)  # empty: every project
    delegations: list[str] = Field(default_factory=list)  # human:<name> this key may act for
    key_hash: str
    created_by: str
    created_at: datetime
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    version: int = 0

    @property
    def live(self) -> bool:
        return self.revoked_at is None

    def covers(self, project: str) -> bool:
        return not self.projects or project in self.projects


RunStatus = Literal[
    "running", "passed", "failed", "error", "spec_error", "needs_human", "superseded", "conflict"
]


class VerificationRun(Record):
    id: str
    task_id: str
    project: str
    attempt: int
    commit_sha: str  # as submitted: may be an abbreviation
    credential_id: str
    started_at: datetime
    finished_at: datetime | None = None
    # The full commit the verifier checked out (sent with its finish, checked to extend commit_sha)
    resolved_commit: Sha | None = None
    status: RunStatus = "running"
    summary: str = ""
    # What the submission changed against its baseline (domain/baseline.py), as the server
    # read it: branch, commit (None: no baseline, and why), changed paths, and which of them are
    # protected and which test files. None: the verifier did not say.
    baseline: dict[str, Any] | None = None
    checks: dict[str, Any] = Field(default_factory=dict)
    evidence: dict[str, Any] = Field(default_factory=dict)
    # The signed test-result statement of the decision (a DSSE envelope), and the task version
    # it was committed with (the order of a task's statements)
    attestation: dict[str, Any] | None = None
    attestation_seq: int | None = None
    # The hidden tests this run placed in its checkout: their commit, how many ran, how many failed.
    hidden_tests: dict[str, Any] | None = None
    # The grading run's tree against the submission's (run_report.GradingTree), and its tripwires
    # with what was reported of each and what the verifier could not do (run_report.Tripwires).
    grading: dict[str, Any] | None = None
    tripwires: dict[str, Any] | None = None
    # What the screen found in the lines the submission adds (domain/screen.py), for the human.
    screened: list[dict[str, Any]] = Field(default_factory=list)
    # What the submission adds that is loaded but not readable as source (domain/loading.py), and
    # the change-sensitivity run's stubbed functions or why it did not apply.
    loading: list[dict[str, Any]] = Field(default_factory=list)
    sensitivity: dict[str, Any] | None = None
    # What the checks ran on (the submission merged onto a base tip), and a conflict instead
    base: MergedBase | None = None
    conflict: MergeConflict | None = None
    # A run on a verified task whose base moved: it confirms the verdict on the new tip or undoes it
    reverify: bool = False
    # A run of a batch verified together (domain/batches.py): its id; the run is this task's
    # share of one step, its evidence this task's criteria on the batch's merge.
    batch: str | None = None
    version: int = 0


class Attestation(Record):
    """A signed statement that is not a run's (an acceptance's summary), kept under its task."""

    task_id: str
    seq: int  # the task version it was committed with
    at: datetime
    envelope: dict[str, Any]
