"""One verification run, from the server's work item to the evidence sent back.

The order: refuse early what cannot be verified (no check, unapproved commands, review criteria
without a reviewer key, test criteria without a report), then a clean checkout and, for review
criteria, its diff (git's last work: from here on the checkout is handed to the check user),
every configured check, their reports, the test criteria mapped by the domain's matcher, the
approved command criteria, and the reviewer for review criteria. Whatever breaks on the
verifier's side (checkout, a timeout, a missing or unreadable report, the reviewer) is an error of
the run, never a failure of the executor's work: the server decides the outcome from what is
gathered here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskgate.domain import newtests, screen
from taskgate.domain.baseline import (
    DIFF_MAX_CHARS,
    MAX_CHANGED,
    SCOPED,
    BaselineEvidence,
    harness_part,
    is_test_file,
    package_scripts,
    protect_globs,
    protected,
)
from taskgate.domain.commit_ids import FULL_COMMIT
from taskgate.domain.merging import MergeConflict, MergedBase
from taskgate.domain.models import Criterion, CriterionKind, FailedTest
from taskgate.domain.reports import Report, ReportError
from taskgate.domain.run_report import (
    CheckResult,
    CriterionResult,
    Evidence,
    EvidenceSource,
    HiddenRun,
    Restored,
    ScreenHit,
    WithoutChange,
)
from taskgate.domain.runners import runner_line
from taskgate.domain.testrefs import failed_names, match_reports, matched_tests
from taskgate.domain.text import TAIL_CHARS, clip_words, tail_lines
from taskgate.domain.tooling import ADVICE, environment_failure, fails_on_baseline, no_tool
from taskgate.domain.verifier_config import IMAGE_VAR, CacheSpec, CheckSpec, ReviewerSpec, VerifierConfig
from taskgate.verifier import hidden, process, reviewer, tools, untar
from taskgate.verifier.cache import (
    MANIFEST,
    PLACEHOLDER,
    CacheError,
    CacheStore,
    cache_key,
    copy_tree,
    matches,
    relocate,
    tree_bytes,
)
from taskgate.verifier.checkout import (
    Baseline,
    Checkout,
    CheckoutError,
    ClaimedBase,
    CommitMissing,
    added_lines,
    checkout,
    read_committed,
)
from taskgate.verifier.merging import Conflict, onto_base
from taskgate.verifier.reading import ReportMissing, read_report
from taskgate.verifier.sandbox import RUN_DIR_MODE, RunDirs, Sandbox

DETAIL_CHARS = 1000
REPORT_FAILED_LISTED = 10  # failing testcases of a report named with its check's result

Progress = Callable[[str], None]


class RunError(Exception):
    """The run cannot go on: its evidence ends as an error of the run."""


@dataclass
class Gathered:
    """What a run found: sent to the server, which decides."""

    checks: dict[str, CheckResult] = field(default_factory=dict)
    results: dict[str, CriterionResult] = field(default_factory=dict)
    review: dict[str, CriterionResult] | None = None
    error: str | None = None
    # The repository was read and the submitted commit is not in it: nothing ran, and the
    # server fails the run (the executor must push it). Not an error of the verifier.
    commit_missing: bool = False
    # The full commit checked out (`git rev-parse HEAD`): the submitted one may be abbreviated,
    # and the server signs the full one.
    commit: str | None = None
    # What the submission changes against its baseline, found before any check ran.
    baseline: BaselineEvidence | None = None
    # What the checks ran on (the submission merged onto the base tip), or the conflict that
    # stopped the run before any check
    base: MergedBase | None = None
    conflict: MergeConflict | None = None
    timings: dict[str, float] = field(default_factory=dict)
    # What the config's hidden tests did (None: the config names none, or the run broke first).
    hidden: HiddenRun | None = None
    # The screen's hits in the lines the submission adds (domain/screen.py).
    screened: list[ScreenHit] = field(default_factory=list)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.timings[phase] = self.timings.get(phase, 0.0) + time.monotonic() - start


def _seconds(minutes: float) -> str:
    return f"{minutes * 60:.0f} s" if minutes < 1 else f"{minutes:g} min"


def _tail(text: str, n: int = TAIL_CHARS) -> str:
    return text[-n:]


@dataclass
class Runner:
    env: Mapping[str, str]  # the verifier's own environment; scrubbed before anything runs
    secrets: Sequence[str] = ()  # values never recorded in any output
    git_token: str | None = None
    reviewer_available: bool = False
    progress: Progress = lambda _line: None
    sandbox: Sandbox = field(default_factory=Sandbox)
    cache: CacheStore | None = None  # where dependency caches are kept; None: never used

    def execute(self, work: dict[str, Any]) -> Gathered:
        g = Gathered()
        try:
            with ExitStack() as stack:
                self._gather(work, g, stack)
        except RunError as exc:
            g.error = str(exc)
        return g

    # -- the steps ---------------------------------------------------------------------------

    def _gather(self, work: dict[str, Any], g: Gathered, stack: ExitStack) -> None:
        cfg = VerifierConfig.model_validate(work["config"]) if work.get("config") else None
        criteria = [Criterion.model_validate(c) for c in work["criteria"]]
        by_kind = {k: [c for c in criteria if c.kind is k] for k in CriterionKind}
        self._refuse_early(work, cfg, by_kind)
        assert cfg is not None
        mine = self.env.get(IMAGE_VAR)
        if cfg.image and mine and cfg.image != mine:
            # A container of another image would run the checks without their toolchain.
            raise RunError(
                f"this verifier runs in image {mine}, and the project's verifier config names {cfg.image} "
                "(changed since this container started?): a container of that image verifies it"
            )
        sha = work["commit_sha"]
        with g.timed("checkout"):
            try:
                co = stack.enter_context(checkout(work["repo"], sha, env=self.env, token=self.git_token))
            except CommitMissing as exc:
                g.commit_missing = True
                self.progress(f"checkout: {exc}")
                return
            except CheckoutError as exc:
                raise RunError(f"checkout failed: {exc}") from exc
        g.commit = co.head
        self.progress(
            f"checkout of {co.head[:12]} from {work['repo']} at {co.path} in {g.timings['checkout']:.2f} s"
        )
        # Every git command before any check: once checks ran, the checkout (and its .git) is
        # the check's.
        with g.timed("baseline"):
            base = self._baseline(cfg, co, g, _claimed_base(work))
        if self.cache is not None and any(c.cache for c in cfg.checks.values()):
            with g.timed("cache"):  # git's work too: before the checkout is the check user's
                self._caches(work, cfg, co, base)
        diff = None
        if by_kind[CriterionKind.REVIEW]:
            with g.timed("review"):
                diff = self._diff(cfg, co, base)
        # The screen reads the submission's own added lines: before the merge brings in the base's.
        with g.timed("screen"):
            g.screened = self._screen(cfg, co, base)
        # After the baseline, the caches and the diff (each about the submission itself), before
        # the checkout is the check user's.
        with g.timed("merge"):
            self._merge(cfg, co, g, base)
        if g.conflict is not None:
            return  # merging is not verification: a conflict is found before any check runs
        committed = self._clear_reports(cfg, co)
        second = None
        submitted = None
        if by_kind[CriterionKind.TEST]:
            with g.timed("second_tree"):
                second = self._restored_tree(co, base, stack)
                submitted = self._submitted(cfg, co, base, g, stack)
        placed = None
        if cfg.hidden_tests is not None:
            # Last before the checks: nothing of the submission's is compared with them.
            with g.timed("hidden"):
                try:
                    placed = hidden.place(cfg.hidden_tests, co)
                except hidden.HiddenError as exc:
                    if exc.detail:
                        self.progress(f"hidden tests: {exc.detail}")
                    raise RunError(str(exc)) from exc
            self.progress(f"hidden tests: {len(placed.files)} files of {placed.commit[:12]} placed")
        with g.timed("baseline"):
            tree = self._baseline_archive(co, base)
        dirs = stack.enter_context(self.sandbox.hand_over(co.path))
        if self.sandbox.user is not None:
            self.progress(f"checks run as {self.sandbox.user.name} (uid {self.sandbox.user.uid})")
        with g.timed("checks"):
            started = self._checks(cfg, dirs, g)
        with g.timed("reports"):
            reports = self._reports(cfg, co, g, started, committed)
        self._environment(cfg, g, reports, tree)
        with g.timed("reports"):
            self._test_criteria(by_kind[CriterionKind.TEST], cfg, reports, g)
        if placed is not None:
            self._hidden(placed, reports, g)
        if second is not None:
            with g.timed("second_run"):
                self._second_run(by_kind[CriterionKind.TEST], cfg, co, second, g, stack)
        if submitted is not None:
            self._without_change(
                by_kind[CriterionKind.TEST], work, cfg, co, submitted, tree, second, reports, g
            )
        if by_kind[CriterionKind.COMMAND]:
            with g.timed("commands"):
                self._commands(by_kind[CriterionKind.COMMAND], cfg, dirs, g)
        if diff is not None:
            with g.timed("review"):
                g.review = self._review(work, by_kind[CriterionKind.REVIEW], cfg, dirs, diff)

    def _screen(self, cfg: VerifierConfig, co: Checkout, base: Baseline) -> list[ScreenHit]:
        """The screen on the lines the submission adds against its baseline (the one _baseline
        found: git's work, so before the checkout is handed over)."""
        try:
            changed = co.changed_paths(base)
            into = [cfg.hidden_tests.into] if cfg.hidden_tests else []
            wanted = [
                p
                for p in changed
                if p.endswith(screen.PY_SUFFIXES + screen.JS_SUFFIXES) and not screen.is_test_file(p, into)
            ]
            lines = added_lines(co, base, wanted)
        except CheckoutError as exc:
            raise RunError(f"the screen could not read the submission's changes: {exc}") from exc
        files = [
            screen.AddedFile(p, text, lines[p])
            for p in wanted
            if p in lines and (text := read_committed(co, p)) is not None
        ]
        found = screen.screen(
            files,
            allow=cfg.screen_allow,
            test_dirs=into,
            # The baseline's bins: the submission's own package.json could name its library one.
            package_json=co.read_at(base, "package.json"),
        )
        for h in found:
            self.progress(f"screen: {h.quoted()}")
        return [ScreenHit(path=h.path, line=h.line, rule=h.rule, text=h.text) for h in found]

    def _hidden(self, placed: hidden.Placed, reports: dict[str, Report], g: Gathered) -> None:
        """What the hidden tests did; every check's output withheld (it can quote them), and a
        hidden test's message kept out of the criteria's evidence unless the config reveals it."""
        g.hidden = hidden.outcome(placed, list(reports.values()))
        for name, c in g.checks.items():
            g.checks[name] = c.model_copy(update={"output_tail": hidden.WITHHELD})
        if placed.spec.reveal != "messages":
            for cid, r in g.results.items():
                if any(placed.holds(*_split(t.name)) for t in r.failures):
                    g.results[cid] = r.model_copy(
                        update={
                            "detail": "a hidden test failed (its message is not revealed)",
                            "failures": [FailedTest(name=t.name) for t in r.failures],
                        }
                    )
        self.progress(
            f"hidden tests: {g.hidden.ran} ran, {g.hidden.failed_count} failed"
            + "".join(f"; {t.name}" for t in g.hidden.failed[:5])
        )
        if g.hidden.ran == 0 and all(c.exit_code == 0 for c in g.checks.values()):
            raise RunError(
                f"the hidden tests placed at {placed.spec.into} are in no check's report: "
                "the checks must collect that directory"
            )

    # -- dependency caches (verifier/cache.py) ----------------------------------------------

    def _caches(self, work: dict[str, Any], cfg: VerifierConfig, co: Checkout, base: Baseline) -> None:
        if self.sandbox.user is None:
            self.progress(
                "cache: not used: the checks run as the verifier's own user, who could write into it "
                "(started as root, the verifier runs them as a check user)"
            )
            return
        if base.commit is None:
            self.progress(f"cache: not used: {base.why}")
            return
        try:
            changed = co.changed_paths(base)
            listed = co.git("ls-tree", "-r", "-z", base.commit, cwd=co.path)
        except CheckoutError as exc:
            self.progress(f"cache: not used: {exc}")
            return
        blobs: dict[str, str] = {}
        for entry in filter(None, listed.split("\0")):
            meta, _, path = entry.partition("\t")
            blobs[path] = meta.split()[-1]
        for name, check in cfg.checks.items():
            if check.cache is not None:
                self._cache(work, cfg, co, base, name, check, check.cache, changed, blobs)

    def _cache(
        self,
        work: dict[str, Any],
        cfg: VerifierConfig,
        co: Checkout,
        base: Baseline,
        name: str,
        check: CheckSpec,
        spec: CacheSpec,
        changed: list[str],
        blobs: dict[str, str],
    ) -> None:
        assert self.cache is not None and self.sandbox.user is not None and base.commit is not None
        touched = [p for p in changed if any(matches(k, p) for k in spec.key)]
        if touched:
            self.progress(f"cache {name}: not used: the submission changes {touched[0]}, a key file")
            return
        for path in spec.paths:
            taken = occupied(co.path, path)
            if taken is not None:
                self.progress(f"cache {name}: not used: the submission has {taken}, where the cache goes")
                return
        files = sorted([p, oid] for p, oid in blobs.items() if any(matches(k, p) for k in spec.key))
        key = cache_key(
            {
                "format": 1,
                "check": name,
                "command": check.command,
                "key": spec.key,
                "paths": spec.paths,
                "files": files,
                "machine": platform.machine(),
                "image": self.env.get(IMAGE_VAR),
                "user": self.sandbox.user.name,
            }
        )
        staged = co.path.parent / f"cache-{name}"  # in the run's directory, gone with it
        try:
            found = self.cache.restore(key, staged)
            if not found and base.commit == co.head:
                # The submitted commit is on the base branch already: its baseline is itself, and
                # a cache made from it would be made by the submission's own code.
                self.progress(f"cache {name}: not made: the submitted commit is its own baseline")
            elif not found and self._prepare(work, cfg, base.commit, name, check, spec, key):
                found = self.cache.restore(key, staged)
            if not found:
                return
            relocate(staged, PLACEHOLDER, str(co.path), json.loads((staged / MANIFEST).read_text()))
            restored = []
            for path in spec.paths:
                src = staged / path
                if src.is_symlink() or src.exists():
                    (co.path / path).parent.mkdir(parents=True, exist_ok=True)
                    os.rename(src, co.path / path)
                    restored.append(path)
            self.progress(
                f"cache {name}: restored {', '.join(restored) or 'nothing'} "
                f"(key {key[:12]}, from the baseline {base.commit[:12]})"
            )
        except (CacheError, OSError, ValueError) as exc:
            self.progress(f"cache {name}: not used: {exc}")
        finally:
            shutil.rmtree(staged, ignore_errors=True)

    def _prepare(
        self,
        work: dict[str, Any],
        cfg: VerifierConfig,
        commit: str,
        name: str,
        check: CheckSpec,
        spec: CacheSpec,
        key: str,
    ) -> bool:
        """Make the cache from the check run on the baseline's own commit, in a checkout of
        its own; saved only when the check passed there. True when saved."""
        assert self.cache is not None
        self.progress(
            f"cache {name}: none yet for key {key[:12]}: running the check on the baseline {commit[:12]}"
        )
        with ExitStack() as stack:
            try:
                made = stack.enter_context(checkout(work["repo"], commit, env=self.env, token=self.git_token))
            except (CheckoutError, CommitMissing) as exc:
                self.progress(f"cache {name}: not made: checkout of the baseline failed: {exc}")
                return False
            with self.sandbox.hand_over(made.path) as dirs:
                done = self._run(check.command, dirs, check.timeout_minutes or cfg.check_timeout_minutes)
            if done.exit_code != 0:
                said = "timed out" if done.timed_out else f"exited {done.exit_code}"
                self.progress(f"cache {name}: not saved: the check {said} on the baseline")
                return False
            # Nothing of the check user's runs any more (hand_over ended): the tree holds still.
            staging = made.path.parent / "cache-save"
            os.mkdir(staging, 0o700)
            for path in spec.paths:
                if occupied(made.path, path, parents_only=True) is not None:
                    self.progress(f"cache {name}: not saved: {path} is under a link on the baseline")
                    return False
                src = made.path / path
                if src.is_symlink() or not src.is_dir():
                    if src.is_symlink() or src.exists():
                        self.progress(f"cache {name}: not saved: {path} is not a directory after the check")
                        return False
                    continue  # the check made nothing there
                (staging / path).parent.mkdir(parents=True, exist_ok=True)
                copy_tree(src, staging / path)
            moved = relocate(staging, str(made.path), PLACEHOLDER)
            (staging / MANIFEST).write_text(json.dumps(moved))
            try:
                self.cache.save(key, staging)
            except (CacheError, OSError) as exc:
                self.progress(f"cache {name}: not saved: {exc}")
                return False
            self.progress(f"cache {name}: saved from the baseline ({tree_bytes(staging) / 2**20:.1f} MB)")
            return True

    def _merge(self, cfg: VerifierConfig, co: Checkout, g: Gathered, base: Baseline) -> None:
        """Put what the checks run on in the checkout: the submission merged (or rebased) onto
        the base branch's tip, as the config's `merge` asks; the commit alone with `none`, or by
        default when the repository has no base branch to merge onto."""
        if cfg.merge == "none":
            g.base = MergedBase(mode="none", why="the verifier config sets merge: none")
            return
        # A submission the base branch already holds merges onto its tip whatever its baseline.
        if base.tip is None or (base.commit is None and not base.on_branch):
            if cfg.merge is not None:
                raise RunError(f"the verifier config sets merge: {cfg.merge}, and {base.why}")
            g.base = MergedBase(mode="none", branch=base.branch, tip=base.tip, why=base.why)
            self.progress(f"merge: none ({base.why}); the checks run on the commit alone")
            return
        mode = cfg.merge or "merge"
        try:
            done = onto_base(co, mode, base)
        except CheckoutError as exc:
            raise RunError(f"{mode} onto {base.branch} failed: {exc}") from exc
        assert base.branch is not None
        if isinstance(done, Conflict):
            g.conflict = MergeConflict(mode=done.mode, branch=base.branch, tip=base.tip, paths=done.paths)
            self.progress(
                f"{mode}: conflict onto {base.branch} at {base.tip[:12]} in {', '.join(done.paths[:5])}"
                + (" ..." if len(done.paths) > 5 else "")
                + "; no check runs"
            )
            return
        g.base = MergedBase(mode=mode, branch=base.branch, tip=base.tip, tree=done.tree)
        self.progress(
            f"{mode}: onto {base.branch} at {base.tip[:12]}, tree {done.tree[:12]}; the checks run there"
        )

    def _refuse_early(
        self, work: dict[str, Any], cfg: VerifierConfig | None, by_kind: dict[CriterionKind, list[Criterion]]
    ) -> None:
        if cfg is None or not cfg.checks:
            raise RunError("the project's verifier config has no check")
        commands = [c.id for c in by_kind[CriterionKind.COMMAND]]
        if commands and not work.get("command_criteria_allowed"):
            raise RunError(
                f"command criteria ({', '.join(commands)}) were not approved by a human with their spec; "
                "none was run"
            )
        reviews = [c.id for c in by_kind[CriterionKind.REVIEW]]
        if reviews and not self.reviewer_available:
            raise RunError(
                f"review criteria ({', '.join(reviews)}) need a reviewer key (TASKGATE_REVIEWER_KEY); none is set"
            )
        tests = [c.id for c in by_kind[CriterionKind.TEST]]
        if tests and not any(c.report for c in cfg.checks.values()):
            raise RunError(
                f"test criteria ({', '.join(tests)}) need a check with a report; none is configured"
            )

    def _run(
        self, command: str, dirs: RunDirs, minutes: float, stdin: bytes | None = None
    ) -> process.Finished:
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

    def _missing(self, command: str, done: process.Finished) -> str | None:
        """The tool the command's shell could not run (exit 126/127), if that is what happened."""
        return tools.unrunnable(command, done.exit_code, done.output + done.errors, self.env)

    def _checks(self, cfg: VerifierConfig, co: RunDirs, g: Gathered) -> dict[str, float]:
        """Run every check; returns when each started (wall clock, as file times are)."""
        started: dict[str, float] = {}
        for name, check in cfg.checks.items():
            minutes = check.timeout_minutes or cfg.check_timeout_minutes
            self.progress(f"check {name}: {check.command}")
            # A second's slack: some filesystems keep file times coarser than the clock.
            started[name] = time.time() - 1.0
            done = self._run(check.command, co, minutes)
            g.checks[name] = CheckResult(
                exit_code=done.exit_code,
                timed_out=done.timed_out,
                output_tail=_tail(done.output),
                duration_ms=done.duration_ms,
                missing_tool=self._missing(check.command, done),
                runner=runner_line(done.head, done.output),
            )
            if done.timed_out:
                self.progress(f"check {name}: timed out after {_seconds(minutes)}, stopped")
                raise RunError(f"check {name} timed out after {_seconds(minutes)}")
            ran = f" ({g.checks[name].runner})" if g.checks[name].runner else ""
            self.progress(f"check {name}: exit {done.exit_code} in {done.duration_ms / 1000:.2f} s{ran}")
            if g.checks[name].missing_tool:
                self.progress(f"check {name}: its shell could not run `{g.checks[name].missing_tool}` here")
        return started

    def _clear_reports(self, cfg: VerifierConfig, co: Checkout) -> set[str]:
        """Delete every report path before the checks run (a report is the check's own, never
        the commit's); returns the checks whose report path the commit held a file at."""
        committed: set[str] = set()
        for name, check in cfg.checks.items():
            if check.report is None:
                continue
            target = co.path / check.report.path
            if not target.parent.resolve().is_relative_to(co.path.resolve()):
                # A committed link out of the checkout: deleting through it would reach the
                # verifier's own files. Reading it is refused later for the same reason.
                committed.add(name)
                continue
            if target.is_symlink() or target.exists():
                committed.add(name)
                self.progress(
                    f"report {name}: the commit holds {check.report.path}; deleted before the check"
                )
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                else:
                    target.unlink()
        return committed

    def _reports(
        self, cfg: VerifierConfig, co: Checkout, g: Gathered, started: dict[str, float], committed: set[str]
    ) -> dict[str, Report]:
        reports: dict[str, Report] = {}
        for name, check in cfg.checks.items():
            if check.report is None:
                continue
            if name in committed:
                g.checks[name] = g.checks[name].model_copy(update={"report_problem": "committed"})
            try:
                read = read_report(co.path, check.report, owner=self.sandbox.check_uid)
            except ReportMissing:
                if g.checks[name].exit_code == 0:
                    raise RunError(
                        f"check {name} exited 0 but wrote no report at {check.report.path}"
                    ) from None
                # It failed before writing one: a failing check, whose criteria have no evidence.
                self.progress(f"report {name}: none at {check.report.path} (the check failed)")
                continue
            except ReportError as exc:
                raise RunError(f"report of check {name}: {exc}") from exc
            if read.mtime < started[name]:
                # Written before the check began (a file copied with its old time): not this run's.
                g.checks[name] = g.checks[name].model_copy(
                    update={"report_problem": "stale", "report_sha256": read.sha256}
                )
                self.progress(f"report {name}: {check.report.path} was last written before the check started")
                continue
            reports[name] = read.report
            failing = failed_names(read.report)
            g.checks[name] = g.checks[name].model_copy(
                update={
                    "report_sha256": read.sha256,
                    "report_failed": len(failing),
                    "report_failed_names": failing[:REPORT_FAILED_LISTED],
                }
            )
            self.progress(f"report {name}: {check.report.path} read (sha256 {read.sha256})")
        return reports

    def _test_criteria(
        self, tests: list[Criterion], cfg: VerifierConfig, reports: dict[str, Report], g: Gathered
    ) -> None:
        paths = {n: c.report.path for n, c in cfg.checks.items() if c.report is not None}
        for c in tests:
            ref = c.verify_ref or ""
            found, check = match_reports(reports, ref)
            source = EvidenceSource(check=check, report=paths[check], ref=ref) if check else None
            g.results[c.id] = CriterionResult(
                result=found.evidence,
                detail=found.detail[:DETAIL_CHARS],
                source=source,
                failures=list(found.failures),
            )
            said = found.detail + (f" — {found.failures[0].message}" if found.failures else "")
            self.progress(f"{c.id} {found.evidence.value}: {_one_line(said)}")

    def _commands(self, commands: list[Criterion], cfg: VerifierConfig, co: RunDirs, g: Gathered) -> None:
        # All command criteria of a run share one check timeout (the server's budget counts one).
        deadline = time.monotonic() + cfg.check_timeout_minutes * 60
        for c in commands:
            command = c.verify_ref or ""
            left = (deadline - time.monotonic()) / 60
            self.progress(f"{c.id} command: {command}")
            done = self._run(command, co, max(left, 0.0))
            if done.timed_out:
                raise RunError(
                    f"command criteria took longer than {_seconds(cfg.check_timeout_minutes)} (at {c.id})"
                )
            tool = self._missing(command, done)
            if tool is not None and done.exit_code is not None:
                raise RunError(no_tool(tool, f"{c.id}'s command", command, done.exit_code) + ADVICE)
            ok = done.exit_code == 0
            detail = f"exit {done.exit_code} in {done.duration_ms / 1000:.2f} s"
            if not ok and done.output.strip():
                detail += ":\n" + tail_lines(done.output, DETAIL_CHARS)  # its end: where the error is
            g.results[c.id] = CriterionResult(
                result=Evidence.PASS if ok else Evidence.FAIL,
                detail=detail,
                source=EvidenceSource(ref=command),
            )
            self.progress(f"{c.id} {'pass' if ok else 'fail'}: exit {done.exit_code}")

    def _baseline(
        self, cfg: VerifierConfig, co: Checkout, g: Gathered, claimed: ClaimedBase | None = None
    ) -> Baseline:
        """Find the baseline and what the submission changes against it: the paths, which
        scoped files changed only outside their test runner's part, and the diff of the
        protected ones."""
        try:
            base = co.baseline(cfg.base_branch_choice(), claimed)
            changed = co.changed_paths(base)
            listed = changed[:MAX_CHANGED]
            unchanged = [
                p
                for p in listed
                if (name := p.rsplit("/", 1)[-1]) in SCOPED
                and harness_part(name, co.read_at(base, p)) == harness_part(name, co.read_at(None, p))
            ]
            commands = [c.command for c in cfg.checks.values()]
            scripts = package_scripts(
                commands, co.read_at(base, "package.json"), co.read_at(None, "package.json")
            )
            globs = protect_globs(cfg.protect, [*commands, *scripts])
            held = [p for p in protected(listed, globs, unchanged) if not cfg.replaced_before_checks(p)]
            diff = co.diff_from(base, held) if held else ""
        except CheckoutError as exc:
            raise RunError(f"baseline: {exc}") from exc
        except UnicodeDecodeError as exc:
            # git printed bytes that are not UTF-8 (a path's name, a scoped file's content).
            raise RunError(f"baseline: git's answer is not UTF-8 text ({exc.reason})") from exc
        g.baseline = BaselineEvidence(
            branch=base.branch,
            commit=base.commit,
            why=base.why,
            changed=listed,
            changed_total=len(changed),
            harness_unchanged=unchanged,
            diff=diff[:DIFF_MAX_CHARS],
            scripts=scripts,
        )
        where = f"{base.branch} at {base.commit[:12]}" if base.commit else f"none ({base.why})"
        said = f"; protected: {', '.join(held)}" if held else ""
        self.progress(f"baseline: {where}; {len(changed)} changed paths{said}")
        return base

    def _restored_tree(self, co: Checkout, base: Baseline, stack: ExitStack) -> _SecondTree | None:
        """A copy of the checkout with the test files the submission changed restored from the
        baseline (those that exist there; everything else as submitted), made while git and the
        checkout are still the verifier's. None when no such file changed: no second run."""
        if base.commit is None:
            return None
        try:
            changed = [p for p in co.changed_paths(base) if is_test_file(p) and not p.endswith("conftest.py")]
            restored = {p: text for p in changed if (text := co.read_at(base, p)) is not None}
            diff = co.diff_from(base, sorted(restored)) if restored else ""
        except CheckoutError as exc:
            raise RunError(f"baseline tests: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise RunError(f"baseline tests: git's answer is not UTF-8 text ({exc.reason})") from exc
        if not restored:
            return None
        top = Path(tempfile.mkdtemp(prefix="taskgate-verify-"))
        stack.callback(shutil.rmtree, top, True)
        path = top / "checkout"
        shutil.copytree(co.path, path, symlinks=True)
        for rel, text in restored.items():
            target = path / rel
            if target.is_symlink() or target.is_dir():
                # The submission turned the test file into a link or a directory: the baseline's
                # file goes back in its place, never written through the link.
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                else:
                    target.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text + "\n")  # git's answer lost the last newline
        self.progress(f"baseline tests: {', '.join(sorted(restored))} restored in a second tree")
        return _SecondTree(path=path, files=sorted(restored), diff=diff[:DIFF_MAX_CHARS])

    def _second_run(
        self,
        tests: list[Criterion],
        cfg: VerifierConfig,
        co: Checkout,
        second: _SecondTree,
        g: Gathered,
        stack: ExitStack,
    ) -> None:
        """Run the checks again on the second tree and take each test criterion's evidence from
        it, keeping the first run's beside it. A ref the second run cannot find names a test that
        is not in the baseline's files: its first-run evidence stands."""
        self.progress("second run: the checks again, with the baseline's test files")
        g2 = Gathered()
        dirs = stack.enter_context(self.sandbox.hand_over(second.path))
        started = self._checks(cfg, dirs, g2)
        reports = self._reports(cfg, dataclasses.replace(co, path=second.path), g2, started, set())
        self._test_criteria(tests, cfg, reports, g2)
        for c in tests:
            first, again = g.results[c.id], g2.results[c.id]
            if again.result is Evidence.MISSING:
                continue
            g.results[c.id] = again.model_copy(
                update={
                    "restored": Restored(
                        files=second.files,
                        submitted=first.result,
                        submitted_detail=first.detail,
                        diff=second.diff,
                    )
                }
            )

    def _submitted(
        self, cfg: VerifierConfig, co: Checkout, base: Baseline, g: Gathered, stack: ExitStack
    ) -> _Submitted | None:
        """The files the submission changes, copied aside as the first run will see them, while
        the checkout is still the verifier's (after the checks it holds whatever they made of
        it): a run on the baseline's code takes the submission's test files from here. None
        when it changes nothing (or is its own baseline)."""
        if g.baseline is None or base.commit == co.head:
            return None
        changed = [p for p in g.baseline.changed if not cfg.replaced_before_checks(p)]
        if not changed:
            return None
        top = Path(tempfile.mkdtemp(prefix="taskgate-submitted-"))
        stack.callback(shutil.rmtree, top, True)
        for rel in changed:
            src = co.path / rel
            if occupied(co.path, rel, parents_only=True) is not None:
                continue  # under a link: nothing of its own to keep
            if src.is_symlink() or src.is_file():
                (top / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, top / rel, follow_symlinks=False)
        return _Submitted(path=top, changed=changed)

    def _without_change(
        self,
        tests: list[Criterion],
        work: dict[str, Any],
        cfg: VerifierConfig,
        co: Checkout,
        sub: _Submitted,
        tree: Path | None,
        second: _SecondTree | None,
        reports: dict[str, Report],
        g: Gathered,
    ) -> None:
        """A passing test criterion whose named test the submission wrote (defined in a file it
        changes, unless the second run found it in the baseline's version) must fail before the
        change: the checks run again on the baseline's tree with the submission's test files,
        and each such criterion keeps how it did there. No run when there is no such criterion,
        or each is a guard whose guard counts."""
        guards = set(work.get("guards") or [])
        root = str(co.path)
        wrote: dict[str, set[str]] = {}
        for c in tests:
            r = g.results[c.id]
            if c.id in guards or r.result is not Evidence.PASS:
                continue  # a guard expects to pass before; what does not pass here holds nothing
            found = matched_tests(reports, c.verify_ref or "")
            files = newtests.defining_files(found, sub.changed, root)
            if not files and newtests.unplaced(found):
                files = {p for p in sub.changed if is_test_file(p)}
            if not files:
                continue  # its test is in files the submission left as they were
            if second is not None and r.restored is not None and files <= set(second.files):
                continue  # the baseline's version holds it: judged by it (the second run)
            wrote[c.id] = files
        if not wrote:
            return
        reported = [t for report in reports.values() for t in report.all_tests()]
        kept = newtests.paths_of_tests(sub.changed, reported, set().union(*wrote.values()), root)
        self.progress(
            f"without the change: {', '.join(wrote)} name tests the submission wrote; the checks again "
            f"on the baseline's code with its test files ({', '.join(kept)})"
        )
        with g.timed("without_change"):
            checks, there = self._on_baseline_code(cfg, co, sub, kept, tree)
        news = [c for c in tests if c.id in wrote]
        g3 = Gathered(checks=checks)
        self._test_criteria(news, cfg, there, g3)
        for c in news:
            again = g3.results[c.id]
            g.results[c.id] = g.results[c.id].model_copy(
                update={"without_change": WithoutChange(result=again.result, detail=again.detail, files=kept)}
            )

    def _on_baseline_code(
        self, cfg: VerifierConfig, co: Checkout, sub: _Submitted, kept: list[str], tree: Path | None
    ) -> tuple[dict[str, CheckResult], dict[str, Report]]:
        """Every check on the baseline's tree (the empty tree when there is none) with the
        submission's versions of `kept`; their results and reports."""
        with self._baseline_tree(tree) as where:
            for rel in kept:
                if occupied(where, rel, parents_only=True) is not None:
                    continue  # the baseline has a link or a file above it: never written through
                target = where / rel
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                elif target.is_symlink() or target.exists():
                    target.unlink()
                src = sub.path / rel
                if src.is_symlink() or src.exists():  # else the submission deletes it
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, target, follow_symlinks=False)
            there_co = dataclasses.replace(co, path=where)
            self._clear_reports(cfg, there_co)
            g3 = Gathered()
            with self.sandbox.lend(where) as there:
                started = self._checks(cfg, there, g3)
                # Read while the tree is still the check user's: a report must be its own.
                return g3.checks, self._reports(cfg, there_co, g3, started, set())

    @contextmanager
    def _baseline_tree(self, tree: Path | None) -> Iterator[Path]:
        """The baseline's tree (empty when there is none) in a run directory of its own, as the
        checkout's: the check user may pass through it (0711) and a worker that is not root may
        lend it and take it back. Removed afterwards."""
        top = Path(tempfile.mkdtemp(prefix="taskgate-verify-"))
        try:
            os.chmod(top, RUN_DIR_MODE)
            where = top / "checkout"
            where.mkdir()
            if tree is not None:
                with tarfile.open(tree) as archive:
                    untar.extract(archive, where)
            yield where
        finally:
            shutil.rmtree(top, ignore_errors=True)

    def _baseline_archive(self, co: Checkout, base: Baseline) -> Path | None:
        """The baseline's tree, archived while git is still the verifier's: a check that fails
        as if its environment were broken is run again on it. None: no baseline."""
        into = co.path.parent / "baseline.tar"
        if base.commit == co.head:
            # The submission is its own baseline (committed before the claim): running it again
            # would fail the same way whatever the cause, and tell nothing.
            return None
        try:
            return into if co.archive(base, into) else None
        except CheckoutError as exc:
            raise RunError(f"baseline: {exc}") from exc

    def _environment(
        self, cfg: VerifierConfig, g: Gathered, reports: dict[str, Report], tree: Path | None
    ) -> None:
        """A check that failed as if its environment were broken (its runner could not start,
        or it wrote no report) runs again on the baseline's tree; failing the same way there,
        it is the environment's failure, not the submission's: the run is an error."""
        if tree is None:
            return
        for name, check in cfg.checks.items():
            done = g.checks[name]
            if done.missing_tool is not None:
                continue  # already the verifier's error: a tool missing from its PATH
            missing = check.report is not None and name not in reports and done.report_problem is None
            how = environment_failure(check.command, done.exit_code, done.output_tail, missing)
            if how is None:
                continue
            self.progress(f"check {name}: {how}; run again on the baseline's tree")
            with g.timed("environment"):
                again = self._on_baseline(cfg, name, tree)
            if again == how:
                raise RunError(fails_on_baseline(name, how))
            self.progress(f"check {name} on the baseline: {again or 'not that failure'}")

    def _on_baseline(self, cfg: VerifierConfig, name: str, tree: Path) -> str | None:
        """How check `name` fails on the baseline's tree (environment_failure's words), or None."""
        check = cfg.checks[name]
        with self._baseline_tree(tree) as where, self.sandbox.lend(where) as there:
            done = self._run(check.command, there, check.timeout_minutes or cfg.check_timeout_minutes)
            wrote = check.report is not None and (where / check.report.path).is_file()
        if done.timed_out:
            return None
        missing = check.report is not None and not wrote
        return environment_failure(check.command, done.exit_code, _tail(done.output), missing)

    def _diff(self, cfg: VerifierConfig, co: Checkout, base: Baseline) -> str:
        spec = cfg.reviewer or ReviewerSpec()
        if base.tip is None:
            raise RunError(f"reviewer: cannot diff against {spec.base_branch}: {base.why}")
        try:
            return co.diff_from(base)
        except CheckoutError as exc:
            raise RunError(f"reviewer: cannot diff against {base.branch}: {exc}") from exc

    def _review(
        self, work: dict[str, Any], reviews: list[Criterion], cfg: VerifierConfig, co: RunDirs, diff: str
    ) -> dict[str, CriterionResult]:
        spec = cfg.reviewer or ReviewerSpec()
        text = reviewer.prompt(
            work.get("spec"), [c.model_dump(mode="json") for c in reviews], diff, spec.base_branch
        )
        self.progress(f"reviewer: {spec.command} on {len(reviews)} review criteria")
        done = self._run(spec.command, co, cfg.check_timeout_minutes, stdin=text.encode())
        if done.timed_out:
            raise RunError(f"the reviewer took longer than {_seconds(cfg.check_timeout_minutes)}")
        tool = self._missing(spec.command, done)
        if tool is not None and done.exit_code is not None:
            raise RunError(no_tool(tool, "the reviewer", spec.command, done.exit_code) + ADVICE)
        if done.exit_code != 0:
            said = (done.errors.strip() or done.output.strip())[-500:]
            raise RunError(f"the reviewer exited {done.exit_code}: {said}")
        try:
            answer = reviewer.parse_answer(done.output, [c.id for c in reviews])
        except reviewer.ReviewerError as exc:
            raise RunError(str(exc)) from exc
        for cid, r in answer.items():
            self.progress(f"{cid} {r.result.value} (reviewer): {_one_line(r.rationale or 'no rationale')}")
        return answer


def _split(full_name: str) -> tuple[str, str]:
    classname, _, name = full_name.rpartition(".")
    return classname, name


@dataclass(frozen=True)
class _Submitted:
    path: Path  # the changed files as the first run sees them (a deleted one is absent)
    changed: list[str]  # the paths the submission changes against its baseline


@dataclass(frozen=True)
class _SecondTree:
    path: Path
    files: list[str]  # the test files restored from the baseline
    diff: str  # their diff against it


def _claimed_base(work: dict[str, Any]) -> ClaimedBase | None:
    """The base branch's tip when the task was claimed, as the server recorded it; None when
    it could not read the repository (or sent something that is not a branch and a commit)."""
    got = work.get("claimed_base")
    if not isinstance(got, dict):
        return None
    branch, commit = got.get("branch"), got.get("commit")
    if not isinstance(branch, str) or not isinstance(commit, str) or not FULL_COMMIT.match(commit):
        return None
    return ClaimedBase(branch, commit)


def occupied(root: Path, rel: str, *, parents_only: bool = False) -> str | None:
    """What in `root` stands where `rel` would go: a link or a file above it (a copy would go
    through or fail), or (unless `parents_only`) anything at `rel` itself. None: the way is free."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        above = root.joinpath(*parts[:i])
        if above.is_symlink() or (above.exists() and not above.is_dir()):
            return "/".join(parts[:i])
    here = root / rel
    if not parents_only and (here.is_symlink() or here.exists()):
        return rel
    return None


def _one_line(text: str, limit: int = 200) -> str:
    """A detail on one progress line, cut after a whole word: a test's multi-line message would
    break the terminal's one-line-per-step reading (the evidence sent to the server keeps it)."""
    return clip_words(text, limit)
