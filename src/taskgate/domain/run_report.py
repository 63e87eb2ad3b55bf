"""The verifier's report of one run to the server: one model, sent by the verifier
(`taskgate verify`), parsed by the REST finish route, and read by the service and the outcome
rule. What the checks did, the evidence per criterion, and what the verifier found before and
beside them (the baseline, the merge, the hidden tests, the screen). The server decides from it
(domain/outcome.py); nothing in it is a verdict.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from taskgate.domain.baseline import BaselineEvidence
from taskgate.domain.merging import MergeConflict, MergedBase
from taskgate.domain.models import FailedTest
from taskgate.domain.runners import RUNNER_CHARS


class Evidence(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"
    MISSING = "missing"
    AMBIGUOUS = "ambiguous"


class CheckResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Bounded: it is signed, and RFC 8785 writes no integer past +-(2**53 - 1). A process's exit
    # status fits 32 bits either way (Linux: 0-255 or minus a signal; Windows: unsigned 32 bits).
    exit_code: int | None = Field(default=None, ge=-(2**31), le=2**32 - 1)
    timed_out: bool = False
    output_tail: str = Field(default="", max_length=20_000)
    duration_ms: int | None = Field(default=None, ge=0)
    # The tool its shell could not run (exit 126/127), as the verifier established it.
    missing_tool: str | None = Field(default=None, min_length=1, max_length=200)
    # sha256 (lowercase hex) of the report file's bytes as the verifier read and parsed them:
    # signed with the run, so a report kept elsewhere can be matched to the decision.
    report_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    # The test runner's version line the check printed (domain/runners.py), e.g.
    # "pytest 8.3.2 (Python 3.12.3, pluggy 1.5.0)": what the check's output said, signed as such.
    runner: str | None = Field(default=None, min_length=1, max_length=RUNNER_CHARS, pattern=r"^[ -~]+$")
    # Why its report is not the check's own: the commit held a file at the report path
    # ("committed": the verifier deleted it before the check), or the file there was last
    # written before the check started ("stale": not read).
    report_problem: Literal["committed", "stale"] | None = None
    # Failed or errored testcases in its report, and the first few of their names: a check
    # that exits 0 over them failed all the same.
    report_failed: int = Field(default=0, ge=0)
    report_failed_names: list[str] = Field(default_factory=list, max_length=10)
    # The tripwires among its report's failed testcases (domain/tripwires.py): they fail by
    # design, so a check that exited 1 over them alone (report_failed counts the others) passed.
    tripwires_failed: int = Field(default=0, ge=0)


def check_failed(c: CheckResult) -> bool:
    """Whether a check failed: it exited non-zero, unless its exit 1 is the runner's "tests
    failed" over the tripwires alone (which must fail), with no other testcase failing."""
    if c.exit_code == 0:
        return False
    return not (c.exit_code == 1 and c.tripwires_failed > 0 and c.report_failed == 0)


class EvidenceSource(BaseModel):
    """Where a criterion's evidence came from: the check and report a test ref was read from,
    or the command a command criterion ran."""

    model_config = ConfigDict(extra="forbid")
    check: str | None = Field(default=None, max_length=64)
    report: str | None = Field(default=None, max_length=512)
    ref: str = Field(max_length=4000)


class Restored(BaseModel):
    """A test criterion judged by the baseline's version of its test files: the submission
    changed test files that exist at the baseline, so the check ran a second time with them
    restored and the criterion's evidence is that second run's. This is the first run's."""

    model_config = ConfigDict(extra="forbid")
    files: list[str] = Field(max_length=200)  # the test files restored from the baseline
    submitted: Evidence  # the criterion's evidence with the submission's own test files
    submitted_detail: str = Field(default="", max_length=20_000)
    diff: str = Field(default="", max_length=20_200)  # the restored files' diff, capped


class WithoutChange(BaseModel):
    """A test criterion whose named test the submission wrote (its baseline has none), run on
    the baseline's code with the submission's test files: the check run a second time with
    every other changed path as it is at the baseline."""

    model_config = ConfigDict(extra="forbid")
    result: Evidence  # the criterion's evidence there
    detail: str = Field(default="", max_length=20_000)
    files: list[str] = Field(default_factory=list, max_length=2000)  # the submission's test files kept


class StubbedRun(BaseModel):
    """A test criterion's named test run again with the body of every function the change added
    or changed replaced by a raise (domain/stubs.py): a test that still passes there does not
    exercise the change."""

    model_config = ConfigDict(extra="forbid")
    result: Evidence  # the criterion's evidence in the stubbed run
    detail: str = Field(default="", max_length=20_000)


class CriterionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    result: Evidence
    detail: str = Field(default="", max_length=20_000)
    rationale: str | None = Field(default=None, max_length=20_000)
    source: EvidenceSource | None = None
    # A failing test criterion's failing tests (the first few of a group), each with its own
    # message from the report.
    failures: list[FailedTest] = Field(default_factory=list, max_length=50)
    # Set when the evidence comes from a second run on the baseline's test files.
    restored: Restored | None = None
    # Set when the named test is the submission's own: how it did on the baseline's code.
    without_change: WithoutChange | None = None
    # The server's reading: it passed here and on the baseline's code too (no evidence of the change).
    passes_without_change: bool = False
    # Set when the named tests ran with the changed functions stubbed out: how it did there.
    stubbed: StubbedRun | None = None
    # The server's reading: it passed with every changed function stubbed out too.
    passes_stubbed: bool = False


class ScreenHit(BaseModel):
    """One added line the screen found (domain/screen.py), as the verifier sends it."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, max_length=1000)
    line: int = Field(ge=1, le=10_000_000)
    rule: str = Field(min_length=1, max_length=40)
    text: str = Field(max_length=400)


class HiddenRun(BaseModel):
    """What a run's hidden tests did, in a run of their own: the commit placed, how many of
    their testcases the reports held, the failing ones as the config reveals them (names, or
    messages), and by name those reported skipped and those their files define that no report
    holds. Every hidden test must be reported passed."""

    model_config = ConfigDict(extra="forbid")
    commit: str = Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")
    ran: int = Field(ge=0, le=10_000_000)
    failed: list[FailedTest] = Field(default_factory=list, max_length=50)
    failed_count: int = Field(default=0, ge=0, le=10_000_000)
    skipped: list[str] = Field(default_factory=list, max_length=50)
    missing: list[str] = Field(default_factory=list, max_length=50)


class ChangedTest(BaseModel):
    """An existing test the submission changed that fails with the baseline's version of its
    file (the grading run) and passes with the submission's (its own tree)."""

    model_config = ConfigDict(extra="forbid")
    test: str = Field(max_length=2000)
    files: list[str] = Field(max_length=200)
    grading: Evidence = Evidence.FAIL
    submitted: Evidence = Evidence.PASS
    message: str = Field(default="", max_length=20_000)  # its failure in the grading run


class GradingTree(BaseModel):
    """How the grading run's tree differs from the submission's: test-side paths put back as
    the baseline has them, those the baseline lacks taken out, and new test files kept because
    they define a named test. `submitted`: the checks on the submission's whole tree, run where
    it adds or changes test-side files the grading run leaves out; their failures are findings
    for the executor, never evidence. `changed`: changed expectations; `diff`: the restored
    files' diff against the baseline."""

    model_config = ConfigDict(extra="forbid")
    restored: list[str] = Field(default_factory=list, max_length=2000)
    removed: list[str] = Field(default_factory=list, max_length=2000)
    named: list[str] = Field(default_factory=list, max_length=2000)
    submitted: dict[str, CheckResult] | None = None
    changed: list[ChangedTest] = Field(default_factory=list, max_length=50)
    diff: str = Field(default="", max_length=20_200)


class TripwireResult(BaseModel):
    """One tripwire of the grading run and what the report of its check said of it: it must be
    `failed`; `passed`, `skipped` or `missing` means the grader was bent."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["twin", "canary"]
    name: str = Field(max_length=4000)  # as its runner reports it
    path: str = Field(max_length=1000)
    of: str | None = Field(default=None, max_length=4000)  # the named test a twin perturbs
    criterion: str | None = Field(default=None, max_length=64)
    check: str | None = Field(default=None, max_length=64)
    perturbed: int = Field(default=0, ge=0)
    reported: Literal["failed", "passed", "skipped", "missing"]


class Tripwires(BaseModel):
    """The grading run's tripwires (twins of the named tests, canaries) and what each check
    reported of them; `notes`: what the verifier could not do (a named test with no assertion
    to perturb, a check that names its test files one by one), said on the run."""

    model_config = ConfigDict(extra="forbid")
    placed: list[TripwireResult] = Field(default_factory=list, max_length=200)
    notes: list[str] = Field(default_factory=list, max_length=100)

    def bent(self) -> list[TripwireResult]:
        return [t for t in self.placed if t.reported != "failed"]


MAX_SCREENED = 200
MAX_LOADING = 200


class Sensitivity(BaseModel):
    """The change-sensitivity run: the functions the change touched, stubbed out (`path: name`),
    and what the run says of it when it did not apply (no function touched, no named test to
    run again)."""

    model_config = ConfigDict(extra="forbid")
    functions: list[str] = Field(default_factory=list, max_length=500)
    note: str = Field(default="", max_length=2000)


class LoadingHit(BaseModel):
    """One path the submission adds or changes that is loaded or run but cannot be read as
    source, changes what gets loaded, or is a test file no runner collects (domain/loading.py)."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, max_length=1000)
    kind: str = Field(min_length=1, max_length=40)
    why: str = Field(max_length=400)


class RunReport(BaseModel):
    """One run's report, as the verifier sends it. A run that found its commit missing, or a
    merge conflict, ran nothing and says only that."""

    model_config = ConfigDict(extra="forbid")
    checks: dict[str, CheckResult] = Field(default_factory=dict)
    results: dict[str, CriterionResult] = Field(default_factory=dict)
    error: str | None = None
    commit_missing: bool = Field(
        default=False,
        description="The repository was fetched and the submitted commit is not in it: nothing "
        "ran. The run fails (the executor must push it); a fetch that failed is an error instead.",
    )
    commit: str | None = Field(
        default=None,
        max_length=200,  # bounded; the service says what a full commit is
        description="The full commit the verifier checked out (`git rev-parse HEAD`: 40 or 64 "
        "lowercase hex digits), which must start with the submitted one (an agent may submit an "
        "abbreviation). Signed statements name it as the subject's gitCommit.",
    )
    hidden_tests: HiddenRun | None = Field(
        default=None,
        description="What the verifier config's hidden tests did: the commit placed, how many ran, "
        "the failing ones (names, or with messages under reveal: messages). Required when the "
        "config names hidden tests.",
    )
    screened: list[ScreenHit] = Field(
        default_factory=list,
        max_length=MAX_SCREENED,
        description="Lines the submission adds that read or end their grader (the screen's hits): "
        "the run goes to a human.",
    )
    loading: list[LoadingHit] = Field(
        default_factory=list,
        max_length=MAX_LOADING,
        description="Paths the submission adds or changes that the interpreter or runner loads but "
        "the verifier cannot read as source, that change what gets loaded, or test files no runner "
        "collects (domain/loading.py): the run goes to a human, the paths named.",
    )
    sensitivity: Sensitivity | None = Field(
        default=None,
        description="The change-sensitivity run: the functions stubbed out, or why it did not apply.",
    )
    missing_guards: list[str] = Field(
        default_factory=list,
        max_length=200,
        description="Guard criteria whose named test no test file of the baseline defines: a spec "
        "error (a guard keeps existing behaviour, so its test must exist before the change).",
    )
    baseline: BaselineEvidence | None = Field(
        default=None,
        description="What the submission changes against its baseline (the merge-base with the "
        "base branch): kept on the run, signed (its commit and a digest of the changed paths); a "
        "change to a protected path no human allowed holds the task for a person.",
    )
    base: MergedBase | None = Field(
        default=None,
        description="What the checks ran on: the submission merged (or rebased) onto this tip of "
        "the base branch, and the merge's tree id; mode none: the commit alone. Signed with the run.",
    )
    grading: GradingTree | None = Field(
        default=None,
        description="How the grading run's tree differs from the submission's (the baseline's test "
        "side), the checks on the submission's whole tree where that run was needed, and the "
        "changed expectations it found.",
    )
    tripwires: Tripwires | None = Field(
        default=None,
        description="The tripwires the verifier wrote into the grading run and what was reported of "
        "each: one not reported failed holds the run for a human.",
    )
    conflict: MergeConflict | None = Field(
        default=None,
        description="The submission did not merge onto the base tip: nothing ran. The task goes "
        "back to ready without using an attempt (send no checks, results, error or base with it).",
    )
