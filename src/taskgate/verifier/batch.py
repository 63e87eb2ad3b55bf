"""One run of a batch verified together: the tasks' commits merged, in the order the server
gives, onto one tip of the base branch in a clean checkout of the verifier's own (the
repository's branches are only read), the checks run once, and each task's criteria mapped to
their reports. The server decides the run and what comes next (bisection, acceptance).

The per-task rules a submission met alone (its baseline, protected paths, hidden tests, the
screen, the reviewer) are not run again here: merging changes what runs, not what each task
changed, and those rules judged that.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from taskgate.domain.models import Criterion, CriterionKind
from taskgate.domain.run_report import CheckResult, CriterionResult
from taskgate.domain.verifier_config import VerifierConfig
from taskgate.verifier.checking import clear_reports, criteria_evidence, read_reports, run_checks
from taskgate.verifier.checkout import Checkout, CheckoutError, CommitMissing, checkout
from taskgate.verifier.state import RunError, Verifier
from taskgate.verifier.steps.commands import run_commands

# The verifier's merge commits are made in a checkout that is thrown away; they need an identity,
# and should never be mistaken for anyone's work.
_IDENTITY = ("user.name=taskgate verifier", "user.email=verifier@taskgate.invalid")


@dataclass
class BatchGathered:
    """What one batch run found: sent to the server, which decides."""

    branch: str | None = None
    tip: str | None = None
    tree: str | None = None
    checks: dict[str, CheckResult] = field(default_factory=dict)
    results: dict[str, dict[str, CriterionResult]] = field(default_factory=dict)
    conflict_task: str | None = None
    conflict_paths: list[str] = field(default_factory=list)
    error: str | None = None

    def body(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "tip": self.tip,
            "tree": self.tree,
            "checks": {n: c.model_dump(mode="json") for n, c in self.checks.items()},
            "results": {
                t: {cid: r.model_dump(mode="json") for cid, r in rs.items()} for t, rs in self.results.items()
            },
            "conflict_task": self.conflict_task,
            "conflict_paths": self.conflict_paths,
            "error": self.error,
        }


@dataclass(frozen=True)
class BatchRunner(Verifier):
    def run_batch(self, work: dict[str, Any]) -> BatchGathered:
        out = BatchGathered()
        try:
            with ExitStack() as stack:
                self._together(work, out, stack)
        except RunError as exc:
            out.error = str(exc)
        return out

    def _together(self, work: dict[str, Any], out: BatchGathered, stack: ExitStack) -> None:
        cfg = VerifierConfig.model_validate(work["config"]) if work.get("config") else None
        if cfg is None or not cfg.checks:
            raise RunError("the project's verifier config has no check")
        tasks: list[dict[str, Any]] = work["tasks"]
        for t in tasks:
            kinds = {Criterion.model_validate(c).kind for c in t["criteria"]}
            if CriterionKind.COMMAND in kinds and not t.get("command_criteria_allowed"):
                raise RunError(
                    f"{t['task_id']}'s command criteria were not approved by a human with its spec"
                )
        with self._checked_out(work, tasks) as co:
            out.branch, tip = self._onto_tip(co, work)
            out.tip = tip
            for t in tasks:
                paths = self._merge_one(co, t["commit_sha"])
                if paths is not None:
                    out.conflict_task, out.conflict_paths = t["task_id"], paths
                    self.progress(
                        f"merge: {t['task_id']} conflicts onto {tip[:12]} in {', '.join(paths[:5])}"
                    )
                    return
            out.tree = co.git("rev-parse", "HEAD^{tree}", cwd=co.path)
            self.progress(
                f"merged {', '.join(t['task_id'] for t in tasks)} onto {tip[:12]}, tree {out.tree[:12]}"
            )
            committed = clear_reports(self, cfg, co.path)
            dirs = stack.enter_context(self.sandbox.hand_over(co.path))
            started = run_checks(self, cfg, dirs, out.checks)
            reports = read_reports(self, cfg, co.path, out.checks, started, committed)
            for t in tasks:
                held = [Criterion.model_validate(c) for c in t["criteria"]]
                mine = criteria_evidence(
                    self, [c for c in held if c.kind is CriterionKind.TEST], cfg, reports
                )
                commands = [c for c in held if c.kind is CriterionKind.COMMAND]
                if commands:
                    mine.update(run_commands(self, commands, cfg, dirs))
                out.results[t["task_id"]] = mine

    @contextmanager
    def _checked_out(self, work: dict[str, Any], tasks: list[dict[str, Any]]) -> Iterator[Checkout]:
        try:
            with checkout(work["repo"], tasks[0]["commit_sha"], env=self.env, token=self.git_token) as co:
                yield co
        except CommitMissing as exc:
            raise RunError(f"checkout failed: {exc}") from exc
        except CheckoutError as exc:
            raise RunError(f"checkout failed: {exc}") from exc

    def _onto_tip(self, co: Checkout, work: dict[str, Any]) -> tuple[str | None, str]:
        """Check out the tip every step of the batch merges onto (the server's, after the first
        step; else the base branch's tip now), with every task's commit fetched beside it."""
        try:
            base = co.baseline(work.get("branch"))
            tip = work.get("tip") or base.tip
            if tip is None:
                raise RunError(f"no base to merge the batch onto: {base.why}")
            wanted = [tip, *(t["commit_sha"] for t in work["tasks"])]
            options = co._fetch_options()
            shallow = co.git("rev-parse", "--is-shallow-repository", cwd=co.path) == "true"
            depth = ("--unshallow",) if shallow else ()
            co.git("fetch", "--quiet", "--no-tags", *depth, *options, "origin", *wanted, cwd=co.path)
            co.git("checkout", "--quiet", "--detach", tip, cwd=co.path)
            return base.branch, co.git("rev-parse", "HEAD", cwd=co.path)
        except CheckoutError as exc:
            raise RunError(f"batch checkout failed: {exc}") from exc

    def _merge_one(self, co: Checkout, sha: str) -> list[str] | None:
        """Merge one task's commit onto what is checked out; the conflicting paths, or None."""
        done = co.git("merge", "--quiet", "--no-edit", "--no-ff", sha, cwd=co.path, config=_IDENTITY, ok=True)
        if done is not None:
            return None
        listed = co.git("diff", "--name-only", "-z", "--diff-filter=U", cwd=co.path, check=False)
        paths = sorted({p for p in listed.split("\0") if p})
        if not paths:
            raise RunError(f"git could not merge {sha[:12]} and named no conflicting path")
        return paths
