"""`taskgate verify`: finds waiting work through the REST verifier endpoints, runs it, sends the
evidence back, and prints what happened. It talks to the server like any other client (local or
cloud); it is not part of it.

Keys come from the environment only (TASKGATE_VERIFIER_KEY, TASKGATE_REVIEWER_KEY,
TASKGATE_GIT_TOKEN): never on the command line, where `ps` would show them.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from taskgate.cli.client import ApiError, Client
from taskgate.domain.run_report import RunReport
from taskgate.domain.verifier_config import IMAGE_VAR
from taskgate.verifier import run, tips
from taskgate.verifier.batch import BatchRunner
from taskgate.verifier.cache import DEFAULT_MAX_MB, CacheStore, LocalCacheStore
from taskgate.verifier.checkout import Git
from taskgate.verifier.jobs import Lines, run_jobs
from taskgate.verifier.landing import NOT_CLEAN, NOT_OWNER, LandingRunner
from taskgate.verifier.process import scrubbed_env
from taskgate.verifier.sandbox import Sandbox
from taskgate.verifier.state import Gathered, Verifier

POLL_EVERY_S = 30.0
DRAIN_IDLE_S = 30.0
# After giving its slot back, a draining verifier looks at the queue once more this much later:
# a submission the dispatcher saw while the slot was still held is in the queue's index by then.
DRAIN_SETTLE_S = 1.0
# How long one work request waits for a submission: under the server's cap (service/wakeups.py)
# and the client's 30 s timeout.
WAIT_FOR_WORK_S = 20.0
# A start refused with these means another verifier took the task first, or it moved on: normal
# with several verifiers, and not said in the loop.
_RACE_CODES = ("E_CONFLICT", "E_WRONG_STATE")
FINISH_TRIES = 3
INTERRUPTED = "interrupted: the verifier was stopped during the run"


class Unreachable(Exception):
    """The server cannot be reached or refuses the verifier key: nothing to verify with."""


class Slot(Protocol):
    """A draining verifier's hold on its place among a project's verifiers (in the cloud a
    leased slot the dispatcher counts, cloud/drain_lease.py)."""

    def held(self) -> bool:
        """Still this verifier's (its lease renewed, not taken over)."""
        ...

    def release(self) -> None: ...

    def reacquire(self) -> bool:
        """Take it back after release(); False when another verifier has it now."""
        ...


@dataclass(frozen=True)
class Options:
    server: str
    verifier_key: str
    reviewer_key: str | None = None
    git_token: str | None = None
    once: bool = False
    task: str | None = None
    project: str | None = None
    interval_s: float = POLL_EVERY_S
    json: bool = False
    jobs: int = 1  # verifications at once, each in a process of its own (jobs.py)
    wait_s: float = WAIT_FOR_WORK_S  # how long a work request may wait for a submission
    # Where dependency caches are kept (verifier/cache.py): "" for <home>/.taskgate/verifier-cache
    # of whoever the verifier runs as, None for no caches at all.
    cache_dir: str | None = ""
    cache_max_mb: int = DEFAULT_MAX_MB
    # A cache kept elsewhere (the cloud's S3 bucket, verifier/cache_s3.py): used instead of the
    # local one, when caches are on at all.
    cache_store: CacheStore | None = None
    sandbox: Sandbox = field(default_factory=Sandbox)  # who the checks run as
    drain: bool = False  # verify until nothing arrived for idle_exit_s, then exit
    idle_exit_s: float = DRAIN_IDLE_S
    slot: Slot | None = None


@dataclass
class Finished:
    task_id: str
    run_id: str
    commit_sha: str
    verdict: str  # the server's: passed | failed | error
    task_status: str
    summary: str
    gathered: Gathered
    total_s: float
    needs_human: str | None = None  # why the task now waits for a human, when it does

    def as_json(self) -> dict[str, Any]:
        g = self.gathered
        r = g.report
        checks_s = sum((c.duration_ms or 0) for c in r.checks.values()) / 1000
        return {
            "task_id": self.task_id,
            "run_id": self.run_id,
            "commit_sha": self.commit_sha,
            "verdict": self.verdict,
            "task_status": self.task_status,
            "summary": self.summary,
            "needs_human": self.needs_human,
            "error": r.error,
            "commit_missing": r.commit_missing,
            "commit": r.commit,
            "baseline": r.baseline.model_dump(mode="json", exclude={"diff"}) if r.baseline else None,
            "base": r.base.model_dump(mode="json") if r.base else None,
            "conflict": r.conflict.model_dump(mode="json") if r.conflict else None,
            "checks": {n: c.model_dump(mode="json") for n, c in r.checks.items()},
            "criteria": {
                cid: c.model_dump(mode="json", exclude_none=True)
                for cid, c in {**r.results, **(g.review or {})}.items()
            },
            "timings": {f"{k}_s": round(v, 4) for k, v in g.timings.items()}
            | {"total_s": round(self.total_s, 4), "checks_own_s": round(checks_s, 4)},
        }


def _path(*parts: str) -> str:
    return "/".join(urllib.parse.quote(p, safe="") for p in parts)


class Worker:
    def __init__(self, opts: Options, *, out: TextIO = sys.stdout, env: dict[str, str] | None = None) -> None:
        self.opts = opts
        self.out = out
        self.local = Client(opts.server, opts.verifier_key)
        self.reviewer = Client(opts.server, opts.reviewer_key) if opts.reviewer_key else None
        self.env = dict(os.environ if env is None else env)
        self.secrets = [s for s in (opts.verifier_key, opts.reviewer_key, opts.git_token) if s]
        self._images_told: set[str] = set()
        self.cache: CacheStore | None = None
        if opts.cache_dir is not None and opts.cache_store is not None:
            self.cache = opts.cache_store
        elif opts.cache_dir is not None:
            where = Path(opts.cache_dir) if opts.cache_dir else Path.home() / ".taskgate" / "verifier-cache"
            self.cache = LocalCacheStore(where, opts.cache_max_mb * 1024 * 1024)
        self._lines: Lines | None = None  # shared with the other jobs, when there are several
        self._slot = 0  # which job this is: each takes the waiting list from another place
        self._refused: set[str] = set()  # tasks whose start was refused for a reason of their own
        self._batches: list[tuple[str, str]] = []  # (project, batch id) the last work answer offered
        self._batches_refused: set[tuple[str, str]] = set()  # refused for a reason of their own
        self._landing: list[str] = []  # projects whose landing queue the last work answer offered
        self._landing_refused: set[str] = set()

    def _print(self, line: str, file: TextIO) -> None:
        if self._lines is None:
            print(line, file=file, flush=True)
            return
        with self._lines.held():
            print(line, file=file, flush=True)

    # -- output ------------------------------------------------------------------------------

    def say(self, line: str) -> None:
        """Progress a person follows; with --json, stdout carries only the run lines."""
        if not self.opts.json:
            self._print(line, self.out)

    def note(self, line: str) -> None:
        """Something that did not become a run: on stdout with the progress, else on stderr."""
        self._print(line, sys.stderr if self.opts.json else self.out)

    def _printer(self, task_id: str) -> Callable[[str], None]:
        return lambda line: self.say(f"  {task_id} {line}")

    # -- the loop ----------------------------------------------------------------------------

    def main(self) -> int:
        """0: done (--once, --task) or stopped cleanly; 1: --task refused; 2: server unreachable
        or the key refused; 130: interrupted in the middle of a run."""
        if self.opts.task:
            return self._guarded(lambda: 0 if self.verify(self.opts.task or "") is not None else 1)
        if self.opts.drain:
            return self._guarded(self.drain)
        if self.opts.jobs > 1:
            if not self.opts.once:
                self.say(self._polling_line())
            self._lines = Lines()
            return run_jobs(self.opts.jobs, self._job, reaper=self.opts.sandbox.reaper)
        if not self.opts.once:
            self.say(self._polling_line())
        return self._job(0)

    def _job(self, slot: int) -> int:
        self._slot = slot
        return self._guarded(self.once if self.opts.once else self.poll)

    def _guarded(self, body: Callable[[], int]) -> int:
        try:
            return body()
        except Unreachable as exc:
            self._print(f"taskgate verify: {exc}", sys.stderr)
            return 2
        except KeyboardInterrupt:
            self.say("taskgate verify: stopped")
            return 130

    def _polling_line(self) -> str:
        scope = f"project {self.opts.project}" if self.opts.project else "every project this key covers"
        jobs = f", {self.opts.jobs} at once" if self.opts.jobs > 1 else ""
        return (
            f"taskgate verify: {self.opts.server}, {scope}{jobs}, as soon as work arrives "
            f"(every {self.opts.interval_s:g} s from a server that cannot say; Ctrl-C stops)"
        )

    def once(self) -> int:
        """Everything waiting now, each task at most once (a run that ends as an error leaves its
        task waiting: it is not started again here)."""
        tried: set[str] = set()
        batches_tried: set[tuple[str, str]] = set()
        landing_tried: set[str] = set()
        first = True
        while True:
            items, idle, _ = self.waiting()
            fresh = [t for t in items if t not in tried]
            batches = [b for b in self._batches if b not in batches_tried]
            landing = [p for p in self._landing if p not in landing_tried]
            if not fresh and not batches and not landing:
                if first and self._slot == 0:
                    self.note(f"taskgate verify: {idle}")
                return 0
            first = False
            tried.update(fresh)
            batches_tried.update(batches)
            landing_tried.update(landing)
            self._batches = batches
            self._landing = landing
            self._round(fresh)

    def poll(self) -> int:
        """Until stopped: ask for work, waiting on the server for it to arrive; verify what
        came; ask again at once. Sleeps `interval_s` only when the server answered without
        waiting (one that cannot) or offered only tasks this verifier may not start."""
        said = ""
        while True:
            try:
                items, idle, waited = self.waiting(wait=self.opts.wait_s)
                if not items and idle != said and self._slot == 0:  # said once, not every round
                    self.note(f"taskgate verify: {idle}")
                said = "" if items else idle
                # Batches offered that this verifier was refused: the server answers at once
                # while they wait, so they count as something offered, like refused tasks.
                offered = bool(self._batches) or bool(self._landing)
                tried = self._round(items)
            except Unreachable as exc:  # a service outlives server restarts: try again next round
                self._print(f"taskgate verify: {exc}; retrying in {self.opts.interval_s:g} s", sys.stderr)
                time.sleep(self.opts.interval_s)
                continue
            if tried or (not items and not offered and waited > 0):
                continue
            time.sleep(self.opts.interval_s)

    def drain(self) -> int:
        """Verify waiting work, taking what arrives meanwhile, until none came for idle_exit_s;
        then give the slot back and exit 0. A slot taken over by another verifier (this one's
        lease lapsed) stops it after its current run."""
        scope = f"project {self.opts.project}" if self.opts.project else "every project this key covers"
        self.say(f"taskgate verify: draining {scope}; exits after {self.opts.idle_exit_s:g} s without work")
        slot = self.opts.slot
        quiet_since = time.monotonic()
        try:
            while True:
                if slot is not None and not slot.held():
                    self.note(
                        "taskgate verify: another verifier took this one's slot (its lease lapsed); stopping"
                    )
                    return 0
                try:
                    items, _, _ = self.waiting()
                except Unreachable as exc:
                    print(f"taskgate verify: {exc}; retrying in {self.opts.interval_s:g} s", file=sys.stderr)
                    items = []
                ran = False
                batches, self._batches = self._batches, []
                for project, batch_id in batches:
                    ran = bool(self.verify_batch(project, batch_id)) or ran
                landing, self._landing = self._landing, []
                for project in landing:
                    ran = bool(self.land(project)) or ran
                for task_id in items:
                    if slot is not None and not slot.held():
                        break
                    ran = self.verify(task_id) is not None or ran
                if ran:
                    quiet_since = time.monotonic()
                    continue
                left = self.opts.idle_exit_s - (time.monotonic() - quiet_since)
                if left > 0:
                    time.sleep(min(self.opts.interval_s, left))
                    continue
                if slot is None:
                    break
                slot.release()
                time.sleep(DRAIN_SETTLE_S)
                items, _, _ = self.waiting()
                if not items or not slot.reacquire():
                    break
                quiet_since = time.monotonic()
        finally:
            if slot is not None:
                slot.release()
        self.say(f"taskgate verify: nothing waiting for {self.opts.idle_exit_s:g} s; exiting")
        return 0

    def _round(self, items: list[str]) -> int:
        """Start what can be started among `items`, from this job's place in the list (jobs
        that start from the same place race for the same task). Returns how many it tried."""
        offered, self._batches = self._batches, []
        self._batches_refused &= set(offered)
        batches = [b for b in offered if b not in self._batches_refused]
        for project, batch_id in batches:  # a human waits on these: before single submissions
            self.verify_batch(project, batch_id)
        to_land, self._landing = self._landing, []
        self._landing_refused &= set(to_land)
        landing = [p for p in to_land if p not in self._landing_refused]
        for project in landing:  # accepted work waiting to land: before single submissions too
            self.land(project)
        self._refused &= set(items)
        fresh = [t for t in items if t not in self._refused]
        at = self._slot % len(fresh) if fresh else 0
        for task_id in fresh[at:] + fresh[:at]:
            self.verify(task_id)
        return len(fresh) + len(batches) + len(landing)

    def _call(self, client: Client, method: str, path: str, body: Any = None, query: Any = None) -> Any:
        try:
            return client.call(method, path, body, query)
        except ApiError as exc:
            if exc.status in (0, 401, 403):
                raise Unreachable(
                    f"{exc.body.get('code', exc.status)}: {exc.body.get('message', '')}"
                ) from exc
            raise

    def waiting(self, *, wait: float = 0.0) -> tuple[list[str], str, float]:
        """The tasks to verify, why there are none when there are none, and how long the server
        waited for some (0: it answered at once, as a server without long polls does)."""
        query: dict[str, Any] = {"project": self.opts.project} if self.opts.project else {}
        if wait > 0:
            query["wait"] = f"{wait:g}"
        try:
            out = self._call(self.local, "GET", "/api/verifier/work", query=query or None)
        except ApiError as exc:  # e.g. --project names no project this key covers
            raise Unreachable(f"{exc.body.get('code', exc.status)}: {exc.body.get('message', '')}") from exc
        waited = float(out.get("wait_s") or 0.0)
        if self._notice_base_moves(out.get("projects", [])):
            # A moved base made verified tasks stale: ask again at once, for them too.
            query.pop("wait", None)
            out = self._call(self.local, "GET", "/api/verifier/work", query=query or None)
        self._batches = [(b["project"], b["id"]) for b in out.get("batches", [])]
        self._landing = list(out.get("landing", []))
        return list(out["items"]), idle_reason(out.get("projects", []), self.opts.project), waited

    def _notice_base_moves(self, projects: list[dict[str, Any]]) -> bool:
        """Read each project's base tip and report the ones that moved (verifier/tips.py)."""
        git = Git(scrubbed_env(self.env), self.opts.git_token)

        def report(project: str, ref: str, tip: str) -> dict[str, Any]:
            path = f"/api/verifier/projects/{_path(project)}/base"
            out: dict[str, Any] = self._call(self.local, "POST", path, {"ref": ref, "after": tip})
            return out

        said = tips.notice_moves(git, projects, report)
        for line in said:
            self.say(f"taskgate verify: {line}")
        return bool(said)

    def verify(self, task_id: str) -> Finished | None:
        """One run on one task; None if the server would not start it (someone else has it, or
        it is no longer waiting)."""
        began = time.monotonic()
        try:
            work = self._call(self.local, "POST", "/api/verifier/runs", {"task_id": task_id})
        except ApiError as exc:
            code = exc.body.get("code", exc.status)
            if self.opts.task or code not in _RACE_CODES:
                self.note(f"{task_id}: not started ({code}: {exc.body.get('message', '')})")
                self._refused.add(task_id)
            return None
        run_id = work["run_id"]
        self.say(f"{task_id}: verifying {work['commit_sha'][:12]} (run {run_id})")
        self._about_image(task_id, (work.get("config") or {}).get("image"))
        start_s = time.monotonic() - began
        verifier = Verifier(
            env=self.env,
            secrets=self.secrets,
            git_token=self.opts.git_token,
            reviewer_available=self.reviewer is not None,
            progress=self._printer(task_id),
            sandbox=self.opts.sandbox,
            cache=self.cache,
        )
        try:
            gathered = run.execute(verifier, work)
        except KeyboardInterrupt:
            # Ctrl-C: the run ends as an error (no attempt used), its checkout already removed.
            self._finish(task_id, run_id, Gathered(RunReport(error=INTERRUPTED)), quiet=True)
            self.say(f"{task_id}: run ended as an error (interrupted)")
            raise
        needs_human: str | None = None
        try:
            with gathered.timed("reporting"):
                finished = self._finish(task_id, run_id, gathered)
            verdict, status, summary = (
                finished["run"]["status"],
                finished["task_status"],
                finished["run"]["summary"],
            )
            needs_human = (finished.get("needs_human") or {}).get("reason")
        except ApiError as exc:
            code, message = exc.body.get("code", exc.status), str(exc.body.get("message", ""))
            if code != "E_STALE_CLAIM":
                # Refused for another reason: say so and go on with the next task (the run, never
                # finished, ends as an error on the server once its time is up).
                self.note(f"{task_id}: the server refused the evidence ({code}: {message})")
                return None
            # The run stopped counting while it ran (a human accepted, reopened or cancelled the
            # task): the server set it aside, and that is its outcome.
            verdict, status, summary = "superseded", str(exc.body.get("current_status") or "?"), message
        gathered.timings["reporting"] = gathered.timings.get("reporting", 0.0) + start_s  # starting it, too
        result = Finished(
            task_id=task_id,
            run_id=run_id,
            commit_sha=work["commit_sha"],
            verdict=verdict,
            task_status=status,
            summary=summary,
            gathered=gathered,
            total_s=time.monotonic() - began,
            needs_human=needs_human,
        )
        self._report(result)
        return result

    def verify_batch(self, project: str, batch_id: str) -> list[dict[str, Any]]:
        """Run a batch's steps until the server has decided it (or another verifier has the next
        step); one line per run. The server says what each run merges; this only runs it."""
        lines: list[dict[str, Any]] = []
        path = f"/api/verifier/projects/{_path(project)}/batches/{_path(batch_id)}/runs"
        while True:
            try:
                work = self._call(self.local, "POST", path)
            except ApiError as exc:
                code = exc.body.get("code", exc.status)
                if code not in _RACE_CODES:
                    self.note(f"batch {batch_id}: not started ({code}: {exc.body.get('message', '')})")
                    self._batches_refused.add((project, batch_id))  # not asked again while offered
                return lines
            tasks = [t["task_id"] for t in work["tasks"]]
            self.say(f"batch {batch_id}: run {work['step']} merges {', '.join(tasks)} (run {work['run_id']})")
            runner = BatchRunner(
                env=self.env,
                secrets=self.secrets,
                git_token=self.opts.git_token,
                progress=lambda line: self.say(f"  batch {batch_id} {line}"),
                sandbox=self.opts.sandbox,
            )
            gathered = runner.run_batch(work)
            try:
                batch = self._call(
                    self.local, "POST", f"{path}/{_path(work['run_id'])}/finish", gathered.body()
                )
            except ApiError as exc:
                self.note(
                    f"batch {batch_id}: the server refused the evidence "
                    f"({exc.body.get('code', exc.status)}: {exc.body.get('message', '')})"
                )
                return lines
            step = batch["steps"][work["step"] - 1]
            line = {
                "batch_id": batch_id,
                "project": project,
                "run_id": work["run_id"],
                "step": work["step"],
                "tasks": tasks,
                "verdict": step["verdict"],
                "tip": step.get("tip"),
                "error": gathered.error,
                "batch_status": batch["status"],
                "accepted": batch["accepted"],
                "culprits": [c["task_id"] for c in batch["culprits"]],
                "skipped": batch["skipped"],
            }
            lines.append(line)
            if self.opts.json:
                self._print(json.dumps(line, sort_keys=True), self.out)
            else:
                self.say(f"batch {batch_id}: run {work['step']} {step['verdict']} -> batch {batch['status']}")
                if batch["status"] in ("done", "stopped"):
                    self.say(
                        f"batch {batch_id}: accepted {', '.join(batch['accepted']) or 'none'}; "
                        f"back to ready: {', '.join(line['culprits']) or 'none'}"
                    )
            if batch["status"] in ("done", "stopped"):
                return lines

    def _sender(self, path: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def send(body: dict[str, Any]) -> dict[str, Any]:
            out: dict[str, Any] = self._call(self.local, "POST", path, body)
            return out

        return send

    def land(self, project: str) -> list[dict[str, Any]]:
        """Run landing steps of `project`'s queue until it is empty, another verifier has the
        next step, or a step ends as an error; one line per step. The server decides each step
        and which commit to push; this builds, runs and pushes."""
        lines: list[dict[str, Any]] = []
        path = f"/api/verifier/projects/{_path(project)}/landing/runs"
        refused_in_row = 0
        while True:
            try:
                work = self._call(self.local, "POST", path)
            except ApiError as exc:
                code = exc.body.get("code", exc.status)
                if code not in _RACE_CODES:
                    self.note(f"landing {project}: not started ({code}: {exc.body.get('message', '')})")
                    self._landing_refused.add(project)
                return lines
            run_id = work["run_id"]
            tasks = [t["task_id"] for t in work["tasks"]]
            self.say(f"landing {project}: step {run_id} builds {', '.join(tasks)} onto {work['branch']}")
            runner = LandingRunner(
                env=self.env,
                secrets=self.secrets,
                git_token=self.opts.git_token,
                progress=lambda line: self.say(f"  landing {project} {line}"),
                sandbox=self.opts.sandbox,
            )
            try:
                out = runner.land(work, self._sender(f"{path}/{_path(run_id)}/evidence"),
                                  self._sender(f"{path}/{_path(run_id)}/push"))  # fmt: skip
            except ApiError as exc:
                self.note(
                    f"landing {project}: the server refused the step's report "
                    f"({exc.body.get('code', exc.status)}: {exc.body.get('message', '')})"
                )
                return lines
            step = out.step
            line = {
                "landing": project,
                "run_id": run_id,
                "tasks": tasks,
                "tip": out.tip,
                "tested": [[t["task_id"], t["verdict"]] for t in step.get("tested", [])],
                "push": step.get("push"),
                "pushed": out.pushed,
                "outcome": step.get("outcome"),
                "landed": step.get("landed", []),
                "culprit": step.get("culprit"),
                "why": step.get("why"),
                "error": out.error,
            }
            lines.append(line)
            if self.opts.json:
                self._print(json.dumps(line, sort_keys=True), self.out)
            else:
                self.say(
                    f"landing {project}: {line['outcome']}; landed {', '.join(line['landed']) or 'none'}"
                    + (f"; back to ready: {line['culprit']}" if line["culprit"] else "")
                    + (f" ({line['why']})" if line["why"] else "")
                )
            refused_in_row = refused_in_row + 1 if line["outcome"] == "refused" else 0
            if line["outcome"] in ("error", "nothing") or refused_in_row >= FINISH_TRIES:
                return lines
            if line["outcome"] == "refused" and line["why"] in (NOT_CLEAN, NOT_OWNER):
                return lines  # a person's work tree: tried again at the next poll, not at once

    def _about_image(self, task_id: str, image: str | None) -> None:
        """A config's image is for the cloud's containers; a verifier outside one (no
        TASKGATE_VERIFIER_IMAGE) runs the checks where it runs, and says so once per image."""
        if not image or self.env.get(IMAGE_VAR) or image in self._images_told:
            return
        self._images_told.add(image)
        self.note(
            f"{task_id}: the verifier config names image {image}, which the cloud's verifier runs in; "
            "this verifier is not in a container of it and ignores it: the checks run with this "
            "machine's tools (said once)"
        )

    def _finish(self, task_id: str, run_id: str, g: Gathered, *, quiet: bool = False) -> dict[str, Any]:
        base = f"/api/verifier/runs/{_path(task_id, run_id)}"
        if g.review is not None and g.report.error is None and self.reviewer is not None:
            review = {"results": {cid: r.model_dump(mode="json") for cid, r in g.review.items()}}
            try:
                self._call(self.reviewer, "POST", f"{base}/review", review)
            except (ApiError, Unreachable) as exc:
                g.report.error = f"the server refused the reviewer's answer: {exc}"
        body = g.report.model_dump(mode="json")
        for attempt in range(FINISH_TRIES):
            try:
                out: dict[str, Any] = self._call(self.local, "POST", f"{base}/finish", body)
                return out
            except ApiError as exc:
                # The task changed at the same moment (a human edit): the evidence still stands.
                if exc.body.get("code") == "E_CONFLICT" and attempt < FINISH_TRIES - 1:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                if quiet:
                    return {}
                raise
            except Unreachable:
                if quiet:
                    return {}
                raise
        raise AssertionError("unreachable")

    def _report(self, r: Finished) -> None:
        if self.opts.json:
            self._print(json.dumps(r.as_json(), sort_keys=True), self.out)
            return
        t = r.gathered.timings
        phases = ", ".join(f"{k} {v:.2f} s" for k, v in t.items())
        self.say(f"{r.task_id}: {r.verdict} -> {r.task_status} ({r.summary}) in {r.total_s:.2f} s [{phases}]")
        after = what_happened(r.verdict, r.task_status, r.needs_human)
        if after:
            self.say(f"{r.task_id}: {after}")


def what_happened(verdict: str, task_status: str, needs_human: str | None) -> str:
    """What the verdict did to the task, in words: where the findings go, or why a human is next."""
    if task_status == "needs_human":
        return f"the task waits for a human: {needs_human}" if needs_human else "the task waits for a human"
    if verdict == "failed":
        if task_status == "backlog":
            return (
                "the task waits in backlog until its spec is approved again; "
                "the findings go into the next attempt's brief"
            )
        return "the findings go into the next attempt's brief"
    if verdict == "error" and task_status == "needs_verification":
        return "no attempt used; the task waits for the next run"
    return ""


def idle_reason(projects: list[dict[str, Any]], asked: str | None) -> str:
    """Why a verifier found nothing to start: "nothing waiting", "verification is off for mit:
    3 tasks wait for a human", "mit: 1 task is being verified by another run"."""

    def tasks(n: int) -> str:
        return f"{n} task{'s' if n != 1 else ''}"

    parts = []
    for q in projects:
        name = q["project"]
        if not q["verification_on"]:
            waiting = q["for_human"]
            were = "wait" if waiting != 1 else "waits"
            parts.append(
                f"verification is off for {name}"
                + (f": {tasks(waiting)} {were} for a human" if waiting else "")
            )
        elif q["running"]:
            parts.append(f"{name}: {tasks(q['running'])} being verified by another run")
    if not projects and asked is None:
        return "nothing waiting: no project this key covers has verification on"
    where = f" in {asked}" if asked else ""
    return f"nothing waiting{where}" + (f" ({'; '.join(parts)})" if parts else "")


def options_from_env(
    *,
    server: str,
    once: bool,
    task: str | None,
    project: str | None,
    interval_s: float,
    json_lines: bool,
    env: dict[str, str] | None = None,
    sandbox: Sandbox | None = None,
    drain: bool = False,
    idle_exit_s: float = DRAIN_IDLE_S,
    jobs: int = 1,
) -> Options:
    e = os.environ if env is None else env
    key = e.get("TASKGATE_VERIFIER_KEY", "").strip()
    if not key:
        raise SystemExit("taskgate verify: set TASKGATE_VERIFIER_KEY to a local verifier key (tgv_...)")
    cache_dir = e.get("TASKGATE_VERIFIER_CACHE", "").strip()
    raw_mb = e.get("TASKGATE_VERIFIER_CACHE_MB", "").strip()
    try:
        cache_mb = int(raw_mb) if raw_mb else DEFAULT_MAX_MB
    except ValueError:
        cache_mb = 0
    if cache_mb < 1:
        raise SystemExit(
            f"taskgate verify: TASKGATE_VERIFIER_CACHE_MB must be a whole number of MB, not {raw_mb!r}"
        )
    return Options(
        server=server,
        verifier_key=key,
        reviewer_key=e.get("TASKGATE_REVIEWER_KEY", "").strip() or None,
        git_token=e.get("TASKGATE_GIT_TOKEN", "").strip() or None,
        once=once,
        task=task,
        project=project,
        interval_s=interval_s,
        json=json_lines,
        sandbox=sandbox or Sandbox(),
        drain=drain,
        idle_exit_s=idle_exit_s,
        jobs=jobs,
        cache_dir=None if cache_dir == "off" else cache_dir,
        cache_max_mb=cache_mb,
    )
