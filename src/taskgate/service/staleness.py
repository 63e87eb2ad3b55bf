"""Verdicts that go stale when the base branch moves: the tip as last reported (a verifier's
poll, a git host's push webhook, the nightly run, or the server's own read of a local repository
when a verdict is shown or accepted), the verified tasks whose verdict was reached on another
tip, and what a re-verification on the new tip does to them."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from taskgate.domain import outcome as rules
from taskgate.domain.clock import iso
from taskgate.domain.errors import invalid
from taskgate.domain.lifecycle import Action
from taskgate.domain.merging import BaseTip, MergedBase, held_for, held_on_a_tip, stale_on
from taskgate.domain.models import Project, Status, Task
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.service import commits, records
from taskgate.service.context import SYSTEM, Context, event, put_event
from taskgate.store.port import Item, Put

# Accepted tasks named in a "breaks on the new base" finding; the rest are counted.
GAINED_SHOWN = 10
_BRANCH_REF = "refs/heads/"


def stale(project: Project, task: Task) -> bool:
    """A verified task whose verdict holds for another tip than the base branch's known one."""
    return task.status is Status.VERIFIED and stale_on(task.verified_base, project.base_tip)


def stale_tasks(ctx: Context, project: Project) -> list[Task]:
    """The project's stale verified tasks, oldest verdict first (re-verified in that order)."""
    if project.base_tip is None:
        return []
    found = [t for t in ctx.tasks_in_status(project.name, Status.VERIFIED) if stale(project, t)]
    return sorted(found, key=lambda t: t.status_changed_at)


@dataclass(frozen=True)
class Moved:
    project: str
    branch: str
    tip: str
    changed: bool  # the tip was new to the server
    ignored: str | None  # why the report changed nothing (another branch), when it did not
    stale: list[str]  # the verified tasks now stale, oldest first


def branch_of_ref(ref: str) -> str:
    """`refs/heads/main` (a git host's push event) or `main` -> `main`."""
    branch = ref.removeprefix(_BRANCH_REF)
    if not branch or branch.startswith("refs/") or any(c.isspace() for c in branch):
        raise invalid(f"ref {ref!r} names no branch (refs/heads/<branch> or <branch>)")
    return branch


def base_moved(ctx: Context, who: Acting, project_name: str, *, ref: str, tip: str) -> Moved:
    """Record the base branch's tip as a verifier or a git host's push reported it. A push to
    another branch, or one that deleted the branch, is answered and changes nothing. The verified
    tasks on an older tip are stale from here: the verifier's work queue offers them for
    re-verification, oldest first. A move also rewrites the project's BASE-MOVED item in the same
    commit: in the cloud its stream record is what wakes the dispatcher (cloud/dispatcher.py)."""
    authorize(Op.VERIFY, who, project=project_name)
    branch = branch_of_ref(ref)
    tip = tip.strip().lower()
    try:
        BaseTip(branch=branch, tip=tip, at="", by="")
    except ValueError:
        raise invalid(f"tip {tip!r} is not a full commit id (40 or 64 hex digits)") from None
    return _record(ctx, who, project_name, branch, tip)[0]


def _record(
    ctx: Context, who: Acting | str, project_name: str, branch: str, tip: str
) -> tuple[Moved, Project]:
    """The one place a reported tip is recorded, whoever read it (a verifier, a git host, the
    server itself from a local repository): the answer, and the project as it is after it."""

    def attempt() -> tuple[Moved, Project]:
        project = ctx.project(project_name)
        cfg = project.verifier_config
        wanted = cfg.base_branch_choice() if cfg is not None else None
        known = project.base_tip
        if wanted is None and known is not None:
            wanted = known.branch  # the branch the verifier found (main, or the repository's HEAD)
        if wanted is not None and branch != wanted:
            return Moved(
                project_name, branch, tip, False, f"{branch} is not the base branch ({wanted})", []
            ), project
        if not tip.strip("0"):  # a git host's push that deleted the branch: no tip to verify on
            return Moved(project_name, branch, tip, False, f"the push deleted {branch}", []), project
        changed = known is None or (known.branch, known.tip) != (branch, tip)
        if changed:
            now = ctx.clock.now()
            by = who.actor if isinstance(who, Acting) else who
            new = project.model_copy(update={"base_tip": BaseTip(branch=branch, tip=tip, at=iso(now), by=by)})
            ev = event(who, "base_moved", project=project_name, at=now, branch=branch, tip=tip,
                       previous=known.tip if known is not None else None)  # fmt: skip
            ctx.commit(
                [
                    Put(records.project_item(new), project.version),
                    put_event(ev),
                    _signal(ctx, project_name, new.base_tip),
                ]
            )
            project = new.model_copy(update={"version": project.version + 1})
        stale = [t.id for t in stale_tasks(ctx, project)]
        return Moved(project_name, branch, tip, changed, None, stale), project

    # Two reports of one push racing: the one that loses reads the tip the other recorded.
    return ctx.retrying(attempt)


# In local mode the server reads the base branch's tip itself when a verdict on a tip is shown
# (the board polls every 3 s per open tab; `task show`) or accepted. A git call is a few
# milliseconds, a stamp of the ref files (commits.tip_stamp) a few microseconds: while the stamp
# is the same the tip is not read again, for up to TIP_READ_MAX_S (what a stamp cannot see: a
# symbolic ref's target moving); without a stamp, at most once per TIP_READ_S. An accept reads it
# afresh (every=0).
TIP_READ_S = 2.0
TIP_READ_MAX_S = 30.0


class TipReads:
    """When this process last read each project's local tip, and the stamp of its ref files then
    (a board poll in one thread and `task show` in another share it): seen_base's rate limit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], tuple[float, commits.Stamp | None]] = {}

    def due(self, project: str, repo: str, now: float, every: float, stamp: commits.Stamp | None) -> bool:
        """Whether to read now: always when `every` is 0 (an accept) or the stamp changed; with
        the same stamp, once TIP_READ_MAX_S has passed; without one, once `every` has. A caller
        told yes holds the slot: the others racing it show the tip as known."""
        key = (project, repo)
        with self._lock:
            last = self._last.get(key)
            if last is not None and every > 0:
                at, seen = last
                same = stamp is not None and stamp == seen
                window = every if stamp is None else (TIP_READ_MAX_S if same else 0.0)
                if 0 <= now - at < window:
                    return False
            self._last[key] = (now, stamp)
            return True


TIP_READS = TipReads()


def seen_base(
    ctx: Context,
    project: Project,
    shown: Sequence[Task],
    *,
    every: float = TIP_READ_S,
    reads: TipReads = TIP_READS,
) -> Project:
    """The project with its base tip as the server knows it now, for showing or accepting
    `shown`. Where the project's repository is a local path (`taskgate serve` beside the agents'
    repository) and one of `shown` holds a verdict on a tip, the server reads the branch's tip
    itself (when TipReads says it is due): a move it finds is recorded as a verifier's report
    would be (_record), so a stale verdict is marked, and its accept warns, with no verifier
    running. Anything else (a remote, git not answering) leaves the tip as last reported."""
    verdicts = [t.verified_base for t in shown if t.verified_base is not None and held_on_a_tip(t)]
    if not verdicts or not commits.is_local(project.repo):
        return project
    cfg = project.verifier_config
    known = project.base_tip
    choice = cfg.base_branch_choice() if cfg is not None else None
    # The branch the verifier found, else the one the verdict was reached on.
    branch = choice or (known.branch if known is not None else None) or verdicts[0].branch
    # Stamped before the read: a move between the two shows as a new stamp next time.
    stamp = commits.tip_stamp(project.repo, branch)
    if not reads.due(project.name, project.repo, ctx.timing.monotonic(), every, stamp):
        return project
    found = commits.base_tip(project.repo, branch)
    if found is None or (known is not None and (known.branch, known.tip) == (found.branch, found.commit)):
        return project
    return _record(ctx, SYSTEM, project.name, found.branch, found.commit)[1]


def _signal(ctx: Context, project: str, base: BaseTip | None) -> Put:
    """The project's BASE-MOVED item, rewritten: the one record of a move the dispatcher's stream
    filter passes (a project item changes for many reasons, and its body is opaque to a filter)."""
    pk, sk = records.base_moved_key(project)
    before = ctx.store.get(pk, sk)
    version = before.version if before is not None else None
    data = {"project": project, **(base.model_dump(mode="json") if base is not None else {})}
    return Put(Item(pk, sk, data, (version or 0) + 1), version)


def tip_to_read(ctx: Context, project: Project) -> bool:
    """Whether a verifier should read the project's base tip even with nothing known to be stale:
    verification on, merging on, and some verified task whose verdict holds for a base tip (a
    moved base would make it stale). The nightly run starts a verifier for each such project,
    which reads the tip (verifier/tips.py) and re-verifies what the move made stale."""
    cfg = project.verifier_config
    if not project.verification_on or not project.repo or (cfg is not None and cfg.merge == "none"):
        return False
    return any(t.verified_base is not None for t in ctx.tasks_in_status(project.name, Status.VERIFIED))


def reverify_action(verdict: rules.Outcome) -> Action:
    """Where a re-verification on a new tip takes a verified task. Failing its own criteria is
    its executor's failure (an attempt); failing only a check (what the base gained broke
    something else with it) is not; an error leaves the verdict as it was, still stale."""
    if verdict.verdict is rules.Verdict.PASSED:
        return Action.STALE_PASS
    if verdict.verdict is rules.Verdict.FAILED:
        return Action.STALE_FAIL if verdict.criteria else Action.STALE_BREAK
    return Action.STALE_ERROR


def breaks_on_new_base(ctx: Context, task: Task, base: MergedBase | None, summary: str) -> str:
    """A re-verification's failure, said as one: it breaks on the new base, and which accepted
    tasks' commits the base gained since the task was verified (those the server knows)."""
    since = _verdict_read_at(ctx, task)
    gained = sorted(
        (t for t in ctx.tasks_in_status(task.project, Status.DONE) if t.status_changed_at >= since),
        key=lambda t: t.status_changed_at,
    )
    named = []
    for t in gained[:GAINED_SHOWN]:
        sub = t.last_submission()
        sha = (sub.resolved_commit or sub.commit_sha)[:12] if sub is not None else "?"
        named.append(f"{t.id} ({sha})")
    more = len(gained) - len(named)
    was = held_for(task.verified_base)
    text = f"breaks on the new base ({held_for(base)}; it was verified on {was})"
    if named:
        text += "; accepted since: " + ", ".join(named) + (f" and {more} more" if more > 0 else "")
    return f"{text}: {summary}"


def _verdict_read_at(ctx: Context, task: Task) -> datetime:
    """When the base the verdict holds for was read: the start of the newest run that reached it
    (a passing re-verification moves the verdict's base, not the task's status time)."""
    held = [
        run.started_at
        for run in ctx.runs(task.id)
        if run.status == "passed" and run.batch is None and run.base == task.verified_base
    ]
    return max(held, default=task.status_changed_at)


def accept_warning(project: Project, task: Task) -> str:
    """What accepting a stale task says."""
    known = project.base_tip
    now = f"{known.branch} is at {known.tip[:12]} now" if known is not None else "the base has moved"
    return f"{task.id} was verified on {held_for(task.verified_base)}, and {now}: its verdict is stale"
