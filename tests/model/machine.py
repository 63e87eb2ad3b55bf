"""The model-based test: the reference model (reference.py) and the real services, side by side.

Each rule draws one action, asks the model what must happen (a refusal, or a change), runs the
same action through the service layer (`taskgate.service.*`, the entry points MCP and REST use)
over a real store, then compares:

- the outcome: both succeeded, or the real refusal code is one the model gives for the case;
- a refused action changed nothing (every item in the store, before and after; the only writes
  allowed are the settlement of leases that had lapsed, which expiry-on-access may do anywhere);
- every task's status, attempts used, number of claims, holder, verifier errors in a row, live
  run and risk; every spec's status and risk; the project's verification switch and max_attempts.

A divergence either fails the example (strict mode: pytest; Hypothesis shrinks it) or is recorded
and ends the example (record mode: tests/model/long_run.py counts them by kind and goes on).

Rules are few and weighted (an `action` drawn from a list with repeats) so that an example goes
deep: claim, work, submit, verify, accept, reopen, expire, in a few dozen steps.
"""

from __future__ import annotations

import shutil
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from taskgate.domain.clock import ManualClock
from taskgate.domain.entropy import SeededEntropy
from taskgate.domain.errors import TaskgateError
from taskgate.domain.ids import parse_spec_id
from taskgate.domain.merging import MergeConflict, MergedBase
from taskgate.domain.models import (
    AgentRole,
    CredentialKind,
    CriterionInput,
    CriterionKind,
    FailureKind,
    Project,
    Risk,
    Spec,
    Status,
    Task,
    VerifierKind,
)
from taskgate.domain.principals import Acting, acting, human
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence, EvidenceSource, RunReport
from taskgate.service import (
    claims,
    keys,
    landing,
    projects,
    records,
    review,
    specs,
    staleness,
    sweeper,
    tasks,
    verification,
)
from taskgate.service.context import Context
from taskgate.service.offers import Offers
from taskgate.store.dynamodb import DynamoDBStore
from taskgate.store.port import Store
from taskgate.store.sqlite import SQLiteStore
from tests.model import reference as ref
from tests.support.dynamo import dynamodb_store, moto_get_many
from tests.support.world import SHA, dump

PROJECT = "demo"
REPORT_PATH = "reports/junit.xml"
VERIFIER_CONFIG = {
    "checks": {"unit": {"command": "pytest", "report": {"path": REPORT_PATH, "format": "junit"}}}
}
# The same checks, accepting no stale verdict until it is re-verified.
STRICT_CONFIG = {**VERIFIER_CONFIG, "accept_stale": False}
BAD_CONFIG = {"checks": {"unit": {"command": ""}}}
LONE_SURROGATE = "title \ud800"
MAX_TASKS = 24
MAX_SPECS = 6


@contextmanager
def sqlite_file_store() -> Iterator[Store]:
    """A SQLiteStore on a real file (WAL needs one), removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="taskgate-model-"))
    store = SQLiteStore(tmp / "model.db")
    try:
        yield store
    finally:
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)


STORES: dict[str, Callable[[], AbstractContextManager[Any]]] = {
    "sqlite": sqlite_file_store,
    "dynamodb": dynamodb_store,
}


@dataclass
class Divergence:
    kind: str  # what differed, without ids or step numbers: the same kind groups across examples
    detail: str  # this occurrence: ids and the last steps of the example


@dataclass
class Recorder:
    steps: int = 0
    examples: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)  # "<action by role on status> -> <code|ok>"
    # Each example's path: its steps with both outcomes, then the key and run ids it made.
    paths: list[tuple[str, ...]] = field(default_factory=list)

    def kinds(self) -> Counter[str]:
        return Counter(d.kind for d in self.divergences)


class DivergenceError(AssertionError):
    pass


# Callers, weighted by repetition: mostly ones who may act, some who may not.
# "d1@alice" is agent d1 acting on behalf of human:alice (a delegation alice granted its key).
WHO_SPEC = ["alice", "arch", "alice", "arch", "e1", "d1@alice"]
WHO_TASK = ["alice", "e1", "alice", "arch", "e1", "e2", "v1", "scoped"]
WHO_CLAIM = ["e1", "e2", "e1", "e2", "arch", "e1", "d1", "scoped", "alice", "v1", "e1=e2", "e2=e2"]
WHO_REVIEW = ["alice", "alice", "alice", "alice", "d1@alice", "d1@alice", "e1", "v1", "scoped", "e1@alice"]
WHO_BOARD = ["alice", "alice", "alice", "alice", "d1@alice", "e1", "d1@bob"]
WHO_VERIFY = ["v1", "v1", "v1", "v2", "v3", "rv", "e1"]
WHO_READ = ["alice", "e1", "e2", "scoped"]
REVOCABLE = ["e2", "scoped", "v1", "v2", "rv"]
RISKS = ["low", "low", "medium", "high"]
SPEC_KINDS = [("test",), ("test",), ("test", "command"), ("test",), ("test", "command"), ()]
OWN_KINDS = [("test",), ("test",), ("command",), ("test", "command"), ()]
KIND = {"test": CriterionKind.TEST, "command": CriterionKind.COMMAND}
FAILURES = ["other", "other", "dependency", "spec_gap", "design_conflict"]
RESOLUTIONS = ["requeue", "requeue", "block", "revise_spec", "reverify", "cancel"]
LEASES = [None, None, None, None, None, 1, 45, 120, 0, 121]
ADVANCE = [1, 2, 5, 5, 10, 10, 15, 29, 30, 31, 45, 121]
# The verdicts the progress rule gives a running run (choice 0..11): mostly the ends a fleet
# sees, and every kind often enough that a short profile reaches each of them. "break": a check
# fails while every criterion passes (on a moved base: what the base gained broke it).
# What a re-verification on a moved base ends with, as the progress rule gives it (choice 0..3).
REVERIFY_VERDICTS = ["pass", "fail", "break", "conflict"]
VERDICTS = ["pass"] * 4 + ["fail"] * 2 + ["break", "conflict"] + ["error"] * 2 + ["spec_error", "conflict"]
# main's tips a verifier may report, and the tree of a merge (the server keeps, never reads it)
TIPS = ["a0" * 20, "a1" * 20, "a2" * 20]
TREE = "b0" * 20
MAX_ATTEMPTS = [None, None, None, None, None, 1, 2, 4, 0]
PRIORITIES = [0, 5, 0, 10, 0, 2000]
LIST_STATUSES = [None, "ready", "ready", "claimed", "needs_verification", "needs_human"]

SPEC_ACTIONS = ["create", "create", "update", "approve", "approve", "revise"]
HOLDER_ACTIONS = ["heartbeat", "release", "fail", "escalate", "submit", "submit", "submit"]
REVIEW_ACTIONS = [
    "accept",
    "accept",
    "accept",
    "accept_batch",
    "reopen",
    "cancel",
    "resolve",
    "resolve",
    "status",
    "status",
    "status",
]
BOARD_ACTIONS = [
    "max_attempts",
    "config",
    "verification_on",
    "verification_on",
    "verification_off",
    "mint",
    "revoke",
]
LOOK_ACTIONS = ["sweep", "get_task", "get_task", "list_tasks", "list_tasks"]
# update_task(status): where a human's move may go, and the statuses worth drawing a task from.
STATUS_TARGETS = [
    "ready",
    "ready",
    "blocked",
    "backlog",
    "needs_verification",
    "done",
    "cancelled",
    "claimed",
]
STATUS_FROM = {
    "ready": ("needs_verification", "verified", "done", "needs_human"),
    "blocked": ("needs_human",),
    "backlog": ("needs_human",),
    "needs_verification": ("needs_human",),
    "done": ("needs_verification", "verified"),
    "landing": ("verified",),
    "verified": ("landing",),
    "cancelled": ("ready", "claimed", "needs_human", "blocked", "backlog", "landing"),
    "claimed": ("ready",),  # never a human's move: refused whoever asks
}
WHO_EDIT = ["alice", "arch", "arch", "e1", "d1@alice", "v1", "scoped", "alice"]

task_ix = st.integers(min_value=0, max_value=400).map(lambda x: x - 1 if x < 2 else x)  # -1: no such task
spec_ix = st.integers(min_value=0, max_value=100).map(lambda x: x - 1 if x < 2 else x)
focus_ = st.sampled_from([True, True, True, False])  # pick among tasks in the statuses the action wants
flaw = st.sampled_from([False] * 9 + [True])  # a bad argument, now and then
token_ = st.sampled_from([0, 0, 0, 0, 0, 1, 2])  # 0 the current token, 1 an old one, 2 garbage
count = st.sampled_from([1, 1, 2, 0])
wide = st.integers(0, 30)


def _caller(spec: str) -> ref.Caller:
    """ "e1": agent e1; "d1@alice": d1 on behalf of human:alice; "e1=e2": e1 naming agent:e2."""
    spec, _, named = spec.partition("=")
    key, _, boss = spec.partition("@")
    return ref.Caller(key, f"human:{boss}" if boss else None, f"agent:{named}" if named else None)


def _source(kind: str, ref: str) -> EvidenceSource:
    """Where a verifier read the evidence: a test ref from the configured check's report, a
    command criterion from running its command."""
    if kind == "test":
        return EvidenceSource(check="unit", report=REPORT_PATH, ref=ref)
    return EvidenceSource(ref=ref)


def _criteria(kinds: tuple[str, ...], group: str) -> list[CriterionInput]:
    return [
        CriterionInput(
            text=f"{k} criterion {n}",
            kind=KIND[k],
            verify_ref=f"tests.{group}.t{n}" if k == "test" else "true",
        )
        for n, k in enumerate(kinds)
    ]


class ModelMachine(RuleBasedStateMachine):
    """Subclassed per adapter and mode (see `machine_for`)."""

    adapter: ClassVar[str] = "sqlite"
    strict: ClassVar[bool] = True
    recorder: ClassVar[Recorder] = Recorder()

    def __init__(self) -> None:
        super().__init__()
        self._stack = ExitStack()
        self.store: Store = self._stack.enter_context(STORES[self.adapter]())
        self.clock = ManualClock()
        # Offers on the model's clock, one set per example: the process-wide one runs on real
        # time and is keyed by id(store), which a later example's store may reuse, so the same
        # draws took other paths depending on what ran before and how fast.
        # Keys, claim tokens, run ids and claim-next picks from a seed the example draws, so the
        # same draws take the same path: a profile is repeatable, and a failure shrinks.
        self.entropy = SeededEntropy(0)
        self.ctx = Context(
            self.store,
            self.clock,
            offers=Offers(clock=lambda: self.clock.now().timestamp()),
            entropy=self.entropy,
        )
        self.model = ref.Model(project=PROJECT)
        self.human = acting(human("alice"))
        self.secrets: dict[str, str] = {}
        self.key_ids: dict[str, str] = {}
        self.task_ids: list[str] = []
        self.spec_ids: list[str] = []
        self.tokens: dict[int, str] = {}  # model token -> real token
        self.task_tokens: dict[int, list[int]] = {}  # task -> model tokens issued for it
        self.last_claimer: dict[int, str] = {}
        self.run_ids: dict[int, str] = {}  # model run -> real run id
        self.run_criteria: dict[int, list[str]] = {}
        self.trace: list[str] = []
        self.diverged = False
        type(self).recorder.examples += 1

    def teardown(self) -> None:
        ids = [f"key {n}={k}" for n, k in sorted(self.key_ids.items())]
        ids += [f"run {n}={r}" for n, r in sorted(self.run_ids.items())]
        type(self).recorder.paths.append((*self.trace, *ids))
        self._stack.close()

    # ---- setup ---------------------------------------------------------------------------

    @initialize(
        verification_on=st.sampled_from([True, True, True, False]),
        seed=st.integers(0, 2**32 - 1),
        land=st.sampled_from([False, False, True]),
    )
    def setup(self, verification_on: bool, seed: int, land: bool = False) -> None:
        self.entropy.seed(seed)
        projects.create(self.ctx, self.human, PROJECT, repo="/tmp/repo")
        projects.create(self.ctx, self.human, "other", repo="/tmp/other")
        self.model.keys["alice"] = ref.Key("alice", "human")
        self._mint(ref.Key("e1", "agent", role="executor"))
        self._mint(ref.Key("e2", "agent", role="executor"))
        self._mint(ref.Key("arch", "agent", role="architect"))
        self._mint(ref.Key("d1", "agent", role="executor", delegations=("human:alice",)))
        self._mint(ref.Key("scoped", "agent", role="executor", projects=("other",)))
        self._mint(ref.Key("v1", "verifier", vkind="local"))
        self._mint(ref.Key("rv", "verifier", vkind="reviewer"))
        # A few specs and tasks to start from, made through the same compared steps.
        self.spec_action("create", "alice", 0, "low", ("test",), False)
        self.spec_action("approve", "alice", 0, "low", ("test",), False)
        self.spec_action("create", "arch", 1, "medium", ("test", "command"), False)
        for n in range(4):
            self.create_task(
                who="e1" if n % 2 else "alice",
                use_spec=n == 3,
                si=0,
                own=("test",),
                nb=0,
                bi=0,
                max_attempts=None,
                priority=n,
                risk=None,
                bad=False,
            )
        self.board("config", "alice", 1 if land else 3, "v1", True)  # 1: a config that lands
        if verification_on:
            self.board("verification_on", "alice", 3, "v1", True)
        # Two of them claimed and submitted, so that most examples reach verdicts, conflicts and
        # stale verdicts within their steps (every step here is compared like any other).
        for t in (0, 1):
            self._claim(ref.Caller("e2"), t, None)
            self._holder("submit", t, 0, "other", False, 1, 0)
        if verification_on:  # and one verified, so that main moving makes a stale verdict at once
            self._verify_start(ref.Caller("v1"), 0)
            self._verify_finish(self.model.runs[-1], "pass", False)
        if verification_on and land:  # both accepted, waiting in the landing queue, in order
            self._verify_start(ref.Caller("v1"), 1)
            self._verify_finish(self.model.runs[-1], "pass", False)
            for t in (0, 1):
                self._review("accept", ref.Caller("alice"), t, "", False, 0, 0)

    def _mint(self, key: ref.Key) -> None:
        if key.kind == "agent":
            minted = keys.create(
                self.ctx,
                self.human,
                kind=CredentialKind.AGENT,
                name=key.name,
                role=AgentRole(key.role),
                projects_=list(key.projects) or None,
                delegations=list(key.delegations) or None,
            )
        else:
            minted = keys.create(
                self.ctx,
                self.human,
                kind=CredentialKind.VERIFIER,
                name=key.name,
                verifier_kind=VerifierKind(key.vkind),
            )
        self.secrets[key.name] = minted.secret
        self.key_ids[key.name] = minted.credential.id
        self.model.keys[key.name] = key

    # ---- plumbing ------------------------------------------------------------------------

    def act(self, c: ref.Caller) -> Acting:
        """Who the real call runs as: the admin human, or the key authenticated now (a revoked
        key is refused here, as on every request)."""
        if c.key == "alice":
            return self.human
        principal = keys.authenticate(self.ctx, self.secrets[c.key])
        return acting(principal, on_behalf_of=c.on_behalf_of, claimed_actor=c.names)

    def tid(self, label: int) -> str:
        return self.task_ids[label] if 0 <= label < len(self.task_ids) else f"{PROJECT}-{900 + label}"

    def sid(self, label: int) -> str:
        return self.spec_ids[label] if 0 <= label < len(self.spec_ids) else f"SPEC-{900 + label}"

    def pick(self, i: int, focus: bool, *statuses: str) -> int:
        """A task label: -1 draws one that does not exist; with focus, one in `statuses` if any."""
        tasks_ = self.model.tasks
        if i < 0 or not tasks_:
            return len(tasks_) + 3
        if focus:
            cands = [t.label for t in tasks_ if t.status in statuses]
            if cands:
                return cands[i % len(cands)]
        return i % len(tasks_)

    def pick_spec(self, i: int) -> int:
        if i < 0 or not self.model.specs:
            return len(self.model.specs) + 3
        return i % len(self.model.specs)

    def blockers(self, n: int, i: int, exclude: int) -> list[int]:
        cands = [
            t.label for t in self.model.tasks if t.label != exclude and t.status not in ("done", "cancelled")
        ]
        if not cands:
            return []
        return sorted({cands[(i + k) % len(cands)] for k in range(n)})

    def _diverge(self, kind: str, detail: str) -> None:
        d = Divergence(kind, f"{detail}\n  last steps:\n    " + "\n    ".join(self.trace[-12:]))
        if self.strict:
            raise DivergenceError(f"{kind}\n{d.detail}")
        type(self).recorder.divergences.append(d)
        self.diverged = True

    def _role(self, caller: ref.Caller | None) -> str:
        if caller is None:
            return "system"
        k = self.model.keys[caller.key]
        if caller.names is not None and caller.names != f"agent:{k.name}":
            return "agent naming another"
        if caller.on_behalf_of:
            return "delegated" if caller.on_behalf_of in k.delegations else "undelegated on_behalf_of"
        if k.kind == "agent":
            return "scoped-agent" if k.projects else (k.role or "agent")
        if k.kind == "verifier":
            return f"{k.vkind}-verifier"
        return "human"

    def _begin(self, label: str) -> bool:
        if self.diverged:
            return False
        type(self).recorder.steps += 1
        self.trace.append(label)
        return True

    def step(
        self,
        name: str,
        caller: ref.Caller | None,
        model_fn: Callable[[ref.Model], Any],
        real_fn: Callable[[], Any],
        *,
        target: int | None = None,
        where: str | None = None,
        on_ok: Callable[[Any, Any], None] | None = None,
    ) -> tuple[Any, Any] | None:
        """One action on both sides. Returns (model result, real result) when both succeeded."""
        m = self.model
        if where is None:
            where = m.tasks[target].status if target is not None and 0 <= target < len(m.tasks) else "-"
        label = f"{name} by {self._role(caller)} on {where}"
        if not self._begin(f"{label} (task {target})"):
            return None
        saved = m.clone()
        settled = [self.task_ids[t.label] for t in m.tasks if t.lapsed_from is not None]
        m_codes: frozenset[str] | None = None
        m_out: Any = None
        try:
            m_out = model_fn(m)
        except ref.Refused as r:
            m_codes = r.codes
            if r.settled:  # the call wrote down what was already over, then refused
                settled += [self.task_ids[t] for t in r.settled]
            else:
                self.model = saved
        m_code = "|".join(sorted(m_codes)) if m_codes is not None else None
        before = dump(self.store) if m_codes is not None else None
        r_code: str | None = None
        r_out: Any = None
        try:
            r_out = real_fn()
        except TaskgateError as e:
            r_code = e.code.value
        except Exception as e:
            self._diverge(f"{label}: crashed with {type(e).__name__}", traceback.format_exc(limit=-4))
            return None
        self.trace[-1] += f" -> model {m_code or 'ok'}, real {r_code or 'ok'}"
        type(self).recorder.outcomes[f"{label} -> {r_code or 'ok'}"] += 1
        if (m_codes is None) != (r_code is None) or (m_codes is not None and r_code not in m_codes):
            self._diverge(
                f"{label}: model {m_code or 'ok'}, real {r_code or 'ok'}",
                f"task {self.tid(target or 0)}",
            )
            return None
        if before is not None:
            changed = self._changed(before, dump(self.store), settled)
            if changed:
                self._diverge(f"{label}: refused with {r_code} but wrote", f"changed items: {changed[:4]}")
                return None
        if m_codes is None and on_ok is not None:
            on_ok(m_out, r_out)
        if not self.compare(label):
            return None
        return (m_out, r_out) if m_codes is None else None

    def _changed(self, before: list[Any], after: list[Any], settled: list[str]) -> list[tuple[str, str]]:
        """Items a refused call changed, except the settlement of what was already over: a
        lapsed lease, a run past its budget (the task item, its history and runs)."""
        allowed = {records.task_key(t) for t in settled}
        histories = {records.task_pk(t) for t in settled}
        out = []
        for item in sorted(set(before) ^ set(after)):
            key = (item[0], item[1])
            if key not in allowed and item[0] not in histories:
                out.append(key)
        return out

    # ---- comparison ----------------------------------------------------------------------

    def _real_state(self) -> tuple[list[Task], list[Spec], Project]:
        """Every task, spec and the project as stored now, in one batched read; on moto, from its
        backend (moto's wire format was most of a step)."""
        task_keys = [records.task_key(t) for t in self.task_ids]
        spec_keys = [records.spec_key(PROJECT, parse_spec_id(s)) for s in self.spec_ids]
        wanted = [*task_keys, *spec_keys, records.project_key(PROJECT)]
        if isinstance(self.store, DynamoDBStore):
            read = moto_get_many(self.store, wanted)
        else:
            read = self.store.get_many(wanted)
        items = {(i.pk, i.sk): i for i in read}
        return (
            [records.load(Task, items[k]) for k in task_keys],
            [records.load(Spec, items[k]) for k in spec_keys],
            records.load(Project, items[records.project_key(PROJECT)]),
        )

    def compare(self, label: str) -> bool:
        m = self.model
        now = self.clock.now()
        real_tasks, real_specs, rp = self._real_state()
        for mt, rt in zip(m.tasks, real_tasks, strict=True):
            holder = rt.claim.actor.removeprefix("agent:") if rt.claim is not None else None
            real: dict[str, Any] = {
                "status": rt.status.value,
                "attempts_used": rt.attempts_used,
                "claims": len(rt.attempts),
                "holder": holder,
                "attempts": tuple((a.ending.value if a.ending else None, a.used) for a in rt.attempts),
            }
            if mt.lapsed_from is not None and rt.status is Status.CLAIMED and rt.claim is not None:
                # A lapsed lease nobody has touched since: the record may still show the claim.
                if rt.claim.expires_at > now:
                    return self._mismatch(label, mt, "lease", "lapsed", "live")
                status, key, used, n, attempts = mt.lapsed_from
                want: dict[str, Any] = {
                    "status": status,
                    "attempts_used": used,
                    "claims": n,
                    "holder": key,
                    "attempts": attempts,
                }
            else:
                want = {
                    "status": mt.status,
                    "attempts_used": mt.used,
                    "claims": mt.claims,
                    "holder": mt.claim.key if mt.claim is not None else None,
                    "attempts": tuple(mt.attempts),
                    "live_run": mt.live_run is not None,
                    "risk": mt.risk,
                }
                # Why a task waits for a human; no reason once it left needs_human.
                want["why"] = mt.why if mt.status == ref.NEEDS_HUMAN else None
                real["why"] = rt.needs_human.why.value if rt.needs_human is not None else None
                want["conflicts_in_row"] = mt.conflicts_in_row
                real["conflicts_in_row"] = rt.conflicts_in_row
                want["verified_on"] = (
                    TIPS[mt.base] if mt.status == ref.VERIFIED and mt.base is not None else None
                )
                real["verified_on"] = (
                    rt.verified_base.tip
                    if rt.status is Status.VERIFIED and rt.verified_base is not None
                    else None
                )
                if mt.status == ref.NEEDS_VERIFICATION:
                    # Errors "in a row" count only while the task waits for a verifier.
                    want["errors_in_row"] = mt.errors_in_row
                    real["errors_in_row"] = rt.verifier_errors_in_row
                real["live_run"] = rt.live_run is not None
                real["risk"] = rt.risk.value
            # A submitted attempt's record is not compared: whether it ends at the submission or
            # once the submission's fate is known (and says so) is the design's to settle; every
            # other record must match and, once ended, never change.
            real["attempts"] = tuple(
                "submitted" if w == ("submitted", False) else r
                for w, r in zip(want["attempts"], real["attempts"], strict=False)
            ) + tuple(real["attempts"][len(want["attempts"]) :])
            want["attempts"] = tuple(
                "submitted" if w == ("submitted", False) else w for w in want["attempts"]
            )
            for k, v in want.items():
                if real[k] != v:
                    return self._mismatch(label, mt, k, v, real[k])
        for ms, rs in zip(m.specs, real_specs, strict=True):
            if rs.status.value != ms.status:
                return self._mismatch(label, None, "spec status", ms.status, rs.status.value)
            if rs.risk.value != ms.risk:
                return self._mismatch(label, None, "spec risk", ms.risk, rs.risk.value)
        queue = [e.task_id for e in landing.load(self.ctx, PROJECT).entries]
        if queue != [self.tid(x) for x in m.queue]:
            return self._mismatch(label, None, "landing queue", [self.tid(x) for x in m.queue], queue)
        if rp.verification_on != m.verification_on:
            return self._mismatch(label, None, "verification_on", m.verification_on, rp.verification_on)
        if rp.max_attempts != m.max_attempts:
            return self._mismatch(label, None, "max_attempts", m.max_attempts, rp.max_attempts)
        return True

    def _mismatch(self, label: str, mt: ref.Task | None, what: str, want: Any, got: Any) -> bool:
        tid_ = self.task_ids[mt.label] if mt is not None else "-"
        self._diverge(f"after {label}: {what} model={want} real={got}", f"task {tid_}")
        return False

    # ---- rules: specs --------------------------------------------------------------------

    @rule(
        action=st.sampled_from(SPEC_ACTIONS),
        who=st.sampled_from(WHO_SPEC),
        i=spec_ix,
        risk=st.sampled_from(RISKS),
        kinds=st.sampled_from(SPEC_KINDS),
        bad=flaw,
    )
    def spec_action(
        self, action: str, who: str, i: int, risk: str, kinds: tuple[str, ...], bad: bool
    ) -> None:
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        c = _caller(who)
        if action == "create":
            if len(self.model.specs) >= MAX_SPECS:
                return
            title = LONE_SURROGATE if bad else "Health endpoint"
            self.step(
                "create_spec",
                c,
                lambda m: m.create_spec(c, risk=risk, kinds=kinds, title=title),
                lambda: specs.create(
                    self.ctx,
                    self.act(c),
                    PROJECT,
                    title=title,
                    body="b",
                    risk=Risk(risk),
                    criteria=_criteria(kinds, "Health"),
                ),
                on_ok=lambda _m, r: self.spec_ids.append(r.id),
            )
            return
        s = self.pick_spec(i)
        where = (
            f"{self.model.specs[s].status} {self.model.specs[s].risk} spec"
            if s < len(self.model.specs)
            else "-"
        )
        if action == "update":
            self.step(
                "update_spec",
                c,
                lambda m: m.update_spec(c, s, risk=risk),
                lambda: specs.update(self.ctx, self.act(c), PROJECT, self.sid(s), risk=Risk(risk)),
                where=where,
            )
        elif action == "approve":
            self.step(
                "approve_spec",
                c,
                lambda m: m.approve_spec(c, s),
                lambda: specs.approve(self.ctx, self.act(c), PROJECT, self.sid(s)),
                where=where,
            )
        else:
            new_risk = risk if bad else None
            self.step(
                "revise_spec",
                c,
                lambda m: m.revise_spec(c, s, risk=new_risk),
                lambda: specs.revise(
                    self.ctx,
                    self.act(c),
                    PROJECT,
                    self.sid(s),
                    body="clarified",
                    risk=Risk(new_risk) if new_risk else None,
                ),
                where=where,
            )

    # ---- rules: tasks and claims ---------------------------------------------------------

    @precondition(lambda self: len(self.model.tasks) < MAX_TASKS)
    @rule(
        who=st.sampled_from(WHO_TASK),
        use_spec=st.booleans(),
        si=spec_ix,
        own=st.sampled_from(OWN_KINDS),
        nb=st.sampled_from([0, 0, 0, 1, 2]),
        bi=wide,
        max_attempts=st.sampled_from(MAX_ATTEMPTS),
        priority=st.sampled_from(PRIORITIES),
        risk=st.sampled_from([None, *RISKS]),
        bad=flaw,
    )
    def create_task(
        self,
        who: str,
        use_spec: bool,
        si: int,
        own: tuple[str, ...],
        nb: int,
        bi: int,
        max_attempts: int | None,
        priority: int,
        risk: str | None,
        bad: bool,
    ) -> None:
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        c = _caller(who)
        spec = self.pick_spec(si) if use_spec and self.model.specs else None
        own_kinds = () if spec is not None else own
        blocked = self.blockers(nb, bi, -1)
        title = LONE_SURROGATE if bad else "Do the thing"
        r = risk if spec is None else None
        kw: dict[str, Any] = {
            "title": title,
            "priority": priority,
            "max_attempts": max_attempts,
            "blocked_by": [self.tid(b) for b in blocked] or None,
            "risk": Risk(r) if r else None,
        }
        if spec is not None:
            kw["spec_id"] = self.sid(spec)
        else:
            kw["criteria"] = _criteria(own_kinds, "Own")
        self.step(
            "create_task",
            c,
            lambda m: m.create_task(
                c,
                spec=spec,
                own_kinds=own_kinds,
                blocked_by=blocked,
                max_attempts=max_attempts,
                priority=priority,
                risk=r,
                title=title,
            ),
            lambda: tasks.create(self.ctx, self.act(c), PROJECT, **kw),
            on_ok=lambda _m, res: self._created(res.task.id),
        )

    def _created(self, tid_: str) -> None:
        self.task_ids.append(tid_)
        self.task_tokens[len(self.task_ids) - 1] = []

    @rule(
        who=st.sampled_from(WHO_CLAIM),
        by_id=st.sampled_from([True, True, False]),
        i=task_ix,
        focus=focus_,
        lease=st.sampled_from(LEASES),
    )
    def claim(self, who: str, by_id: bool, i: int, focus: bool, lease: int | None) -> None:
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        c = _caller(who)
        if not by_id:
            self._claim_next(c, lease)
            return
        self._claim(c, self.pick(i, focus, "ready"), lease)

    def _claim(self, c: ref.Caller, t: int, lease: int | None) -> None:
        self.step(
            "claim",
            c,
            lambda m: m.claim(c, t, lease),
            lambda: claims.claim(self.ctx, self.act(c), PROJECT, task_id=self.tid(t), lease_minutes=lease),
            target=t,
            on_ok=lambda mo, ro: self._claimed(t, c, mo, ro.token),
        )

    def _claimed(self, t: int, c: ref.Caller, m_token: int, r_token: str) -> None:
        self.tokens[m_token] = r_token
        self.task_tokens[t].append(m_token)
        self.last_claimer[t] = c.key

    def _claim_next(self, c: ref.Caller, lease: int | None) -> None:
        """claim_task without an id: the server picks among the ready tasks with the highest
        priority (higher is claimed first; among equals, any: the server spreads racers
        over the top few); the model checks the pick."""
        real = lambda: claims.claim(self.ctx, self.act(c), PROJECT, lease_minutes=lease)  # noqa: E731
        try:
            ready = self.model.ready_candidates(c, lease)
        except ref.Refused:
            self.step("claim_next", c, lambda m: m.ready_candidates(c, lease), real)
            return
        label = f"claim_next by {self._role(c)}"
        if not self._begin(label):
            return
        try:
            got = real()
        except TaskgateError as e:
            self._diverge(
                f"{label}: model ok, real {e.code.value}",
                f"ready: {[self.task_ids[t.label] for t in ready]}",
            )
            return
        except Exception as e:
            self._diverge(f"{label}: crashed with {type(e).__name__}", traceback.format_exc(limit=-4))
            return
        type(self).recorder.outcomes[f"{label} -> ok"] += 1
        t = self.task_ids.index(got.task.id)
        # The pick ranks the queue as recorded: a lapsed lease nobody has settled yet (a read of
        # the task, a sweep) is back in it only when nothing else is ready. The code's choice for
        # the hot path (see claims.claim), narrower than "expiry on every access".
        seen = [r for r in ready if r.lapsed_from is None] or ready
        top = max(r.priority for r in seen)
        mt = self.model.tasks[t]
        if mt.status != ref.READY or mt.priority < top:
            self._diverge(
                f"{label}: picked a {mt.status} task of priority {mt.priority} below the top ({top})",
                f"task {got.task.id}; ready: {[(self.task_ids[r.label], r.priority) for r in ready]}",
            )
            return
        self._claimed(t, c, self.model.claim(c, t, lease), got.token)
        self.trace[-1] += f" -> {got.task.id}"
        self.compare(label)

    def _holder_args(self, t: int, tok: int) -> tuple[ref.Caller, int | None, str]:
        """The caller (the holder, else the last claimer) and a token: 0 the current one, 1 an
        old one, 2 garbage."""
        m = self.model
        mt = m.tasks[t] if 0 <= t < len(m.tasks) else None
        live = mt.claim if mt is not None else None
        key = live.key if live is not None else self.last_claimer.get(t, "e1")
        issued = self.task_tokens.get(t, [])
        m_token: int | None = None
        if tok == 0 and live is not None:
            m_token = live.token
        elif tok <= 1:
            stale = [x for x in issued if live is None or x != live.token]
            m_token = stale[-1] if stale else None
        r_token = self.tokens[m_token] if m_token is not None else "tgc_not-a-real-token"
        return ref.Caller(key), m_token, r_token

    @rule(
        action=st.sampled_from(HOLDER_ACTIONS),
        i=task_ix,
        focus=focus_,
        tok=token_,
        kind=st.sampled_from(FAILURES),
        bad=flaw,
        nb=count,
        bi=wide,
    )
    def holder(
        self, action: str, i: int, focus: bool, tok: int, kind: str, bad: bool, nb: int, bi: int
    ) -> None:
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        self._holder(action, self.pick(i, focus, "claimed"), tok, kind, bad, nb, bi)

    def _holder(self, action: str, t: int, tok: int, kind: str, bad: bool, nb: int, bi: int) -> None:
        c, mt, rt = self._holder_args(t, tok)
        tid_ = self.tid(t)
        if action == "heartbeat":
            self.step(
                "heartbeat",
                c,
                lambda m: m.heartbeat(c, t, mt),
                lambda: claims.heartbeat(self.ctx, self.act(c), tid_, rt),
                target=t,
            )
        elif action == "release":
            self.step(
                "release",
                c,
                lambda m: m.release(c, t, mt),
                lambda: claims.release(self.ctx, self.act(c), tid_, rt, reason="later"),
                target=t,
            )
        elif action == "fail":
            blocked = self.blockers(nb, bi, t) if kind == "dependency" else []
            self.step(
                f"report_failure({kind})",
                c,
                lambda m: m.report_failure(c, t, mt, kind=kind, findings=not bad, blocked_by=blocked),
                lambda: claims.report_failure(
                    self.ctx,
                    self.act(c),
                    tid_,
                    rt,
                    kind=FailureKind(kind),
                    findings=[] if bad else ["it broke"],
                    blocked_by=[self.tid(b) for b in blocked] or None,
                ),
                target=t,
            )
        elif action == "escalate":
            self.step(
                "escalate",
                c,
                lambda m: m.escalate(c, t, mt, question=not bad),
                lambda: claims.escalate(
                    self.ctx, self.act(c), tid_, rt, question="" if bad else "which API?"
                ),
                target=t,
            )
        else:
            sha_bad = bad and tok == 0 and nb == 0
            self.step(
                "submit",
                c,
                lambda m: m.submit(c, t, mt, evidence=not (bad and not sha_bad), sha_ok=not sha_bad),
                lambda: claims.submit(
                    self.ctx,
                    self.act(c),
                    tid_,
                    rt,
                    commit_sha="not-a-sha" if sha_bad else SHA,
                    evidence="" if bad and not sha_bad else "tests pass",
                ),
                target=t,
            )

    # ---- rules: humans on tasks ----------------------------------------------------------

    @rule(
        action=st.sampled_from(REVIEW_ACTIONS),
        who=st.sampled_from(WHO_REVIEW),
        i=task_ix,
        more=st.lists(task_ix, max_size=2),
        focus=focus_,
        how=st.sampled_from(RESOLUTIONS),
        bad=flaw,
        nb=count,
        bi=wide,
    )
    def review(
        self,
        action: str,
        who: str,
        i: int,
        more: list[int],
        focus: bool,
        how: str,
        bad: bool,
        nb: int,
        bi: int,
    ) -> None:
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        c = _caller(who)
        if action == "accept_batch":
            self._accept_batch(c, [] if bad else [i, *more], focus)
            return
        if action == "status":
            self._set_status(c, i, focus, bad, nb, bi)
            return
        wanted = {
            "accept": ("needs_verification", "verified"),
            "reopen": ("needs_verification", "verified", "done"),
            "cancel": ("claimed", "needs_verification", "ready", "blocked"),
            "resolve": ("needs_human",),
        }[action]
        self._review(action, c, self.pick(i, focus, *wanted), how, bad, nb, bi)

    def _set_status(self, c: ref.Caller, i: int, focus: bool, bad: bool, nb: int, bi: int) -> None:
        """update_task(status): a human's move asked for by where it goes, with the arguments
        that move takes. Mostly a target a human move could reach from the task's status; `bad`
        draws any target and swaps findings in or out where they do not belong."""
        t = self.pick(i, focus, *{s for froms in STATUS_FROM.values() for s in froms})
        mt = self.model.tasks[t] if t < len(self.model.tasks) else None
        options = [to for to, froms in STATUS_FROM.items() if mt is not None and mt.status in froms]
        drawn_from = options if options and not bad else STATUS_TARGETS
        target = drawn_from[bi % len(drawn_from)]
        reopening = target == "ready" and mt is not None and mt.status != ref.NEEDS_HUMAN
        findings = reopening != bad
        blocked = self.blockers(nb, bi, t) if target == "blocked" else []
        note = not reopening and target != "done"
        self.step(
            f"update_task(status={target})",
            c,
            lambda m: m.set_status(c, t, target, findings=findings, blocked_by=blocked, note=note),
            lambda: tasks.update(
                self.ctx,
                self.act(c),
                self.tid(t),
                status=target,
                findings=["missing test"] if findings else None,
                blocked_by=[self.tid(b) for b in blocked] or None,
                note="asked on the board" if note else None,
            ),
            target=t,
        )

    @rule(who=st.sampled_from(WHO_EDIT), i=task_ix, focus=focus_, own=st.sampled_from(OWN_KINDS))
    def edit_criteria(self, who: str, i: int, focus: bool, own: tuple[str, ...]) -> None:
        """update_task with criteria: a spec's task names all its spec's criteria (what is
        verified stays the same), a task of its own gets new criteria of the drawn kinds."""
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        c = _caller(who)
        t = self.pick(i, focus, "backlog", "ready", "blocked", "needs_human")
        mt = self.model.tasks[t] if t < len(self.model.tasks) else None
        if mt is not None and mt.spec is not None:
            spec = self.ctx.spec(PROJECT, self.sid(mt.spec))
            ids = [cr.id for cr in spec.criteria]
            self.step(
                "update_task(spec_criteria)",
                c,
                lambda m: m.edit_criteria(c, t, own_kinds=None),
                lambda: tasks.update(self.ctx, self.act(c), self.tid(t), spec_criteria=ids),
                target=t,
            )
            return
        self.step(
            "update_task(criteria)",
            c,
            lambda m: m.edit_criteria(c, t, own_kinds=own),
            lambda: tasks.update(self.ctx, self.act(c), self.tid(t), criteria=_criteria(own, "Own")),
            target=t,
        )

    def _review(self, action: str, c: ref.Caller, t: int, how: str, bad: bool, nb: int, bi: int) -> None:
        if action == "accept":
            self.step(
                "accept",
                c,
                lambda m: m.accept(c, t),
                lambda: review.accept(self.ctx, self.act(c), self.tid(t)),
                target=t,
            )
        elif action == "reopen":
            self.step(
                "reopen",
                c,
                lambda m: m.reopen(c, t, findings=not bad),
                lambda: review.reopen(
                    self.ctx, self.act(c), self.tid(t), findings=[] if bad else ["missing test"]
                ),
                target=t,
            )
        elif action == "cancel":
            self.step(
                "cancel",
                c,
                lambda m: m.cancel(c, t),
                lambda: review.cancel(self.ctx, self.act(c), self.tid(t), reason="dropped"),
                target=t,
            )
        else:
            blocked = self.blockers(nb, bi, t) if how == "block" else []
            self.step(
                f"resolve({how})",
                c,
                lambda m: m.resolve(c, t, how, blocked_by=blocked),
                lambda: review.resolve(
                    self.ctx,
                    self.act(c),
                    self.tid(t),
                    review.Resolution(how),
                    blocked_by=[self.tid(b) for b in blocked] or None,
                    note="n",
                ),
                target=t,
            )

    def _accept_batch(self, c: ref.Caller, ii: list[int], focus: bool) -> None:
        labels = list(dict.fromkeys(self.pick(i, focus, "needs_verification", "verified") for i in ii))
        before = {t: self.model.tasks[t].status for t in labels if t < len(self.model.tasks)}
        out = self.step(
            "accept_batch",
            c,
            lambda m: m.accept_batch(c, labels),
            lambda: review.accept_batch(self.ctx, self.act(c), [self.tid(t) for t in labels]),
        )
        if out is None:
            return
        got: dict[str, str | None] = {t.id: None for t in out[1].accepted}
        got.update({r["task_id"]: r["code"] for r in out[1].refused})
        for t, codes in out[0].items():
            real = got.get(self.tid(t), "absent")
            if (codes is None) != (real is None) or (codes is not None and real not in codes):
                want = "|".join(sorted(codes)) if codes is not None else "ok"
                self._diverge(
                    f"accept_batch by {self._role(c)}, item on {before.get(t, '-')}: model {want}, real {real or 'ok'}",
                    f"task {self.tid(t)}",
                )
                return

    # ---- rules: the board (project settings, verification, keys) -------------------------

    @rule(
        action=st.sampled_from(BOARD_ACTIONS),
        who=st.sampled_from(WHO_BOARD),
        n=st.sampled_from([3, 1, 2, 3, 5, 0]),
        name=st.sampled_from(REVOCABLE),
        valid=st.sampled_from([True, True, True, False]),
    )
    def board(self, action: str, who: str, n: int, name: str, valid: bool) -> None:
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        c = _caller(who)
        if action == "max_attempts":
            if any(t.lapsed_from for t in self.model.tasks):
                # Silent: a lease settled lazily can only be judged by the max_attempts of the
                # moment it is settled; change the setting only when none waits to be written.
                return
            self.step(
                "set_max_attempts",
                c,
                lambda m: m.set_max_attempts(c, n),
                lambda: projects.update_settings(self.ctx, self.act(c), PROJECT, max_attempts=n),
            )
        elif action == "config":
            strict = n in (0, 2)  # now and then a config that accepts no stale verdict
            land = n in (1, 2)  # and one where taskgate lands accepted work
            config = (STRICT_CONFIG if strict else VERIFIER_CONFIG) if valid else BAD_CONFIG
            if land and valid:
                config = {**config, "land": True}
            self.step(
                f"set_verifier_config(accept_stale={not strict}, land={land})",
                c,
                lambda m: m.set_verifier_config(c, valid=valid, accept_stale=not strict, land=land and valid),
                lambda: projects.set_verifier_config(self.ctx, self.act(c), PROJECT, config),
            )
        elif action in ("verification_on", "verification_off"):
            on = action == "verification_on"
            self.step(
                f"set_verification({'on' if on else 'off'})",
                c,
                lambda m: m.set_verification(c, on),
                lambda: projects.set_verification(self.ctx, self.act(c), PROJECT, on),
            )
        elif action == "mint":
            fresh = [v for v in ("v2", "v3") if v not in self.model.keys]
            if fresh and self._begin(f"mint {fresh[0]}"):
                self._mint(ref.Key(fresh[0], "verifier", vkind="local"))
                self.compare("mint_verifier")
        elif name in self.model.keys and valid:
            self.step(
                f"revoke_key({self.model.keys[name].kind})",
                c,
                lambda m: m.revoke_key(c, name),
                lambda: keys.revoke(self.ctx, self.act(c), self.key_ids[name]),
            )

    # ---- rules: the verifier -------------------------------------------------------------

    @rule(who=st.sampled_from(WHO_VERIFY), i=task_ix, focus=focus_)
    def verify_start(self, who: str, i: int, focus: bool) -> None:
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        if who not in self.model.keys:
            return
        self._verify_start(_caller(who), self.pick(i, focus, "needs_verification", "verified"))

    def _verify_start(self, c: ref.Caller, t: int) -> None:
        reverify = 0 <= t < len(self.model.tasks) and self.model.tasks[t].status == ref.VERIFIED
        self.step(
            "verify_start(reverify)" if reverify else "verify_start",
            c,
            lambda m: m.verify_start(c, t),
            lambda: verification.start(self.ctx, self.act(c), task_id=self.tid(t)),
            target=t,
            on_ok=self._started,
        )

    def _started(self, m_run: int, started: Any) -> None:
        self.run_ids[m_run] = started.run.id
        self.run_criteria[m_run] = [
            (cr["id"], cr["kind"], cr["verify_ref"]) for cr in started.work["criteria"]
        ]

    @precondition(lambda self: bool(self.model.runs))
    @rule(
        r=wide,
        focus=focus_,
        verdict=st.sampled_from(["pass", "pass", "fail", "break", "error", "spec_error", "conflict"]),
        stranger=st.sampled_from([False] * 6 + [True]),
    )
    def verify_finish(self, r: int, focus: bool, verdict: str, stranger: bool) -> None:
        """Finish a run with the verdict we choose: the evidence a verifier would send for it."""
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        live = [x for x in self.model.runs if x.state == "running"]
        pool = live if focus and live else self.model.runs
        self._verify_finish(pool[r % len(pool)], verdict, stranger)

    def _verify_finish(self, run: ref.Run, verdict: str, stranger: bool) -> None:
        who = run.key
        if stranger:
            who = next((v for v in ("v1", "v2", "v3") if v in self.model.keys and v != run.key), run.key)
        c = ref.Caller(who)
        t = run.task
        crit = self.run_criteria[run.label]
        tip = TIPS[self.model.tip_or_first()]
        conflict = (
            MergeConflict(mode="merge", branch="main", tip=tip, paths=["app.py"])
            if verdict == "conflict"
            else None
        )
        base = None if conflict is not None else MergedBase(mode="merge", branch="main", tip=tip, tree=TREE)
        checks: dict[str, CheckResult] = {}
        results: dict[str, CriterionResult] = {}
        if verdict in ("pass", "fail", "break", "spec_error"):
            checks = {"unit": CheckResult(exit_code=1 if verdict in ("fail", "break") else 0, output_tail="")}
            result = {
                "pass": Evidence.PASS,
                "fail": Evidence.FAIL,
                "break": Evidence.PASS,
                "spec_error": Evidence.AMBIGUOUS,
            }[verdict]
            # A spec error: every test ref is ambiguous, everything else passed.
            results = {
                cid: CriterionResult(
                    result=result if kind == "test" or verdict != "spec_error" else Evidence.PASS,
                    detail="ran",
                    source=_source(kind, ref),
                )
                for cid, kind, ref in crit
            }
        self.step(
            f"verify_finish({verdict}, run {run.state})",
            c,
            lambda m: m.verify_finish(c, t, run.label, verdict),
            lambda: verification.finish(
                self.ctx,
                self.act(c),
                self.tid(t),
                self.run_ids[run.label],
                RunReport(
                    checks=checks,
                    results=results,
                    error="checkout failed" if verdict == "error" else None,
                    base=base,
                    conflict=conflict,
                ),
            ),
            target=t,
        )

    @rule(who=st.sampled_from(WHO_VERIFY), n=st.integers(0, len(TIPS) - 1))
    def base_moved(self, who: str, n: int) -> None:
        """main's tip as a verifier's poll (or the git host's webhook) reports it."""
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        if who not in self.model.keys:
            return
        c = _caller(who)
        self.step(
            f"base_moved({n})",
            c,
            lambda m: m.base_moved(c, n),
            lambda: (
                staleness.base_moved(self.ctx, self.act(c), PROJECT, ref="refs/heads/main", tip=TIPS[n]).stale
            ),
            on_ok=self._stale_listed,
        )

    def _stale_listed(self, want: list[int], got: list[str]) -> None:
        """The stale tasks the server names are the model's (oldest verdict first: compared as a set,
        the model does not keep verdict times)."""
        if sorted(self.tid(x) for x in want) != sorted(got):
            self._diverge("base_moved: stale tasks", f"model {sorted(self.tid(x) for x in want)}, real {got}")

    # ---- rule: progress ------------------------------------------------------------------

    @rule(i=task_ix, choice=st.integers(0, 11))
    def progress(self, i: int, choice: int) -> None:
        """The natural next step for one open task, so that examples reach the far end of the
        lifecycle (verified, done, reopened, exhausted) in a few dozen steps."""
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        m = self.model
        open_ = [t for t in m.tasks if t.status not in (ref.DONE, ref.CANCELLED)]
        if not open_ or i < 0:
            return
        t = open_[i % len(open_)]
        while t.status == ref.BLOCKED:  # work on what blocks it
            nxt = [
                m.tasks[b]
                for b in m._open_blockers(t)
                if m.tasks[b].status not in (ref.BLOCKED, ref.CANCELLED)
            ]
            if not nxt:
                return
            t = nxt[0]
        self._next_step(t, choice)

    def _next_step(self, t: ref.Task, choice: int) -> None:
        m = self.model
        human_ = ref.Caller("d1", "human:alice") if choice % 4 == 3 else ref.Caller("alice")
        if t.status == ref.BACKLOG and t.spec is not None:
            s = t.spec
            self.step(
                "approve_spec",
                human_,
                lambda mm: mm.approve_spec(human_, s),
                lambda: specs.approve(self.ctx, self.act(human_), PROJECT, self.sid(s)),
                where="its spec",
            )
        elif t.status == ref.READY:
            self._claim(ref.Caller("e1" if choice % 2 else "e2"), t.label, None)
        elif t.status == ref.CLAIMED:
            action = ["submit"] * 7 + ["heartbeat", "release", "fail", "fail", "escalate"]
            kind = FAILURES[choice % len(FAILURES)]
            self._holder(action[choice], t.label, 0, kind, False, 1, choice)
        elif t.status == ref.NEEDS_VERIFICATION and m.verification_on:
            runs = [r for r in m.runs if r.task == t.label and r.state == "running"]
            live_keys = [k for k in ("v1", "v2", "v3") if k in m.keys and not m.keys[k].revoked]
            if runs:
                self._verify_finish(runs[0], VERDICTS[choice], False)
            elif live_keys:
                self._verify_start(ref.Caller(live_keys[choice % len(live_keys)]), t.label)
            else:
                self._review("accept", human_, t.label, "requeue", False, 0, 0)
        elif t.status == ref.VERIFIED and m.verification_on and choice < 4:
            self._reverify_step(t, choice)
        elif t.status in (ref.NEEDS_VERIFICATION, ref.VERIFIED):
            self._review("reopen" if choice >= 9 else "accept", human_, t.label, "requeue", False, 0, 0)
        elif t.status == ref.NEEDS_HUMAN:
            how = ["requeue", "requeue", "requeue", "reverify", "revise_spec", "block", "cancel"][choice % 7]
            self._review("resolve", ref.Caller("alice"), t.label, how, False, 1, choice)

    def _reverify_step(self, t: ref.Task, choice: int) -> None:
        """A verified task's next step on the verifier's side: its re-verification when its
        verdict is stale (or one is running), else main moving on under it."""
        m = self.model
        if m.stale(t) or t.live_run is not None:
            runs = [r for r in m.runs if r.task == t.label and r.state == "running"]
            live_keys = [k for k in ("v1", "v2", "v3") if k in m.keys and not m.keys[k].revoked]
            if runs:
                self._verify_finish(runs[0], REVERIFY_VERDICTS[choice % len(REVERIFY_VERDICTS)], False)
            elif live_keys:
                self._verify_start(ref.Caller(live_keys[choice % len(live_keys)]), t.label)
        elif "v1" in m.keys:
            # main moves on under a verified task: its verdict goes stale
            self.base_moved("v1", (m.tip_or_first() + 1) % len(TIPS))

    @precondition(
        lambda self: (
            self.model.verification_on
            and any(t.status in (ref.NEEDS_VERIFICATION, ref.VERIFIED) for t in self.model.tasks)
        )
    )
    @rule(i=wide, choice=st.integers(0, 11), rounds=st.integers(1, 4))
    def verifier_at_work(self, i: int, choice: int, rounds: int) -> None:
        """A verifier's few next steps on one task that waits for a verdict or holds one, each
        compared on its own: runs started and finished, main moving under verified work, stale
        verdicts re-verified, now and then an acceptance. So conflicts and stale verdicts come
        up in most examples, not only when `progress` happens to pick such a task."""
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        waiting = [t.label for t in self.model.tasks if t.status in (ref.NEEDS_VERIFICATION, ref.VERIFIED)]
        label = waiting[i % len(waiting)]
        for k in range(rounds):
            t = self.model.tasks[label]  # a refused step puts back the model it cloned: read again
            if (
                self.diverged
                or not self.model.verification_on
                or t.status
                not in (
                    ref.NEEDS_VERIFICATION,
                    ref.VERIFIED,
                )
            ):
                return
            c = (choice + 5 * k) % 12
            if t.status == ref.VERIFIED and c < 9:
                self._reverify_step(t, c)
            else:
                self._next_step(t, c)

    # ---- rules: the landing queue --------------------------------------------------------

    # Only while the config lands accepted work, or something waits in the queue: elsewhere the
    # rule could only be refused, and the other rules' draws stay what they were without it.
    @precondition(lambda self: self.model.land or bool(self.model.queue))
    @rule(
        action=st.sampled_from(["step", "step", "step", "refused", "leave", "hotfix", "accept"]),
        who=st.sampled_from(WHO_VERIFY),
        human_=st.sampled_from(["alice", "alice", "alice", "d1@alice", "e1"]),
        i=task_ix,
        focus=focus_,
        passes=st.lists(st.sampled_from([True, True, True, False]), min_size=1, max_size=8),
    )
    def landing(self, action: str, who: str, human_: str, i: int, focus: bool, passes: list[bool]) -> None:
        """The landing queue: a verifier's step (each entry tested on top of the ones ahead, the
        passing prefix pushed, its push landed or refused), a human taking an entry out or moving
        it to the head, and accepts that fill it."""
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        if action == "accept":
            self._review("accept", ref.Caller("alice"), self.pick(i, focus, "verified"), "", False, 0, 0)
            return
        if action in ("leave", "hotfix"):
            c = _caller(human_)
            t = self.pick(i, focus, "landing")
            fn = landing.leave if action == "leave" else landing.hotfix
            self.step(
                f"queue_{action}",
                c,
                lambda m: m.leave_queue(c, t) if action == "leave" else m.hotfix(c, t),
                lambda: fn(self.ctx, self.act(c), self.tid(t)),
                target=t,
            )
            return
        if who not in self.model.keys:
            return
        c = _caller(who)
        pushed = action == "step"
        tip = self.model.tip_or_first()  # read before the model moves it: both sides build on it

        def model_fn(m: ref.Model) -> list[int]:
            window = m.land_step(c, passes, pushed=pushed)
            landed = [x for x in window if m.tasks[x].status == ref.DONE]
            if landed:  # the server knows the tip from its own landing: prefix k's commit
                m.tip = (tip + len(landed)) % len(TIPS)
            return window

        def real_fn() -> dict[str, Any]:
            return self._land_step(c, passes, pushed=pushed, tip=tip)

        self.step(f"land_step(pushed={pushed})", c, model_fn, real_fn, where="queue")

    def _land_step(self, c: ref.Caller, passes: list[bool], *, pushed: bool, tip: int) -> dict[str, Any]:
        """The verifier's side of one landing step, through the services: start, the evidence of
        each prefix (its check passing or not, its criteria's evidence), the push's answer."""
        work = landing.start_step(self.ctx, self.act(c), PROJECT)
        prefixes = []
        for n, t in enumerate(work["tasks"]):
            ok = passes[n % len(passes)]
            results = {
                x["id"]: CriterionResult(
                    result=Evidence.PASS if ok else Evidence.FAIL,
                    detail="ran",
                    source=_source(x["kind"], x["verify_ref"]),
                )
                for x in t["criteria"]
            }
            prefixes.append(
                landing.Prefix(
                    task_id=t["task_id"],
                    head=TIPS[(tip + 1 + n) % len(TIPS)],
                    tree=f"{n + 1:02x}" * 20,
                    checks={"unit": CheckResult(exit_code=0 if ok else 1, output_tail="")},
                    results=results,
                )
            )
            if not ok:
                break
        step = landing.record_evidence(
            self.ctx, self.act(c), PROJECT, work["run_id"],
            landing.Evidence(branch="main", tip=TIPS[tip], prefixes=tuple(prefixes)),
        )  # fmt: skip
        if step.phase == "pushing" and step.push is not None:
            step = landing.record_push(
                self.ctx, self.act(c), PROJECT, work["run_id"], head=step.push, pushed=pushed,
                why=None if pushed else "not a fast-forward",
            )  # fmt: skip
        return step.model_dump(mode="json")

    # ---- rules: time and reads -----------------------------------------------------------

    @rule(minutes=st.sampled_from(ADVANCE))
    def advance(self, minutes: int) -> None:
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        if self._begin(f"advance {minutes} min"):
            self.clock.advance(minutes=minutes)
            self.model.advance(minutes)
            self.compare(f"advance({minutes})")

    @rule(
        action=st.sampled_from(LOOK_ACTIONS),
        who=st.sampled_from(WHO_READ),
        i=task_ix,
        focus=focus_,
        status=st.sampled_from(LIST_STATUSES),
    )
    def look(self, action: str, who: str, i: int, focus: bool, status: str | None) -> None:
        if self.diverged:
            return  # this example ended at a divergence (record mode)
        c = _caller(who)
        if action == "sweep":
            self.step("sweep", None, lambda m: m.close_overdue_runs(), lambda: sweeper.sweep(self.ctx))
            if not self.diverged:
                self.model.settled()
                self.compare("sweep (every lapsed lease written)")
        elif action == "get_task":
            self._get_task(c, self.pick(i, focus, "claimed"))
        else:
            self._list_tasks(c, status)

    def _get_task(self, c: ref.Caller, t: int) -> None:
        """A read shows the logical state: a lapsed lease is expired, sweep or not."""
        out = self.step(
            "get_task",
            c,
            lambda m: m.read_task(c, t),
            lambda: tasks.get(self.ctx, self.act(c), self.tid(t)),
            target=t,
        )
        if out is None:
            return
        mt, rt = out
        holder = rt.claim.actor.removeprefix("agent:") if rt.claim is not None else None
        want = (mt.status, mt.used, mt.claim.key if mt.claim is not None else None)
        got = (rt.status.value, rt.attempts_used, holder)
        if want != got:
            self._diverge(
                f"get_task: shows {got[0]} where the model has {want[0]}",
                f"task {rt.id}: {want} vs {got}",
            )

    def _list_tasks(self, c: ref.Caller, status: str | None) -> None:
        out = self.step(
            f"list_tasks({status})",
            c,
            lambda m: m.list_tasks(c, status),
            lambda: tasks.list_tasks(
                self.ctx, self.act(c), PROJECT, status=Status(status) if status else None, limit=50
            ),
        )
        if out is None:
            return
        want = {self.task_ids[x]: self.model.tasks[x].status for x in out[0]}
        got = {t.id: t.status.value for t in out[1][0]}
        if want != got:
            diff = set(want.items()) ^ set(got.items())
            lapsed = any(self.model.tasks[self.task_ids.index(x)].lapsed_from for x, _ in diff)
            self._diverge(
                f"list_tasks({status}): differs from the model{' on a lapsed lease' if lapsed else ''}",
                f"model only {sorted(set(want.items()) - set(got.items()))}, "
                f"real only {sorted(set(got.items()) - set(want.items()))}",
            )


def machine_for(adapter: str, *, strict: bool, recorder: Recorder | None = None) -> type[ModelMachine]:
    return type(
        f"ModelMachine_{adapter}",
        (ModelMachine,),
        {"adapter": adapter, "strict": strict, "recorder": recorder or Recorder()},
    )
