"""Evidence as a real verifier sends it: each test criterion's result read from the report of a
configured check, for that criterion's verify_ref; each command criterion's from running its
verify_ref. The server trusts nothing else (domain/outcome.py)."""

from __future__ import annotations

from typing import Any

from taskgate.domain.baseline import BaselineEvidence
from taskgate.domain.merging import MergeConflict, MergedBase
from taskgate.domain.principals import Acting
from taskgate.domain.run_report import (
    CheckResult,
    CriterionResult,
    Evidence,
    EvidenceSource,
    RunReport,
    ScreenHit,
)
from taskgate.domain.verifier_config import VerifierConfig
from taskgate.service import verification
from taskgate.service.context import Context

CHECK = "unit"
REPORT_PATH = "reports/junit.xml"
CONFIG: dict[str, Any] = {
    "checks": {
        CHECK: {
            "command": f"pytest --junitxml={REPORT_PATH}",
            "report": {"path": REPORT_PATH, "format": "junit"},
        }
    }
}
OK = CheckResult(exit_code=0, duration_ms=10)
FAILING = CheckResult(exit_code=1, duration_ms=10)
# The base tips a run merges onto, as a verifier reports them
TIP0, TIP1 = "a0" * 20, "a1" * 20
BASE0 = MergedBase(mode="merge", branch="main", tip=TIP0, tree="b0" * 20)
BASE1 = MergedBase(mode="merge", branch="main", tip=TIP1, tree="b1" * 20)


def local_results(criteria: list[dict[str, Any]], evidence: Evidence, *, detail: str = "") -> dict[str, Any]:
    """Results for the test and command criteria of a work item (what a local verifier reports)."""
    out: dict[str, CriterionResult] = {}
    for c in criteria:
        if c["kind"] == "test":
            source = EvidenceSource(check=CHECK, report=REPORT_PATH, ref=c["verify_ref"])
        elif c["kind"] == "command":
            source = EvidenceSource(ref=c["verify_ref"])
        else:
            continue
        out[c["id"]] = CriterionResult(
            result=evidence, detail=detail or f"{evidence.value} in the report", source=source
        )
    return out


def review_results(
    criteria: list[dict[str, Any]], evidence: Evidence, *, rationale: str = "the diff does it"
) -> dict[str, Any]:
    return {
        c["id"]: CriterionResult(result=evidence, rationale=rationale)
        for c in criteria
        if c["kind"] == "review"
    }


def run_verifier(
    ctx: Context,
    local: Acting,
    task_id: str,
    evidence: Evidence | None,
    *,
    reviewer: Acting | None = None,
    error: str | None = None,
    checks: dict[str, CheckResult] | None = None,
    screened: list[ScreenHit] | None = None,
    baseline: BaselineEvidence | None = None,
    base: MergedBase | None = None,
    conflict: MergeConflict | None = None,
) -> tuple[Any, Any]:
    """One whole run the way `taskgate verify` makes it: start, the reviewer's answer (if a reviewer
    is given and the task has review criteria), finish. `evidence` None sends no results."""
    started = verification.start(ctx, local, task_id=task_id)
    criteria = started.work["criteria"]
    if reviewer is not None and evidence is not None and any(c["kind"] == "review" for c in criteria):
        verification.record_review(ctx, reviewer, task_id, started.run.id, review_results(criteria, evidence))
    cfg = VerifierConfig.model_validate(started.work["config"]) if started.work["config"] else None
    if conflict is not None:
        return verification.finish(
            ctx, local, task_id, started.run.id, RunReport(checks={}, results={}, conflict=conflict)
        )
    return verification.finish(
        ctx,
        local,
        task_id,
        started.run.id,
        RunReport(
            checks=checks
            if checks is not None
            else {name: OK for name in (cfg.checks if cfg else {CHECK: None})},
            results={} if evidence is None else local_results(criteria, evidence),
            error=error,
            screened=screened or [],
            baseline=baseline,
            base=base,
        ),
    )


def land_step(
    ctx: Context, local: Acting, project: str, *, failing: str | None = None, tip: str = TIP0
) -> dict[str, Any]:
    """One landing step as a verifier makes it: every entry of the server's window tested on top
    of the ones ahead (its checks passing, its criteria's evidence positive), until `failing`,
    whose check fails; then the push of what the server chose, answered as landed. Returns the
    server's record of the step."""
    from taskgate.service import landing

    work = landing.start_step(ctx, local, project)
    prefixes = []
    for i, t in enumerate(work["tasks"]):
        bad = t["task_id"] == failing
        prefixes.append(
            landing.Prefix(
                task_id=t["task_id"],
                head=f"{i + 1:02x}" * 20,
                tree=f"{i + 1:02x}" * 19 + "ee",
                checks={CHECK: FAILING if bad else OK},
                results=local_results(t["criteria"], Evidence.FAIL if bad else Evidence.PASS),
            )
        )
        if bad:
            break
    step = landing.record_evidence(
        ctx,
        local,
        project,
        work["run_id"],
        landing.Evidence(branch="main", tip=tip, prefixes=tuple(prefixes)),
    )
    if step.phase == "pushing" and step.push is not None:
        step = landing.record_push(ctx, local, project, work["run_id"], head=step.push, pushed=True, why=None)
    return step.model_dump(mode="json")
