"""What one verification run passes from step to step (verifier/run.py lists the steps).

`Verifier`: who runs the checks and with what (the environment, the keys never to print, the
check user, the caches), the same for every run of a worker. `Work`: the server's work item,
read once. `RunState`: everything a run has found or made so far, each field set by the one
step that finds it and read by the steps after it. `Gathered`: what a run sends back, its report
to the server (domain/run_report.py) with the reviewer's answer and the time each step took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskgate.domain.commit_ids import FULL_COMMIT
from taskgate.domain.grading import Plan
from taskgate.domain.models import Criterion, CriterionKind
from taskgate.domain.reports import Report
from taskgate.domain.run_report import CriterionResult, RunReport, TripwireResult
from taskgate.domain.tripwires import Tripwire
from taskgate.domain.verifier_config import VerifierConfig
from taskgate.verifier import process, tools
from taskgate.verifier.cache import CacheStore
from taskgate.verifier.checkout import Baseline, Checkout, ClaimedBase
from taskgate.verifier.hidden import Placed
from taskgate.verifier.sandbox import RunDirs, Sandbox

Progress = Callable[[str], None]


class RunError(Exception):
    """The run cannot go on: its evidence ends as an error of the run."""


def _quiet(_line: str) -> None:
    return None


@dataclass(frozen=True)
class Verifier:
    env: Mapping[str, str]  # the verifier's own environment; scrubbed before anything runs
    secrets: Sequence[str] = ()  # values never recorded in any output
    git_token: str | None = None
    reviewer_available: bool = False
    progress: Progress = _quiet
    sandbox: Sandbox = field(default_factory=Sandbox)
    cache: CacheStore | None = None  # where dependency caches are kept; None: never used

    def run(self, command: str, dirs: RunDirs, minutes: float, stdin: bytes | None = None) -> process.Exited:
        """A command of the run (a check, a command criterion, the reviewer), as the check user
        in `dirs`, with the scrubbed environment."""
        return process.run(
            command,
            cwd=dirs.checkout,
            timeout_s=minutes * 60,
            env=self.sandbox.env(self.env, dirs),
            stdin=stdin,
            secrets_=self.secrets,
            split_stderr=stdin is not None,  # the reviewer answers on stdout; its stderr is noise
            user=self.sandbox.user,
            every_descendant=self.sandbox.reaper,
        )

    def missing(self, command: str, done: process.Exited) -> str | None:
        """The tool the command's shell could not run (exit 126/127), if that is what happened."""
        return tools.unrunnable(command, done.exit_code, done.output + done.errors, self.env)


@dataclass(frozen=True)
class Work:
    """The server's work item, as the steps read it."""

    repo: str
    commit_sha: str
    config: VerifierConfig | None
    criteria: tuple[Criterion, ...]
    command_criteria_allowed: bool
    guards: frozenset[str]  # the guard criteria whose guard counts
    spec: dict[str, Any] | None
    claimed_base: ClaimedBase | None

    @classmethod
    def of(cls, item: Mapping[str, Any]) -> Work:
        return cls(
            repo=item["repo"],
            commit_sha=item["commit_sha"],
            config=VerifierConfig.model_validate(item["config"]) if item.get("config") else None,
            criteria=tuple(Criterion.model_validate(c) for c in item["criteria"]),
            command_criteria_allowed=bool(item.get("command_criteria_allowed")),
            guards=frozenset(item.get("guards") or ()),
            spec=item.get("spec"),
            claimed_base=_claimed_base(item),
        )

    def of_kind(self, kind: CriterionKind) -> list[Criterion]:
        return [c for c in self.criteria if c.kind is kind]


def _claimed_base(item: Mapping[str, Any]) -> ClaimedBase | None:
    """The base branch's tip when the task was claimed, as the server recorded it; None when
    it could not read the repository (or sent something that is not a branch and a commit)."""
    got = item.get("claimed_base")
    if not isinstance(got, dict):
        return None
    branch, commit = got.get("branch"), got.get("commit")
    if not isinstance(branch, str) or not isinstance(commit, str) or not FULL_COMMIT.match(commit):
        return None
    return ClaimedBase(branch, commit)


@dataclass
class Gathered:
    """What a run found: its report, sent to the server, which decides; the reviewer's answer
    (sent under the reviewer key); how long each step took."""

    report: RunReport = field(default_factory=RunReport)
    review: dict[str, CriterionResult] | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.timings[phase] = self.timings.get(phase, 0.0) + time.monotonic() - start


@dataclass(frozen=True)
class Written:
    """A tripwire the verifier wrote into the grading tree, and what it stands for on the run."""

    tripwire: Tripwire
    criterion: str | None  # the criterion whose named test a twin perturbs (None: a canary)
    # The criteria whose named tests it stands beside: judged only where a report holds one of
    # them (a runner that wrote no report, or never ran, bent nothing a tripwire can show).
    beside: tuple[str, ...] = ()

    def result(self, reported: str, check: str | None) -> TripwireResult:
        t = self.tripwire
        return TripwireResult.model_validate(
            {
                "kind": t.kind,
                "name": t.name,
                "path": t.path,
                "of": t.of,
                "criterion": self.criterion,
                "check": check,
                "perturbed": t.perturbed,
                "reported": reported,
            }
        )


@dataclass(frozen=True)
class Submitted:
    """The files the submission changes, copied aside before any check ran."""

    path: Path  # the changed files as the first run sees them (a deleted one is absent)
    changed: list[str]  # the paths the submission changes against its baseline


@dataclass(frozen=True)
class StubbedTree:
    """A copy of the tree that judges with the functions the change touched stubbed out, and
    only the test files that define a named test."""

    path: Path
    functions: list[str]  # `path: name` of each function stubbed


@dataclass
class RunState:
    verifier: Verifier
    work: Work
    config: VerifierConfig
    stack: ExitStack  # what the run made, undone when it ends
    gathered: Gathered
    # Set by the steps, in the order they run:
    co: Checkout | None = None  # checkout
    base: Baseline | None = None  # baseline
    diff: str | None = None  # review (the diff the reviewer reads)
    committed: set[str] = field(default_factory=set)  # checks whose report path the commit held
    grading_plan: Plan | None = None  # how the grading tree differs from the submission's
    submitted_tree: Path | None = None  # the submission's whole tree, where a second run needs it
    # The reports of the run on the submission's whole tree: the only run that had every test
    # file it adds (the grading run leaves the unnamed ones out).
    submitted_reports: dict[str, Report] | None = None
    changes: list[str] = field(default_factory=list)  # the paths the submission adds or changes (loading)
    submitted: Submitted | None = None
    stubbed: StubbedTree | None = None  # the change-sensitivity run's tree
    placed: Placed | None = None  # the hidden tests, placed
    hidden_tree: Path | None = None  # where they run: the grading tree with no other test file
    written: list[Written] = field(default_factory=list)  # the tripwires in the grading tree
    archive: Path | None = None  # the baseline's tree as a tar file
    dirs: RunDirs | None = None  # the checkout, handed to the check user
    started: dict[str, float] = field(default_factory=dict)  # when each check started
    reports: dict[str, Report] = field(default_factory=dict)  # each check's report
    stopped: bool = False  # nothing more to do: the commit is missing, or it did not merge

    @property
    def report(self) -> RunReport:
        return self.gathered.report

    @property
    def checkout(self) -> Checkout:
        assert self.co is not None, "the checkout step runs first"
        return self.co

    @property
    def baseline(self) -> Baseline:
        assert self.base is not None, "the baseline step runs before this one"
        return self.base

    def say(self, line: str) -> None:
        self.verifier.progress(line)

    def timed(self, phase: str) -> AbstractContextManager[None]:
        return self.gathered.timed(phase)
