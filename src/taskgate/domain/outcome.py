"""The outcome rule: the server, not the verifier, decides a run (docs/architecture.md, "Verification and the outcome rule").

A run passes only if every check exited 0 and every criterion has positive evidence.
Skipped, missing or ambiguous evidence is not a pass. A broken check (timeout, no report,
checkout failure) is an error, which uses no attempt. A run whose only non-passing criteria are
ambiguous test refs is a spec error: no executor can fix it, so it goes to a human and uses no
attempt. A submitted commit the verifier's repository does not hold is the executor's failure
(it did not push), with a finding saying so.

Hidden tests (verifier config `hidden_tests`) run in a run of their own and are all or nothing:
one failing, skipped or in no report fails the run, and the executor's finding names it (with its
message only under `reveal: "messages"`). A config that names hidden tests and a run that reports
none is an error: the tests were not run.

The grading run (docs/architecture.md, "The grading run"): a check that exited 1 over the
tripwires alone passed; a failure of the checks on the submission's own tree (its unnamed test
files in place) fails the run with the finding; an existing test the submission changed that
fails with the baseline's version and passes with its own is a changed expectation, held for a
person (TESTS_EDITED); a tripwire not reported failed holds the run for a person (TRIPWIRE),
named after any other hold. Code
that reads or ends its grader (domain/screen.py) sends a run that would otherwise be decided to
a human, with the lines quoted, and uses no attempt.

Both rules that give a run to a person (a change to protected paths no human allowed, and the
screen's hits) end in the one verdict NEEDS_HUMAN; `Outcome.why_human` says which. When both
apply, the held paths win: a human allows them (or reopens), and the run verified again is
screened again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from taskgate.domain import loading
from taskgate.domain.baseline import BaselineEvidence, check_commands, protect_globs, protected
from taskgate.domain.models import (
    Criterion,
    CriterionKind,
    FailedCheck,
    FailedCriterion,
    FailedTest,
    SelfReport,
    Spec,
    Submission,
    WhyHuman,
)
from taskgate.domain.run_report import (
    CheckResult,
    CriterionResult,
    Evidence,
    GradingTree,
    HiddenRun,
    RunReport,
    Tripwires,
    check_failed,
)
from taskgate.domain.screen import Hit
from taskgate.domain.screen import reason as screen_reason
from taskgate.domain.text import tail_lines
from taskgate.domain.tooling import missing_tools
from taskgate.domain.verifier_config import VerifierConfig


class Verdict(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SPEC_ERROR = "spec_error"
    # A rule gives the submission to a person (it changes protected paths, or adds code that
    # reads its grader): no attempt is used; the Outcome's `why_human` says which rule.
    NEEDS_HUMAN = "needs_human"


# What a finding keeps of a failing check's output: its end, cut on a line boundary.
CHECK_OUTPUT_CHARS = 2000
# What a finding keeps of each failing test's message, and how many tests per criterion.
TEST_MESSAGE_CHARS = 1000
TESTS_PER_CRITERION = 3


@dataclass
class Outcome:
    verdict: Verdict
    summary: str
    findings: list[str] = field(default_factory=list)  # one line each, failing criteria first
    self_report_mismatch: list[str] = field(default_factory=list)
    # Each held criterion's evidence as the server counted it (a pass without a rationale, or
    # without provenance, is MISSING here); empty when the run is an error.
    evidence: dict[str, CriterionResult] = field(default_factory=dict)
    # The same failures with what the verifier saw: each test's message, each check's output.
    criteria: list[FailedCriterion] = field(default_factory=list)
    checks: list[FailedCheck] = field(default_factory=list)
    hidden_tests: list[FailedTest] = field(default_factory=list)
    # NEEDS_HUMAN: the protected paths the submission changes, and their diff.
    held: list[str] = field(default_factory=list)
    diff: str = ""
    # NEEDS_HUMAN: the test criteria that pass only with the submission's edits to their tests.
    edited: list[str] = field(default_factory=list)
    # NEEDS_HUMAN: the test criteria whose new named test passes on the baseline's code too.
    unchanged: list[str] = field(default_factory=list)
    # NEEDS_HUMAN: which rule gives it to a person (HELD, TESTS_EDITED, PASSES_WITHOUT_CHANGE win
    # over READS_GRADER).
    why_human: WhyHuman | None = None


def command_criteria_allowed(criteria: list[Criterion], spec: Spec | None) -> bool:
    """A command criterion's verify_ref runs only if it is one of its spec's own criteria and a
    human approved that spec (or an architect, for low risk: the only approval an architect can
    give). A command an agent attached to a task by itself was approved by nobody."""
    commands = [c for c in criteria if c.kind is CriterionKind.COMMAND]
    if not commands:
        return True
    if spec is None or spec.approved_by is None:
        return False
    approved = {(c.id, c.verify_ref) for c in spec.criteria if c.kind is CriterionKind.COMMAND}
    return all((c.id, c.verify_ref) in approved for c in commands)


def _report_paths(config: VerifierConfig | None) -> dict[str, str]:
    """Check name -> report path, for the configured checks that write a report."""
    if config is None:
        return {}
    return {name: c.report.path for name, c in config.checks.items() if c.report is not None}


def _provenance_problem(c: Criterion, r: CriterionResult, reports: Mapping[str, str]) -> str | None:
    """Why evidence for a test or command criterion cannot be trusted, or None.

    A test criterion's evidence counts only if it was read, for this criterion's verify_ref, from
    the report of a configured check; a command criterion's only if it ran this verify_ref."""
    src = r.source
    if c.kind is CriterionKind.TEST:
        if src is None or src.check is None or src.check not in reports:
            return "evidence not read from the report of a configured check"
        if src.report != reports[src.check] or src.ref != c.verify_ref:
            return f"evidence read for {src.ref!r} from {src.report!r}, not for this criterion's verify_ref"
    elif c.kind is CriterionKind.COMMAND and (src is None or src.ref != c.verify_ref):
        return "evidence not from running this criterion's command"
    return None


def decide(
    report: RunReport,
    *,
    criteria: list[Criterion],
    spec: Spec | None,
    submission: Submission | None,
    config: VerifierConfig | None = None,
    fetched: tuple[str, str] | None = None,
    allowed: Sequence[str] = (),
    allowed_criteria: Sequence[str] = (),
) -> Outcome:
    """Decide a run from the verifier's `report`. `config`: the project's verifier config. Its
    checks are the ones that must be reported (one missing is an error: the verifier broke,
    never a silent pass), and its reports the only places a test criterion's evidence may come
    from. `fetched`: (commit, repository) the run was asked to fetch, named when the report says
    the commit is not there. `allowed`: the protected paths a human allowed this submission to
    change; `allowed_criteria`: the criteria a human allowed to pass without the change.

    Both rules that give a run to a person apply whatever the checks said. When both do, the
    held paths win (why_human HELD, so a human can allow them); the summary names the screen's
    hits too, and a run verified again after the allowance is screened again."""
    baseline = report.baseline
    loaded = [h for h in report.loading if h.path not in set(allowed)]
    out = _decide(
        criteria=criteria,
        spec=spec,
        checks=report.checks,
        results=report.results,
        submission=submission,
        config=config,
        error=report.error,
        missing_commit=(fetched or ("the submitted commit", "the repository"))
        if report.commit_missing
        else None,
        hidden=report.hidden_tests,
        held=held_paths(config, baseline, allowed),
        diff=baseline.diff if baseline is not None else "",
        allowed_criteria=allowed_criteria,
        loaded=[loading.Hit(h.path, h.kind, h.why) for h in loaded],
        missing_guards=report.missing_guards,
        grading=report.grading,
    )
    return _tripwires(_screened(out, report), report.tripwires)


def _screened(out: Outcome, report: RunReport) -> Outcome:
    if not report.screened:
        return out
    hits = [Hit(h.path, h.line, h.rule, h.text) for h in report.screened]
    if out.verdict is Verdict.NEEDS_HUMAN:
        return replace(out, summary=f"{out.summary}; and {screen_reason(hits)}")
    if out.verdict is Verdict.FAILED:
        # The executor's failure goes back to it; the screen's hits are named in its findings.
        return replace(out, findings=[*out.findings, f"also held for a human: {screen_reason(hits)}"])
    if out.verdict is Verdict.SPEC_ERROR:
        return replace(
            out,
            verdict=Verdict.NEEDS_HUMAN,
            summary=f"{screen_reason(hits)}; and {out.summary}",
            why_human=WhyHuman.READS_GRADER,
        )
    # Whatever the checks did: code that ends its grader makes a check "fail" without a
    # report (an error of the run) as easily as it makes one pass.
    also = f" (the run itself: {out.summary})" if out.verdict is Verdict.ERROR else ""
    return Outcome(
        Verdict.NEEDS_HUMAN,
        screen_reason(hits) + also,
        evidence=out.evidence,
        why_human=WhyHuman.READS_GRADER,
    )


def _decide(
    *,
    criteria: list[Criterion],
    spec: Spec | None,
    checks: dict[str, CheckResult],
    results: dict[str, CriterionResult],
    submission: Submission | None,
    config: VerifierConfig | None,
    error: str | None,
    missing_commit: tuple[str, str] | None,
    hidden: HiddenRun | None,
    held: list[str],
    diff: str,
    allowed_criteria: Sequence[str] = (),
    loaded: Sequence[loading.Hit] = (),
    missing_guards: Sequence[str] = (),
    grading: GradingTree | None = None,
) -> Outcome:
    # A protected path is named once, as protected, even where the loading rules also see it.
    loaded = [h for h in loaded if h.path not in held]
    holding = _holding_reason(held, loaded)
    held = [*held, *dict.fromkeys(h.path for h in loaded if h.path not in held)]
    if error and held:
        # The run broke after the verifier saw a changed harness: that change may be why.
        return Outcome(
            Verdict.NEEDS_HUMAN,
            f"{holding}; the run also broke: {error}",
            held=held,
            diff=diff,
            why_human=WhyHuman.HELD,
        )
    if error:
        return Outcome(Verdict.ERROR, f"verifier error: {error}")
    if missing_commit is not None:
        sha, repo = missing_commit
        said = f"commit {sha} is not in {repo}: push it, then submit again"
        return Outcome(Verdict.FAILED, said, [said])
    if not criteria:
        return Outcome(Verdict.ERROR, "the task holds no acceptance criterion; nothing can be verified")
    expected = set(config.checks) if config else set()
    unreported = sorted(expected - set(checks))
    if unreported:
        return Outcome(Verdict.ERROR, f"configured checks not reported: {', '.join(unreported)}")
    unknown_checks = sorted(set(checks) - expected)
    if unknown_checks:
        return Outcome(
            Verdict.ERROR, f"checks not in the verifier config were reported: {', '.join(unknown_checks)}"
        )
    timed_out = sorted(name for name, c in checks.items() if c.timed_out)
    if timed_out:
        return Outcome(Verdict.ERROR, f"check timed out: {', '.join(timed_out)}")
    missing = missing_tools(checks, config)
    if missing:
        return Outcome(Verdict.ERROR, missing)
    if config is not None and config.hidden_tests is not None and hidden is None:
        # A verifier that skipped them (an older one, or one that lost them) decided nothing.
        return Outcome(Verdict.ERROR, "the verifier config names hidden tests and the run reports none ran")
    held_ids = {c.id for c in criteria}
    if not command_criteria_allowed(criteria, spec):
        return Outcome(
            Verdict.ERROR,
            "a command criterion was not approved by a human with its spec; it was not run",
        )
    reports = _report_paths(config)
    tests = [c.id for c in criteria if c.kind is CriterionKind.TEST]
    if tests and not reports:
        return Outcome(
            Verdict.ERROR,
            f"test criteria ({', '.join(tests)}) need a check with a report, and the verifier config has none",
        )
    unanswered = [c.id for c in criteria if c.kind is CriterionKind.REVIEW and c.id not in results]
    if unanswered:
        # The reviewer broke or never ran (no reviewer key): that is the verifier's failure, not
        # the executor's, so it uses no attempt.
        return Outcome(Verdict.ERROR, f"no reviewer answer for {', '.join(unanswered)}")
    report_problems = _report_problems(checks, reports)
    failing_checks = sorted(n for n, c in checks.items() if check_failed(c) or n in report_problems)
    failed: list[FailedCriterion] = []
    counted: dict[str, CriterionResult] = {}
    for c in criteria:
        r = results.get(c.id)
        evidence = r.result if r is not None else Evidence.MISSING
        detail = (r.detail or r.rationale or "") if r is not None else "no evidence recorded"
        # Only a pass needs provenance: anything else is not a pass whoever says so.
        problem = _provenance_problem(c, r, reports) if r is not None and evidence is Evidence.PASS else None
        if problem is not None:
            evidence, detail = Evidence.MISSING, problem
        if (
            c.kind is CriterionKind.REVIEW
            and evidence is Evidence.PASS
            and not (r and (r.rationale or "").strip())
        ):
            evidence, detail = Evidence.MISSING, "the reviewer passed it without a rationale"
        counted[c.id] = CriterionResult(
            result=evidence,
            detail=detail if r is None or evidence is not r.result else r.detail,
            rationale=r.rationale if r is not None else None,
            source=r.source if r is not None else None,
            failures=r.failures if r is not None and evidence is r.result else [],
            restored=r.restored if r is not None and c.kind is CriterionKind.TEST else None,
            without_change=r.without_change if r is not None and c.kind is CriterionKind.TEST else None,
            passes_without_change=evidence is Evidence.PASS and _passed_before(c, r),
            stubbed=r.stubbed if r is not None and c.kind is CriterionKind.TEST else None,
            passes_stubbed=evidence is Evidence.PASS and _passed_stubbed(c, r),
        )
        if evidence is not Evidence.PASS:
            failed.append(
                FailedCriterion(
                    id=c.id,
                    result=evidence.value,
                    detail=detail,
                    tests=[_short(t) for t in counted[c.id].failures[:TESTS_PER_CRITERION]],
                    # Only a test ref can match several tests; other kinds have no ref to fix. A
                    # guard whose test the baseline lacks is the spec's too.
                    spec_error=c.kind is CriterionKind.TEST
                    and (evidence is Evidence.AMBIGUOUS or c.id in missing_guards),
                )
            )
    failed_checks = [
        FailedCheck(
            name=n,
            exit_code=checks[n].exit_code,
            output_end=tail_lines(checks[n].output_tail, CHECK_OUTPUT_CHARS),
        )
        for n in failing_checks
    ]
    # Failing criteria first: the executor fixes those; a check's output says more about them.
    hidden_failed = [_short(t) for t in hidden.failed] if hidden is not None else []
    hidden_count = max(hidden.failed_count, len(hidden.failed)) if hidden is not None else 0
    if hidden is not None:
        # All or nothing: a hidden test skipped or not reported fails the run like a failing one.
        hidden_failed += [FailedTest(name=n, message="skipped") for n in hidden.skipped]
        hidden_failed += [FailedTest(name=n, message="not reported") for n in hidden.missing]
        hidden_count += len(hidden.skipped) + len(hidden.missing)
    own_tree = submitted_failures(grading)
    findings = (
        [_line(f) for f in failed]
        + [_hidden_line(t) for t in hidden_failed]
        + [report_problems.get(f.name) or f"check {f.name} exited {f.exit_code}" for f in failed_checks]
        + own_tree
    )
    unknown = sorted(set(results) - held_ids)
    if unknown:
        findings.append(f"evidence for criteria the task does not hold was ignored: {', '.join(unknown)}")
    edited = edited_tests(criteria, counted)
    changed = changed_tests(edited, counted, grading)
    excused = honoured_guards(criteria, spec) | set(allowed_criteria)
    unchanged = [c.id for c in criteria if counted[c.id].passes_without_change and c.id not in excused]
    stubbed = [c.id for c in criteria if counted[c.id].passes_stubbed and c.id not in excused]
    untested = [*unchanged, *(c for c in stubbed if c not in unchanged)]
    guard_errors = [c.id for c in criteria if c.id in missing_guards and c.id in held_ids]
    spec_errors = [f for f in failed if f.spec_error and f.id not in guard_errors]
    spec_said = _spec_reason(spec_errors, guard_errors, criteria)
    # What is the executor's to fix: a failing check, a hidden test, a criterion without evidence
    # (not a spec error, not a test the submission's edits make pass: a human judges those).
    # A changed expectation is a human's call, not the executor's failure: the checks and criteria
    # whose only failures are the changed tests do not send the run back.
    expected = _changed_names(grading)
    executor = [
        f
        for f in failed
        if not f.spec_error and f.id not in edited and not _only(counted[f.id].failures, expected)
    ]
    own_checks = [n for n in failing_checks if n in report_problems or not _explained(checks[n], expected)]
    failing = bool(own_checks or hidden_count or executor or own_tree)
    holds: list[tuple[WhyHuman, str]] = []
    if held:
        holds.append((WhyHuman.HELD, holding))
    if edited or changed:
        # A changed expectation: the behaviour change may be meant (a human's call), and
        # passing only with the submission's own edits to a test is no evidence either way.
        holds.append((WhyHuman.TESTS_EDITED, edited_reason(edited, counted, changed)))
    if untested:
        # A test that passes whatever the code does is no evidence that the change does anything.
        words = [unchanged_reason(unchanged, criteria)] if unchanged else []
        words += [stubbed_reason(stubbed, criteria)] if stubbed else []
        holds.append((WhyHuman.PASSES_WITHOUT_CHANGE, "; ".join(words)))
    hold_said = "; and ".join(why for _, why in holds)
    if guard_errors:
        # The human's own to fix first: what the run found besides goes with it.
        summary = spec_said
        if holds:
            summary += f"; and {hold_said}"
        if failing:
            summary += f"; the run also failed: {_failure_summary(own_checks, executor, hidden_count, checks, bool(own_tree))}"
        return Outcome(
            Verdict.SPEC_ERROR, summary, findings, [], counted, failed, failed_checks, hidden_failed
        )
    # A changed harness or what the verifier cannot read stays a human's call whatever the run
    # says (the submission changed what a run is built from); every other hold rides with a
    # failure, which goes back to the executor.
    if failing and not held:
        mismatch = []
        if submission is not None:
            mismatch = sorted(f.id for f in executor if submission.self_report.get(f.id) is SelfReport.PASS)
        if holds:
            findings.append(f"also held for a human: {hold_said}")
        if spec_errors:
            findings.append(spec_said)
        return Outcome(
            Verdict.FAILED,
            _failure_summary(own_checks, failed, hidden_count, checks, bool(own_tree)),
            findings,
            mismatch,
            counted,
            failed,
            failed_checks,
            hidden_failed,
        )
    if holds:
        why = holds[0][0]
        return Outcome(
            Verdict.NEEDS_HUMAN,
            hold_said + (f"; and {spec_said}" if spec_errors else ""),
            findings,
            [],
            counted,
            failed,
            failed_checks,
            hidden_failed if why is WhyHuman.HELD else [],
            held=held if why is WhyHuman.HELD else [],
            diff=diff
            if why is WhyHuman.HELD
            else edited_diff(edited, counted) or (grading.diff if grading is not None else ""),
            edited=edited,
            unchanged=untested,
            why_human=why,
        )
    if not failed:
        return Outcome(
            Verdict.PASSED,
            f"{_count(len(checks), 'check')} exited 0; {_count(len(criteria), 'criterion', 'criteria')} passed",
            evidence=counted,
        )
    # Nothing the executor did failed; the spec names tests ambiguously. No mismatch either:
    # the executor's "pass" may be right.
    return Outcome(Verdict.SPEC_ERROR, spec_said, findings, [], counted, failed, [])


def _changed_names(grading: GradingTree | None) -> set[str]:
    return {c.test for c in grading.changed} if grading is not None else set()


def _only(failures: Sequence[FailedTest], expected: set[str]) -> bool:
    """Failures that are all changed expectations (and at least one)."""
    return bool(failures) and bool(expected) and all(t.name in expected for t in failures)


def _explained(check: CheckResult, expected: set[str]) -> bool:
    """A failing check whose report names every failed test, each a changed expectation."""
    names = check.report_failed_names
    return bool(expected) and check.report_failed == len(names) and set(names) <= expected


def _failure_summary(
    failing_checks: Sequence[str],
    failed: Sequence[FailedCriterion],
    hidden_count: int,
    checks: Mapping[str, CheckResult],
    own_tree: bool = False,
) -> str:
    parts = []
    if failing_checks:
        parts.append(f"{_count(len(failing_checks), 'check')} failed: {', '.join(failing_checks)}")
    if failed:
        parts.append(
            f"{_count(len(failed), 'criterion', 'criteria')} without positive evidence: "
            + ", ".join(f.id for f in failed)
        )
    if hidden_count:
        parts.append(f"{_count(hidden_count, 'hidden test')} failed")
    if own_tree:
        parts.append("the checks fail on the submission's own tree (its own test files included)")
    return "; ".join(parts)


def _spec_reason(
    ambiguous: Sequence[FailedCriterion], guards: Sequence[str], criteria: list[Criterion]
) -> str:
    """The spec error's words: each ambiguous ref, each guard whose test the baseline lacks."""
    by_id = {c.id: c for c in criteria}
    parts = [f"{f.id} {f.detail or 'matches more than one test or group'}" for f in ambiguous]
    parts += [
        f"{cid} is a guard and no test file of the baseline defines its test `{by_id[cid].verify_ref}`: "
        "a guard keeps existing behaviour, so its test must exist before the change"
        for cid in guards
    ]
    return "spec error: " + "; ".join(parts)


def _holding_reason(held: Sequence[str], loaded: Sequence[loading.Hit]) -> str:
    """The reason for the paths held: protected paths changed, and what loading found."""
    parts = [held_reason(held)] if held else []
    if loaded:
        parts.append(loading.reason(loaded))
    return "; and ".join(parts)


_NOT_RUN = {"skipped": "was skipped", "not reported": "is in no report"}


def _hidden_line(t: FailedTest) -> str:
    if t.message in _NOT_RUN:
        return f"hidden test {t.name} {_NOT_RUN[t.message]}: every hidden test must pass"
    return f"hidden test {t.name} failed" + (f": {t.message}" if t.message else "")


def _report_problems(checks: Mapping[str, CheckResult], reports: Mapping[str, str]) -> dict[str, str]:
    """Check name -> why its report says the check failed though it may have exited 0: the
    report is not the check's own, or it holds failed testcases."""
    out: dict[str, str] = {}
    for name, c in checks.items():
        path = reports.get(name, "its report path")
        if c.report_problem == "committed":
            out[name] = f"the commit holds the report file {path}: the check writes it"
        elif c.report_problem == "stale":
            out[name] = (
                f"check {name}'s report {path} was last written before the check started: it is no evidence"
            )
        elif c.report_failed and c.exit_code == 0:
            names = ", ".join(c.report_failed_names)
            more = (
                f" and {c.report_failed - len(c.report_failed_names)} more"
                if c.report_failed > len(c.report_failed_names)
                else ""
            )
            out[name] = (
                f"check {name} exited 0 but its report holds {_count(c.report_failed, 'failed testcase')}: "
                f"{names}{more}"
            )
    return out


def held_paths(
    config: VerifierConfig | None, baseline: BaselineEvidence | None, allowed: Sequence[str] = ()
) -> list[str]:
    """The protected paths the submission changes that no human allowed, but for those the
    hidden tests replace. A list cut at MAX_CHANGED holds the run too (its name stands for the
    paths past the cut)."""
    if config is None or baseline is None:
        return []
    globs = protect_globs(
        config.protect, check_commands([c.command for c in config.checks.values()], baseline)
    )
    if not globs:
        return []
    changed = [p for p in baseline.changed if not config.replaced_before_checks(p)]
    found = protected(changed, globs, baseline.harness_unchanged)
    if baseline.changed_total > len(baseline.changed):
        found.append(f"(and {baseline.changed_total - len(baseline.changed)} more changed paths not listed)")
    return [p for p in found if p not in set(allowed)]


def held_reason(held: Sequence[str]) -> str:
    """The reason a run holds a submission for a person, naming the paths."""
    return "the submission changes protected paths: " + ", ".join(held)


def edited_tests(criteria: list[Criterion], counted: Mapping[str, CriterionResult]) -> list[str]:
    """The test criteria that passed with the submission's own test files and do not pass with
    the baseline's version of them."""
    out = []
    for c in criteria:
        r = counted.get(c.id)
        if (
            c.kind is CriterionKind.TEST
            and r is not None
            and r.restored is not None
            and r.restored.submitted is Evidence.PASS
            and r.result is not Evidence.PASS
        ):
            out.append(c.id)
    return out


def changed_tests(
    edited: Sequence[str], counted: Mapping[str, CriterionResult], grading: GradingTree | None
) -> list[str]:
    """The changed expectations no edited criterion already names: existing tests the
    submission changed that fail with the baseline's version and pass with its own."""
    if grading is None:
        return []
    named = {f.name for cid in edited for f in counted[cid].failures}
    return [c.test for c in grading.changed if c.test not in named]


def edited_reason(
    edited: Sequence[str], counted: Mapping[str, CriterionResult], changed: Sequence[str] = ()
) -> str:
    """The reason a run holds a submission whose existing tests pass only as it edited them:
    its named tests (by criterion), then any other test (by name)."""
    parts = []
    for cid in edited:
        r = counted[cid]
        assert r.restored is not None
        parts.append(
            f"{cid} passes with the submission's test files and not with the baseline's "
            f"({', '.join(r.restored.files)}): {r.result.value}"
        )
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        verbs = ("fails", "its file", "passes") if len(changed) == 1 else ("fail", "their files", "pass")
        parts.append(
            f"changed expectation: {shown} {verbs[0]} with the baseline's version of {verbs[1]} and "
            f"{verbs[2]} with the submission's (a human decides whether the behaviour change is meant)"
        )
    if not edited:
        return "; ".join(parts)
    return "the submission's edits to its named tests are what make them pass: " + "; ".join(parts)


def edited_diff(edited: Sequence[str], counted: Mapping[str, CriterionResult]) -> str:
    """The diff of the restored test files (every criterion of a run restores the same ones)."""
    for cid in edited:
        r = counted[cid]
        if r.restored is not None and r.restored.diff:
            return r.restored.diff
    return ""


def _passed_before(c: Criterion, r: CriterionResult | None) -> bool:
    """Whether the criterion's new named test passed on the baseline's code too."""
    return (
        c.kind is CriterionKind.TEST
        and r is not None
        and r.without_change is not None
        and r.without_change.result is Evidence.PASS
    )


def _passed_stubbed(c: Criterion, r: CriterionResult | None) -> bool:
    """Whether the criterion's named test passed with every changed function stubbed out."""
    return (
        c.kind is CriterionKind.TEST
        and r is not None
        and r.stubbed is not None
        and r.stubbed.result is Evidence.PASS
    )


def stubbed_reason(stubbed: Sequence[str], criteria: list[Criterion]) -> str:
    """The reason a run holds a submission whose named tests pass with the change stubbed out."""
    by_id = {c.id: c for c in criteria}
    parts = []
    for cid in stubbed:
        note = " (its guard counts only on a criterion of an approved spec)" if by_id[cid].guard else ""
        parts.append(
            f"{cid}'s test passes with every changed function stubbed out: it does not test the change{note}"
        )
    return "; ".join(parts)


def honoured_guards(criteria: list[Criterion], spec: Spec | None) -> set[str]:
    """The guard criteria whose guard counts: those of their approved spec, marked guard there
    (approved by a human, or an architect for low risk, as a command criterion is). A guard an
    agent put on a task's own criteria, or on a spec nobody approved, is no guard: otherwise an
    executor could declare its own trivially passing test a guard."""
    if spec is None or spec.approved_by is None:
        return set()
    approved = {(c.id, c.verify_ref) for c in spec.criteria if c.guard and c.kind is CriterionKind.TEST}
    return {c.id for c in criteria if c.guard and (c.id, c.verify_ref) in approved}


def unchanged_reason(unchanged: Sequence[str], criteria: list[Criterion]) -> str:
    """The reason a run holds a submission whose new named tests pass on the baseline's code too."""
    by_id = {c.id: c for c in criteria}
    parts = []
    for cid in unchanged:
        c = by_id[cid]
        note = " (its guard counts only on a criterion of an approved spec)" if c.guard else ""
        parts.append(
            f"{cid} passes without the change: its new test `{c.verify_ref}` passes on the baseline's code too{note}"
        )
    return "; ".join(parts)


def _line(f: FailedCriterion) -> str:
    if f.spec_error:
        return f"{f.id} spec error (the spec's to fix, not the code's): {f.detail}".rstrip(": ")
    return f"{f.id} {f.result}: {f.detail}".rstrip(": ")


def _short(t: FailedTest) -> FailedTest:
    message = t.message.strip()
    if len(message) > TEST_MESSAGE_CHARS:
        message = message[: TEST_MESSAGE_CHARS - 1].rstrip() + "…"
    return FailedTest(name=t.name, message=message)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def submitted_failures(grading: GradingTree | None) -> list[str]:
    """Findings from the checks run on the submission's whole tree (its own test files in
    place): a failure there is the executor's to fix, never evidence."""
    if grading is None or grading.submitted is None:
        return []
    out = []
    for name, c in sorted(grading.submitted.items()):
        if not check_failed(c) and not (c.exit_code == 0 and c.report_failed):
            continue
        failing = ", ".join(c.report_failed_names)
        more = (
            f" and {c.report_failed - len(c.report_failed_names)} more"
            if c.report_failed > len(c.report_failed_names)
            else ""
        )
        said = f"; failing: {failing}{more}" if failing else ""
        out.append(
            f"check {name} fails on the submission's own tree, with its own test files "
            f"(exit {c.exit_code}){said}"
        )
    return out


def tripwire_reason(tripwires: Tripwires) -> str:
    """The reason a run whose tripwires were not all reported failed goes to a human: each
    tripwire named, with what its report said."""
    parts = []
    for t in tripwires.bent():
        said = "no report holds it" if t.reported == "missing" else f"it was reported {t.reported}"
        if t.kind == "twin":
            parts.append(
                f"the twin `{t.name}` of {t.criterion}'s test `{t.of}` (its {_count(t.perturbed, 'expected value')} "
                f"perturbed, so it must fail): {said}"
            )
        else:
            parts.append(f"the canary `{t.name}` (it fails outright): {said}")
    return "the grader was bent: " + "; ".join(parts)


_ALSO = "also held for a human: "


def _tripwires(out: Outcome, tripwires: Tripwires | None) -> Outcome:
    """A tripwire not reported failed means something bent the grader, whatever the mechanism:
    a run that would pass goes to a human (what else it found named after); a failing run goes
    back to the executor with the tripwire in its findings."""
    if tripwires is None or not tripwires.bent():
        return out
    if out.verdict is Verdict.FAILED:
        # A failing run goes back to the executor, the bent tripwire named in its findings for
        # whoever reads them (as every hold that also applies to a failure is).
        held = [f for f in out.findings if f.startswith(_ALSO)]
        rest = [f for f in out.findings if not f.startswith(_ALSO)]
        return replace(out, findings=[*rest, _ALSO + tripwire_reason(tripwires), *held])
    if out.verdict is Verdict.NEEDS_HUMAN:
        # Another rule holds it already (a changed harness, the screen's line): its reason,
        # and what it can be allowed as, stay first; the tripwire is named after.
        return replace(out, summary=f"{out.summary}; and {tripwire_reason(tripwires)}")
    also = f"; and {out.summary}" if out.verdict is not Verdict.PASSED else ""
    return replace(
        out,
        verdict=Verdict.NEEDS_HUMAN,
        summary=tripwire_reason(tripwires) + also,
        why_human=WhyHuman.TRIPWIRE,
        self_report_mismatch=[],
    )
