"""One step of a landing queue (domain/landing.py), on the verifier's side: the head entries'
commits merged in order onto the base branch's tip in a checkout of the verifier's own, with
deterministic merge commits (the server's identity, message and date), each prefix tested in
a fresh checkout of its commit, the evidence sent, and the commit the server chose pushed to the
branch as a plain fast-forward (never forced: a moved tip refuses it).

The push is the verifier's own git access (locally its user's; in the cloud a token the
verifier task alone can read). A local repository is pushed to with its hooks off, as it is
read; one with the branch checked out takes the push only when its work tree is clean (git's
`receive.denyCurrentBranch=updateInstead`), else the step says why and lands nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskgate.domain.batches import decide_step, judged
from taskgate.domain.models import Criterion, CriterionKind
from taskgate.domain.repos import is_remote
from taskgate.domain.run_report import CheckResult, CriterionResult
from taskgate.domain.verifier_config import VerifierConfig
from taskgate.verifier.checking import clear_reports, criteria_evidence, read_reports, run_checks
from taskgate.verifier.checkout import Checkout, CheckoutError, CommitMissing, Git, checkout
from taskgate.verifier.state import RunError, Verifier
from taskgate.verifier.steps.commands import run_commands

# A local repository is pushed to with its hooks and its own receive settings out of the way: its
# config is the agent's. updateInstead moves a checked-out branch only over a clean work tree.
_LOCAL_RECEIVE_PACK = (
    "--receive-pack=git -c core.hooksPath=/dev/null -c 'safe.directory=*' -c core.fsmonitor=false "
    "-c receive.denyCurrentBranch=updateInstead -c receive.denyNonFastForwards=true receive-pack"
)
# The first-parent commits searched for the merge of an entry found on the branch already.
_ALREADY_DEPTH = "1000"

Send = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Prefix:
    task_id: str
    head: str | None = None
    tree: str | None = None
    already: bool = False
    reused: bool = False
    conflict_paths: list[str] = field(default_factory=list)
    checks: dict[str, CheckResult] = field(default_factory=dict)
    results: dict[str, CriterionResult] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "head": self.head,
            "tree": self.tree,
            "already": self.already,
            "reused": self.reused,
            "conflict_paths": self.conflict_paths,
            "checks": {n: c.model_dump(mode="json") for n, c in self.checks.items()},
            "results": {cid: r.model_dump(mode="json") for cid, r in self.results.items()},
        }


@dataclass
class Stepped:
    """What one landing step did, as the server answered it."""

    branch: str | None = None
    tip: str | None = None
    prefixes: list[Prefix] = field(default_factory=list)
    error: str | None = None
    step: dict[str, Any] = field(default_factory=dict)  # the server's record of the step, last answer
    pushed: bool | None = None
    push_why: str | None = None


@dataclass(frozen=True)
class LandingRunner(Verifier):
    def land(self, work: dict[str, Any], evidence: Send, pushed: Send) -> Stepped:
        """Build, test, send the evidence; push what the server chose and say how it went."""
        out = Stepped()
        with ExitStack() as stack:
            co: Checkout | None = None
            try:
                co = stack.enter_context(self._checked_out(work))
                self._build(co, work, out)
                self._test(co.path, work, out)
            except RunError as exc:
                out.error = str(exc)
            body = {
                "branch": out.branch,
                "tip": out.tip,
                "prefixes": [p.body() for p in out.prefixes] if out.error is None else [],
                "error": out.error,
            }
            out.step = evidence(body)
            head = out.step.get("push")
            if head and out.step.get("phase") == "pushing" and co is not None:
                out.pushed, out.push_why = self._push(co, work, head)
                out.step = pushed({"head": head, "pushed": out.pushed, "why": out.push_why})
        return out

    # -- the chain ---------------------------------------------------------------------------

    @contextmanager
    def _checked_out(self, work: dict[str, Any]) -> Iterator[Checkout]:
        tasks = work["tasks"]
        try:
            with checkout(work["repo"], tasks[0]["commit_sha"], env=self.env, token=self.git_token) as co:
                yield co
        except (CommitMissing, CheckoutError) as exc:
            raise RunError(f"checkout failed: {exc}") from exc

    def _build(self, co: Checkout, work: dict[str, Any], out: Stepped) -> None:
        """The chain on the branch's tip now: one merge commit per entry, until one conflicts."""
        try:
            base = co.baseline(work.get("branch"))
            if base.tip is None:
                raise RunError(f"no tip to land on: {base.why}")
            wanted = [base.tip, *(t["commit_sha"] for t in work["tasks"])]
            options = co._fetch_options()
            shallow = co.git("rev-parse", "--is-shallow-repository", cwd=co.path) == "true"
            depth = ("--unshallow",) if shallow else ()
            co.git("fetch", "--quiet", "--no-tags", *depth, *options, "origin", *wanted, cwd=co.path)
            co.git("checkout", "--quiet", "--detach", base.tip, cwd=co.path)
        except CheckoutError as exc:
            raise RunError(f"landing checkout failed: {exc}") from exc
        out.branch, out.tip = base.branch or work.get("branch"), base.tip
        identity = work["identity"]
        front = True
        for t in work["tasks"]:
            sha = t["commit_sha"]
            if co.git("merge-base", "--is-ancestor", sha, base.tip, cwd=co.path, ok=True) is not None:
                if not front:
                    return  # on the branch, behind entries that are not: it waits its turn
                out.prefixes.append(
                    Prefix(t["task_id"], head=self._merged_by(co, sha, base.tip), already=True)
                )
                continue
            front = False
            dated = Git(
                {
                    **co.git.env,
                    "GIT_AUTHOR_NAME": identity["name"],
                    "GIT_AUTHOR_EMAIL": identity["email"],
                    "GIT_COMMITTER_NAME": identity["name"],
                    "GIT_COMMITTER_EMAIL": identity["email"],
                    "GIT_AUTHOR_DATE": t["date"],
                    "GIT_COMMITTER_DATE": t["date"],
                },
                co.git.token,
            )
            merged = dated(
                "merge", "--quiet", "--no-ff", "--no-edit", "-m", t["message"].rstrip("\n"), sha,
                cwd=co.path, config=("commit.gpgSign=false", "merge.log=false"), ok=True,
            )  # fmt: skip
            if merged is None:
                listed = co.git("diff", "--name-only", "-z", "--diff-filter=U", cwd=co.path, check=False)
                paths = sorted({p for p in listed.split("\0") if p}) or ["(git named no path)"]
                co.git("merge", "--abort", cwd=co.path, check=False)
                out.prefixes.append(Prefix(t["task_id"], conflict_paths=paths))
                self.progress(f"{t['task_id']} does not merge onto the chain: {', '.join(paths[:5])}")
                return
            head = co.git("rev-parse", "HEAD", cwd=co.path)
            tree = co.git("rev-parse", "HEAD^{tree}", cwd=co.path)
            out.prefixes.append(Prefix(t["task_id"], head=head, tree=tree))

    def _merged_by(self, co: Checkout, sha: str, tip: str) -> str:
        """The first-parent commit of the branch that brought `sha` in (else the tip itself)."""
        listed = co.git(
            "rev-list", "--first-parent", "--parents", f"--max-count={_ALREADY_DEPTH}", tip, cwd=co.path
        )
        for line in listed.splitlines():
            commit, *parents = line.split()
            if sha in parents[1:] or commit == sha:
                return commit
        return tip

    # -- the runs ----------------------------------------------------------------------------

    def _test(self, chain: Path, work: dict[str, Any], out: Stepped) -> None:
        """Each built prefix in order, until one fails: entries behind a failure are built again
        without it next step, so their runs here would be thrown away."""
        cfg = VerifierConfig.model_validate(work["config"]) if work.get("config") else None
        if cfg is None or not cfg.checks:
            raise RunError("the project's verifier config has no check")
        by_id = {t["task_id"]: t for t in work["tasks"]}
        for p in out.prefixes:
            if p.already or p.conflict_paths:
                continue
            t = by_id[p.task_id]
            if t.get("reuse_tree") and t["reuse_tree"] == p.tree:
                p.reused = True
                self.progress(
                    f"{p.task_id}: tree {p.tree[:12] if p.tree else ''} is the one it was verified on; no run"
                )
                continue
            held = [Criterion.model_validate(c) for c in t["criteria"]]
            self._run_prefix(chain, cfg, t, held, p)
            if decide_step(p.checks, {p.task_id: p.results}, {p.task_id: judged(held)}):
                cut = out.prefixes.index(p) + 1
                out.prefixes = out.prefixes[:cut]
                return

    def _run_prefix(
        self, chain: Path, cfg: VerifierConfig, t: dict[str, Any], held: list[Criterion], p: Prefix
    ) -> None:
        if any(c.kind is CriterionKind.COMMAND for c in held) and not t.get("command_criteria_allowed"):
            raise RunError(f"{t['task_id']}'s command criteria were not approved by a human with its spec")
        assert p.head is not None
        try:
            with ExitStack() as stack:
                pco = stack.enter_context(checkout(str(chain), p.head, env=self.env))
                self.progress(f"{p.task_id}: checks on {p.head[:12]}")
                committed = clear_reports(self, cfg, pco.path)
                dirs = stack.enter_context(self.sandbox.hand_over(pco.path))
                started = run_checks(self, cfg, dirs, p.checks)
                reports = read_reports(self, cfg, pco.path, p.checks, started, committed)
                p.results = criteria_evidence(
                    self, [c for c in held if c.kind is CriterionKind.TEST], cfg, reports
                )
                commands = [c for c in held if c.kind is CriterionKind.COMMAND]
                if commands:
                    p.results.update(run_commands(self, commands, cfg, dirs))
        except (CommitMissing, CheckoutError) as exc:
            raise RunError(f"checkout of the chain failed: {exc}") from exc

    # -- the push ----------------------------------------------------------------------------

    def _push(self, co: Checkout, work: dict[str, Any], head: str) -> tuple[bool, str | None]:
        """A plain push of `head` to the branch: a fast-forward or nothing."""
        repo, branch = work["repo"], work["branch"]
        options: tuple[str, ...] = ()
        target = repo
        if not is_remote(repo):
            local = Path(repo).expanduser().resolve()
            # Updating a work tree runs what its repository's config names (filters, its
            # worktree setting): another user's, never as the verifier.
            if (local / ".git").exists() and local.stat().st_uid != os.geteuid():
                self.progress(f"push of {head[:12]} to {branch} not tried: {NOT_OWNER}")
                return False, NOT_OWNER
            target = str(local)
            options = (_LOCAL_RECEIVE_PACK,)
        refspec = f"{head}:refs/heads/{branch}"
        # --porcelain: one line per ref, flagged (" " fast-forward, "*" new, "=" up to date,
        # "!" rejected, with git's reason), whatever language git speaks otherwise.
        said = co.git("push", "--porcelain", *options, target, refspec, cwd=co.path, check=False)
        refs = [line for line in said.splitlines() if line.count("\t") >= 2]
        if refs and all(line.split("\t", 1)[0].strip() in ("", "*", "=") for line in refs):
            self.progress(f"pushed {head[:12]} to {branch}")
            return True, None
        rejected = next((line.split("\t")[-1] for line in refs if line.startswith("!")), said.strip())
        reason = _refusal(rejected)
        self.progress(f"push of {head[:12]} to {branch} refused: {reason}")
        return False, reason


# Why a push into a local repository with the branch checked out was refused: said to the server
# (the step's `why`), and the worker waits for the next poll instead of building again at once.
NOT_CLEAN = (
    "the repository has the branch checked out with changes in its work tree: waiting until it is clean"
)


NOT_OWNER = (
    "the repository's work tree belongs to another user than the verifier's: updating it would run "
    "that repository's git configuration as the verifier; land through a bare repository instead"
)


def _refusal(porcelain: str) -> str:
    """Why git refused the push, in words: a checked-out work tree not clean, or the tip moved."""
    text = porcelain.lower()
    if "unstaged" in text or "working directory" in text or "work tree" in text or "not clean" in text:
        return NOT_CLEAN
    if "non-fast-forward" in text or "fetch first" in text or "[rejected]" in text:
        return "the branch moved since the chain was built (not a fast-forward); built again on the new tip"
    return "the push was refused: " + (
        porcelain.strip().splitlines()[-1] if porcelain.strip() else "no reason given"
    )
