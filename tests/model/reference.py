"""A pure reference model of taskgate's rules, written from the product's design.

It is an independent oracle for the model-based test (test_stateful.py, tests/model/long_run.py):
nothing here imports taskgate, and nothing was taken from the service code. The rules come from
the design (principals, the lifecycle, verification, the verify gate; docs/architecture.md) and
the lifecycle rows the first session added on purpose (documented in domain/lifecycle.py's
table comments and its closing note):

- backlog -> blocked when a spec is approved while the task's blockers are open;
- ready|blocked -> backlog when a spec is revised (tasks wait in backlog while their spec is a draft);
- a verifier error keeps needs_verification; the third in a row lands in needs_human;
- a system move to ready for a task whose attempts are used up lands in needs_human;
- a run whose only non-passing criteria are ambiguous test refs (a spec error) lands in
  needs_human at once, using no attempt.

A task in needs_human records why (attempts used up, verifier
errors, a spec error, an escalation, a reported failure); the model keeps the same word.

Where the design is silent the model picks what a careful user would expect; each
such choice says so in a comment ("Silent:"). Some of those were settled by a divergence: the
code had made a different but reasonable choice (the order of checks, which code a resolution
that does not fit gets, revising a draft, a run's time budget), and the model took it.

Time is whole minutes from an arbitrary epoch; the machine advances the real ManualClock by the
same amounts. A claim is live while `expires > now` (the store's condition checks
`expires_at > now`).

Every action either raises `Refused` having changed nothing (except writing down what was
already over: a lapsed lease, a run past its budget), or changes the model.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

# Statuses (docs/architecture.md, "The task lifecycle").
BACKLOG = "backlog"
READY = "ready"
CLAIMED = "claimed"
NEEDS_VERIFICATION = "needs_verification"
VERIFIED = "verified"
LANDING = "landing"
DONE = "done"
BLOCKED = "blocked"
NEEDS_HUMAN = "needs_human"
CANCELLED = "cancelled"

DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_LEASE = 30
MAX_LEASE = 120
VERIFIER_ERRORS_TO_HUMAN = 3
CONFLICTS_TO_HUMAN = 3  # merge conflicts in a row
# Silent in the design: a run nobody finishes (a verifier that died) must not hold its task for
# ever. The choice made with `taskgate verify` (see service/verification.py's budget): a run
# gets every check's timeout, two more check timeouts (command criteria, reviewer) and 30
# minutes of grace; past that it is abandoned, and the next start on its task or the sweeper
# ends it as an error of the run (no attempt used, counted toward three in a row). Until one of
# them looks, its verifier may still finish it. The machine's config has one check with the
# default 15-minute timeout: 15 + 2 * 15 + 30.
RUN_BUDGET_MINUTES = 75
PRIORITY_RANGE = (0, 1000)
RISKS = ("low", "medium", "high")
RISK_RANK = {r: i for i, r in enumerate(RISKS)}


# The human moves by where they go (the lifecycle table's rows a human makes): the
# move update_task(status) makes, from the task's status to the one asked for.
HUMAN_MOVES: dict[tuple[str, str], str] = {
    (NEEDS_VERIFICATION, DONE): "accept",
    (VERIFIED, DONE): "accept",
    (NEEDS_VERIFICATION, READY): "reopen",
    (VERIFIED, READY): "reopen",
    (DONE, READY): "reopen",
    (NEEDS_HUMAN, READY): "requeue",
    (NEEDS_HUMAN, BLOCKED): "block",
    (NEEDS_HUMAN, BACKLOG): "revise_spec",
    (NEEDS_HUMAN, NEEDS_VERIFICATION): "reverify",
    (VERIFIED, LANDING): "accept",
    (LANDING, VERIFIED): "leave_queue",
    **{
        (s, CANCELLED): "cancel"
        for s in (BACKLOG, READY, CLAIMED, NEEDS_VERIFICATION, VERIFIED, LANDING, BLOCKED, NEEDS_HUMAN)
    },
}


class Refused(Exception):
    """The action is refused; any of `codes` is a right answer (each names a reason that applies).

    `settled`: what the call found already over and wrote down before refusing (a run past its
    budget), like a lapsed lease settled on access; the rest of the call changed nothing."""

    def __init__(self, codes: frozenset[str], why: str = "", settled: frozenset[int] = frozenset()) -> None:
        super().__init__(f"{'|'.join(sorted(codes))}: {why}")
        self.codes = codes
        self.why = why
        self.settled = settled

    @property
    def code(self) -> str:
        return "|".join(sorted(self.codes))


def _refuse(code: str, why: str = "") -> Refused:
    return Refused(frozenset({code}), why)


class Checks:
    """Collects every reason to refuse an action.

    Silent: the design gives each refusal a stable code but no order among several faults at
    once (a stranger asking about a task that does not exist, a bad argument on a task in the
    wrong state). The model accepts any code whose reason applies; authentication comes first
    (there is no caller without it).
    """

    def __init__(self) -> None:
        self.codes: set[str] = set()
        self.why: list[str] = []

    def need(self, ok: bool, code: str, why: str = "", *also: str) -> bool:
        """`also`: other codes that name the same reason as well (the design gives none)."""
        if not ok:
            self.codes.update((code, *also))
            self.why.append(why)
        return ok

    def done(self) -> None:
        if self.codes:
            raise Refused(frozenset(self.codes), "; ".join(self.why))


def bad_text(value: str) -> bool:
    """Text a client could never read back: a lone UTF-16 surrogate."""
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)


@dataclass
class Key:
    name: str
    kind: str  # human | agent | verifier
    role: str | None = None  # executor | architect (agents)
    vkind: str | None = None  # local | reviewer (verifiers)
    projects: tuple[str, ...] = ()  # empty: all projects
    delegations: tuple[str, ...] = ()
    revoked: bool = False


@dataclass(frozen=True)
class Caller:
    key: str
    on_behalf_of: str | None = None
    names: str | None = None  # an actor id an argument named (agent_id): it must be the caller


@dataclass
class Spec:
    label: int
    status: str  # draft | approved
    risk: str
    kinds: tuple[str, ...]  # criterion kinds
    approved_by_human: bool = False


@dataclass
class Claim:
    token: int
    key: str
    expires: int
    lease: int


@dataclass
class Run:
    label: int
    task: int
    key: str
    started: int = 0
    state: str = "running"  # running | passed | failed | error | superseded | conflict
    reverify: bool = False  # started on a verified task whose base moved


@dataclass
class Task:
    label: int
    status: str
    risk: str
    spec: int | None
    own_kinds: tuple[str, ...]
    blocked_by: list[int]
    max_attempts: int | None
    priority: int
    used: int = 0
    claims: int = 0
    claim: Claim | None = None
    # One record per claim: (how it ended, whether it used an attempt); None while open. An
    # ended attempt is never rewritten (the forward-only rule, per attempt). A submitted
    # attempt is ("submitted", False) here and its record is not compared (the machine says why).
    attempts: list[tuple[str | None, bool]] = field(default_factory=list)
    # Credentials that claimed or submitted this task: a delegated key is refused on that work.
    touched_by: set[str] = field(default_factory=set)
    submitted: bool = False
    errors_in_row: int = 0
    # Submissions in a row that did not merge onto the base: the third goes to a human. A run
    # that got through the merge, or any human move, starts the count again.
    conflicts_in_row: int = 0
    base: int | None = None  # the base tip its verdict holds for (set by a pass)
    live_run: int | None = None
    why: str | None = None  # why it went to needs_human, the last time it did
    # After a lease lapsed with no write yet: the raw record may still show the claim
    # (expiry is enforced on access; nothing obliges a write before someone looks).
    lapsed_from: tuple[str, str | None, int, int, tuple[tuple[str | None, bool], ...]] | None = None


def _need_live_claim(t: Task, token: int | None, chk: Checks) -> None:
    """A holder's write needs the token of the claim that runs now (it stops working the instant
    the claim ends)."""
    chk.need(
        t.status == CLAIMED and t.claim is not None and token is not None and t.claim.token == token,
        "E_STALE_CLAIM",
        "the claim ended",
    )


@dataclass
class Model:
    project: str = "demo"
    now: int = 0
    verification_on: bool = False
    has_config: bool = False
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    lease: int = DEFAULT_LEASE
    keys: dict[str, Key] = field(default_factory=dict)
    specs: list[Spec] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    next_token: int = 0
    tip: int | None = None  # the base branch's tip as last reported (None: never)
    # The verifier config's "accept_stale": false refuses accepting a stale verdict until the
    # re-verification has run (issue text: "refuse it until the re-verification has run").
    accept_stale: bool = True
    # The verifier config's "land": true: accepted work waits in the landing queue (in order)
    # until a landing step puts it on main.
    land: bool = False
    queue: list[int] = field(default_factory=list)
    window: int = 4

    def clone(self) -> Model:
        return copy.deepcopy(self)

    # ---- who is asking -------------------------------------------------------------------

    def _auth(self, c: Caller) -> Key:
        """Identity comes from the credential, never from an argument (docs/architecture.md, "Principals")."""
        key = self.keys[c.key]
        if key.revoked:
            raise _refuse("E_UNAUTHORIZED", "revoked key")
        own = f"{'human' if key.kind == 'human' else 'agent'}:{key.name}"
        if c.names is not None and c.names != own:
            raise _refuse("E_IDENTITY_MISMATCH", "an argument named another actor")
        if c.on_behalf_of is not None and (key.kind != "agent" or c.on_behalf_of not in key.delegations):
            raise _refuse("E_FORBIDDEN", "that human did not delegate to this key")
        return key

    def _is_human(self, c: Caller) -> bool:
        return self.keys[c.key].kind == "human" or c.on_behalf_of is not None

    def _start(self, c: Caller) -> tuple[Key, Checks]:
        """Authenticate, then open the list of reasons with the project scope of the key."""
        key = self._auth(c)
        chk = Checks()
        chk.need(
            not key.projects or self.project in key.projects, "E_FORBIDDEN", "key does not cover the project"
        )
        return key, chk

    def _humans(self, c: Caller, chk: Checks, *, board_only: bool = False) -> None:
        """Humans, and agents a human delegated to (except for the board-only switches)."""
        if board_only:
            chk.need(self.keys[c.key].kind == "human", "E_FORBIDDEN", "board only")
        else:
            chk.need(self._is_human(c), "E_FORBIDDEN", "humans only")

    def _find(self, label: int, chk: Checks) -> Task | None:
        return (
            self.tasks[label]
            if chk.need(0 <= label < len(self.tasks), "E_NOT_FOUND", "no such task")
            else None
        )

    def _find_spec(self, label: int, chk: Checks) -> Spec | None:
        return (
            self.specs[label]
            if chk.need(0 <= label < len(self.specs), "E_NOT_FOUND", "no such spec")
            else None
        )

    def _max(self, t: Task) -> int:
        return t.max_attempts if t.max_attempts is not None else self.max_attempts

    def _spec_draft(self, t: Task) -> bool:
        return t.spec is not None and self.specs[t.spec].status == "draft"

    def _open_blockers(self, t: Task) -> list[int]:
        return [b for b in t.blocked_by if self.tasks[b].status != DONE]

    def _touch(self, t: Task) -> None:
        t.lapsed_from = None

    def _end_claim(self, t: Task, ending: str, used: bool) -> None:
        assert t.claim is not None and t.attempts and t.attempts[-1][0] is None
        t.attempts[-1] = (ending, used)
        t.claim = None

    # ---- moves ---------------------------------------------------------------------------

    def _supersede(self, t: Task) -> None:
        if t.live_run is not None:
            self.runs[t.live_run].state = "superseded"
            t.live_run = None

    def _to_ready(self, t: Task, *, uses_attempt: bool, system: bool) -> None:
        """A move "to ready" (the lifecycle table): the last attempt, or a system move with the
        attempts used up, lands in needs_human; a task whose spec is a draft waits in backlog."""
        if uses_attempt:
            t.used += 1
        if (uses_attempt or system) and t.used >= self._max(t):
            self._to_human(t, "attempts_used_up")
        elif self._spec_draft(t):
            # Silent: the design says tasks wait in backlog while their spec is a draft; a claim
            # that ends under a revised spec must not put the task in the queue.
            t.status = BACKLOG
        else:
            t.status = READY

    def _blockers_done(self) -> None:
        """When a task reaches done, blocked tasks whose blockers are all done move to ready."""
        for t in self.tasks:
            if t.status == BLOCKED and not self._open_blockers(t):
                self._touch(t)
                self._to_ready(t, uses_attempt=False, system=True)

    def expire(self) -> list[int]:
        """Expiry on every access: a lapsed lease ends its attempt (used) whether or not a sweep ran."""
        lapsed = []
        for t in self.tasks:
            if t.status == CLAIMED and t.claim is not None and t.claim.expires <= self.now:
                before = (CLAIMED, t.claim.key, t.used, t.claims, tuple(t.attempts))
                self._end_claim(t, "expired", True)
                self._to_ready(t, uses_attempt=True, system=False)
                t.lapsed_from = before
                lapsed.append(t.label)
        return lapsed

    def settled(self) -> None:
        """Every lapsed lease has been written (after a sweep)."""
        for t in self.tasks:
            t.lapsed_from = None

    def advance(self, minutes: int) -> None:
        self.now += minutes
        self.expire()

    # ---- projects, verification, keys ----------------------------------------------------

    def set_max_attempts(self, c: Caller, n: int) -> None:
        _, chk = self._start(c)
        self._humans(c, chk)
        chk.need(n >= 1, "E_VALIDATION", "max_attempts >= 1")
        chk.done()
        self.max_attempts = n

    def set_verifier_config(
        self, c: Caller, *, valid: bool, accept_stale: bool = True, land: bool = False
    ) -> None:
        _, chk = self._start(c)
        self._humans(c, chk, board_only=True)
        chk.need(valid, "E_VALIDATION", "bad config")
        chk.done()
        self.has_config = True
        self.accept_stale = accept_stale
        self.land = land

    def lands(self) -> bool:
        return self.verification_on and self.has_config and self.land

    def _live_local_key(self) -> bool:
        return any(
            k.kind == "verifier"
            and k.vkind == "local"
            and not k.revoked
            and (not k.projects or self.project in k.projects)
            for k in self.keys.values()
        )

    def set_verification(self, c: Caller, on: bool) -> None:
        _, chk = self._start(c)
        self._humans(c, chk, board_only=True)
        # Silent on the code: the board "says what is missing" (a live local key, a config).
        chk.need(
            not on or (self._live_local_key() and self.has_config),
            "E_VALIDATION",
            "verification needs a live local key and a config",
        )
        chk.done()
        self.verification_on = on

    def mint_key(self, c: Caller, key: Key) -> None:
        _, chk = self._start(c)
        self._humans(c, chk, board_only=True)
        chk.done()
        self.keys[key.name] = key

    def revoke_key(self, c: Caller, name: str) -> None:
        _, chk = self._start(c)
        self._humans(c, chk, board_only=True)
        key = self.keys[name]
        chk.need(not key.revoked, "E_WRONG_STATE", "already revoked")
        chk.done()
        key.revoked = True
        # "revoke it in the Verifiers tab and runs under it end as errors".
        for t in self.tasks:
            if t.live_run is not None and self.runs[t.live_run].key == name:
                self._touch(t)
                self._verifier_error(t)

    # ---- specs ---------------------------------------------------------------------------

    def create_spec(self, c: Caller, *, risk: str, kinds: tuple[str, ...], title: str) -> int:
        key, chk = self._start(c)
        # The design names approval (low risk) as the architect's only extra right; a
        # draft by any agent waits for an approval.
        chk.need(key.kind != "verifier", "E_FORBIDDEN", "verifiers do not write specs")
        chk.need(not bad_text(title), "E_VALIDATION", "bad text")
        chk.need(bool(kinds), "E_EMPTY_CRITERIA", "a spec needs criteria")
        chk.done()
        self.specs.append(Spec(len(self.specs), "draft", risk, kinds))
        return len(self.specs) - 1

    def _spec_tasks(self, s: Spec) -> list[Task]:
        return [t for t in self.tasks if t.spec == s.label]

    def _set_spec_risk(self, s: Spec, risk: str) -> None:
        s.risk = risk
        for t in self._spec_tasks(s):
            if t.status not in (DONE, CANCELLED):
                t.risk = risk

    def update_spec(self, c: Caller, label: int, *, risk: str | None) -> None:
        key, chk = self._start(c)
        chk.need(key.kind != "verifier", "E_FORBIDDEN", "verifiers do not edit specs")
        s = self._find_spec(label, chk)
        if s is not None:
            chk.need(s.status == "draft", "E_WRONG_STATE", "an approved spec is revised, not edited")
            if risk is not None and RISK_RANK[risk] < RISK_RANK[s.risk]:
                # Lowering risk is a human action; an agent may only raise it
                # (a delegated agent too: like approving medium or high risk, it is for the board).
                chk.need(self.keys[c.key].kind == "human", "E_FORBIDDEN", "only a human lowers risk")
        chk.done()
        assert s is not None
        if risk is not None:
            self._set_spec_risk(s, risk)

    def approve_spec(self, c: Caller, label: int) -> None:
        key, chk = self._start(c)
        human = self._is_human(c)
        chk.need(human or key.role == "architect", "E_FORBIDDEN", "executors cannot approve")
        s = self._find_spec(label, chk)
        if s is not None:
            chk.need(s.status == "draft", "E_WRONG_STATE", "already approved")
            # An architect approves low risk only; medium and high need a human in the UI
            # (delegated agents: low only, like accept).
            chk.need(
                s.risk == "low" or (human and c.on_behalf_of is None),
                "E_FORBIDDEN",
                "medium/high risk needs a human",
            )
        chk.done()
        assert s is not None
        s.status = "approved"
        s.approved_by_human = human
        for t in self._spec_tasks(s):
            if t.status == BACKLOG:
                # No _touch: a cascade picks tasks by their recorded status, so a lapsed claim
                # it does not see stays as recorded until someone looks (then it lands where
                # the spec says).
                if self._open_blockers(t):
                    t.status = BLOCKED
                else:
                    self._to_ready(t, uses_attempt=False, system=True)

    def revise_spec(self, c: Caller, label: int, *, risk: str | None) -> None:
        _, chk = self._start(c)
        self._humans(c, chk)
        s = self._find_spec(label, chk)
        if s is not None and risk is not None and RISK_RANK[risk] < RISK_RANK[s.risk]:
            chk.need(self.keys[c.key].kind == "human", "E_FORBIDDEN", "only a human lowers risk")
        chk.done()
        assert s is not None
        if s.status == "draft":
            # Silent: revising a draft is an edit (it stays a draft; a human may set any risk).
            if risk is not None:
                self._set_spec_risk(s, risk)
            return
        self._revise(s, risk)

    def _revise(self, s: Spec, risk: str | None) -> None:
        s.status = "draft"
        s.approved_by_human = False
        if risk is not None:
            self._set_spec_risk(s, risk)
        for t in self._spec_tasks(s):
            if t.status in (READY, BLOCKED):
                t.status = BACKLOG  # no _touch: see approve_spec

    # ---- tasks ---------------------------------------------------------------------------

    def create_task(
        self,
        c: Caller,
        *,
        spec: int | None,
        own_kinds: tuple[str, ...],
        blocked_by: list[int],
        max_attempts: int | None,
        priority: int,
        risk: str | None,
        title: str,
    ) -> int:
        key, chk = self._start(c)
        chk.need(key.kind != "verifier", "E_FORBIDDEN", "verifiers do not create tasks")
        chk.need(not bad_text(title), "E_VALIDATION", "bad text")
        chk.need(PRIORITY_RANGE[0] <= priority <= PRIORITY_RANGE[1], "E_VALIDATION", "priority")
        chk.need(max_attempts is None or max_attempts >= 1, "E_VALIDATION", "max_attempts")
        chk.need(spec is not None or bool(own_kinds), "E_EMPTY_CRITERIA", "no criteria")
        s = self._find_spec(spec, chk) if spec is not None else None
        for b in blocked_by:
            self._find(b, chk)
        chk.done()
        label = len(self.tasks)
        t = Task(
            label,
            BACKLOG,
            s.risk if s is not None else (risk or "low"),
            spec,
            own_kinds,
            list(blocked_by),
            max_attempts,
            priority,
        )
        self.tasks.append(t)
        if s is not None and s.status == "draft":
            t.status = BACKLOG
        elif self._open_blockers(t):
            t.status = BLOCKED
        else:
            t.status = READY
        return label

    def _claim_checks(self, c: Caller, lease: int | None) -> Checks:
        key, chk = self._start(c)
        chk.need(key.kind == "agent" and c.on_behalf_of is None, "E_FORBIDDEN", "agents claim")
        chk.need(lease is None or 1 <= lease <= MAX_LEASE, "E_VALIDATION", "lease")
        return chk

    def ready_candidates(self, c: Caller, lease: int | None) -> list[Task]:
        """claim_task without an id: the ready tasks; the server picks one of the highest
        priority (the machine checks which)."""
        chk = self._claim_checks(c, lease)
        ready = [t for t in self.tasks if t.status == READY]
        chk.need(bool(ready), "E_NOTHING_READY", "nothing ready")
        chk.done()
        return ready

    def claim(self, c: Caller, label: int, lease: int | None) -> int:
        chk = self._claim_checks(c, lease)
        t = self._find(label, chk)
        if t is not None:
            chk.need(t.status == READY, "E_WRONG_STATE", "not ready")
        chk.done()
        assert t is not None
        self._touch(t)
        self.next_token += 1
        minutes = lease if lease is not None else self.lease
        t.claim = Claim(self.next_token, c.key, self.now + minutes, minutes)
        t.status = CLAIMED
        t.claims += 1
        t.attempts.append((None, False))
        t.touched_by.add(c.key)
        return self.next_token

    def _holder(self, c: Caller, label: int, token: int | None, chk: Checks, ending: str, used: bool) -> Task:
        """The token is the authority for every write after the claim; it stops working the
        instant the claim ends (release, failure, expiry, submit, cancel)."""
        t = self._find(label, chk)
        if t is not None:
            _need_live_claim(t, token, chk)
        chk.done()
        assert t is not None
        self._touch(t)
        self._end_claim(t, ending, used)
        return t

    def heartbeat(self, c: Caller, label: int, token: int | None) -> None:
        _, chk = self._start(c)
        t = self._find(label, chk)
        if t is not None:
            _need_live_claim(t, token, chk)
        chk.done()
        assert t is not None and t.claim is not None
        self._touch(t)
        t.claim.expires = self.now + t.claim.lease

    def release(self, c: Caller, label: int, token: int | None) -> None:
        _, chk = self._start(c)
        t = self._holder(c, label, token, chk, "released", False)
        self._to_ready(t, uses_attempt=False, system=False)

    def report_failure(
        self, c: Caller, label: int, token: int | None, *, kind: str, findings: bool, blocked_by: list[int]
    ) -> None:
        _, chk = self._start(c)
        chk.need(findings, "E_VALIDATION", "findings")
        chk.need(kind != "dependency" or bool(blocked_by), "E_VALIDATION", "blocked_by")
        chk.need(label not in blocked_by, "E_VALIDATION", "blocks itself")
        for b in blocked_by:
            self._find(b, chk)
        t = self._holder(c, label, token, chk, "failed", True)
        if kind == "other":
            self._to_ready(t, uses_attempt=True, system=False)
        elif kind == "dependency":
            t.used += 1
            # Silent: blocked by these as well as by what it already waited for.
            t.blocked_by = sorted(set(t.blocked_by) | set(blocked_by))
            t.status = BLOCKED
        else:  # spec_gap, design_conflict
            t.used += 1
            self._to_human(t, "reported_failure")

    def escalate(self, c: Caller, label: int, token: int | None, *, question: bool) -> None:
        _, chk = self._start(c)
        chk.need(question, "E_VALIDATION", "question")
        t = self._holder(c, label, token, chk, "escalated", False)
        self._to_human(t, "escalated")

    def submit(self, c: Caller, label: int, token: int | None, *, evidence: bool, sha_ok: bool) -> None:
        _, chk = self._start(c)
        chk.need(evidence and sha_ok, "E_VALIDATION", "evidence / commit")
        t = self._holder(c, label, token, chk, "submitted", False)
        t.status = NEEDS_VERIFICATION
        t.submitted = True
        t.errors_in_row = 0
        t.touched_by.add(c.key)

    def edit_criteria(self, c: Caller, label: int, *, own_kinds: tuple[str, ...] | None) -> None:
        """update_task(criteria | spec_criteria). The design: "A task's criteria and risk
        are fixed once work can start on them: only a human (or an architect, while the spec is a
        draft) changes them." `own_kinds`: new criteria of the task's own; None: which of its
        spec's criteria it holds (the machine names them all, so what is verified stays the same)."""
        key, chk = self._start(c)
        chk.need(key.kind != "verifier", "E_FORBIDDEN", "verifiers do not edit tasks")
        delegated = c.on_behalf_of is not None
        human = key.kind == "human"
        architect = key.kind == "agent" and key.role == "architect" and not delegated
        # Silent on delegation: a delegated key may claim the task next, so criteria stay with
        # the human on the board, like lowering a spec's risk.
        chk.need(human or architect, "E_FORBIDDEN", "criteria: a human, or an architect on a draft")
        t = self._find(label, chk)
        if t is not None:
            chk.need(
                t.status in (BACKLOG, READY, BLOCKED, NEEDS_HUMAN),
                "E_WRONG_STATE",
                "someone is working on it",
            )
            if architect:
                chk.need(self._spec_draft(t), "E_FORBIDDEN", "its spec is approved, or it has none")
            if own_kinds is not None:
                chk.need(bool(own_kinds), "E_EMPTY_CRITERIA", "a task keeps a criterion")
        chk.done()
        assert t is not None
        self._touch(t)
        if own_kinds is not None:
            t.own_kinds = own_kinds

    def set_status(
        self, c: Caller, label: int, target: str, *, findings: bool, blocked_by: list[int], note: bool
    ) -> None:
        """Agents can't write status; only a human can, through update_task or the
        board, and an agent a human delegated to with on_behalf_of. The status names the move."""
        _, chk = self._start(c)
        chk.need(self._is_human(c), "E_FORBIDDEN", "agents do not write status")
        t = self._find(label, chk)
        how = HUMAN_MOVES.get((t.status, target)) if t is not None else None
        if t is not None:
            chk.need(how is not None, "E_WRONG_STATE", "no human move goes there")
        if how is not None:
            # Silent: arguments of another move are a mistake to point out, not to ignore.
            chk.need(not findings or how == "reopen", "E_VALIDATION", "findings go with a reopen")
            chk.need(not blocked_by or how == "block", "E_VALIDATION", "blocked_by goes with block")
            chk.need(not note or how not in ("accept", "reopen"), "E_VALIDATION", "no note here")
        chk.done()
        if how == "accept":
            self.accept(c, label)
        elif how == "leave_queue":
            self.leave_queue(c, label)
        elif how == "reopen":
            self.reopen(c, label, findings=findings)
        elif how == "cancel":
            self.cancel(c, label)
        else:
            assert how is not None
            self.resolve(c, label, how, blocked_by=blocked_by)

    # ---- humans: accept, reopen, cancel, resolve -----------------------------------------

    def _own_work(self, c: Caller, t: Task) -> bool:
        return c.on_behalf_of is not None and c.key in t.touched_by

    def _acceptable(self, t: Task) -> bool:
        return t.status == VERIFIED or (t.status == NEEDS_VERIFICATION and not self.verification_on)

    def _accept_checks(self, c: Caller, label: int, *, batch: bool) -> Task:
        _, chk = self._start(c)
        self._humans(c, chk)
        t = self._find(label, chk)
        if t is not None:
            # "An agent can never accept its own work ... whatever actor id that session uses."
            chk.need(not self._own_work(c, t), "E_SELF_ACCEPT", "own work")
            if not self._is_human(c) and c.key in t.touched_by:
                chk.need(False, "E_FORBIDDEN", "agents do not accept", "E_SELF_ACCEPT")
            chk.need(self._acceptable(t), "E_WRONG_STATE", "not acceptable")
            # Silent: the setting lives in the verifier config, so it holds with verification
            # off too (no re-verification runs then: a human reopens, or switches it back on).
            # With landing on, the landing queue re-checks a stale verdict before it lands.
            chk.need(
                self.accept_stale or not self.stale(t) or self.lands(),
                "E_WRONG_STATE",
                "stale, re-verify first",
            )
            # Low-risk work in batches or from chat; medium and high one by one in the UI. The
            # risk is the spec's as it is now, even for a task whose own copy no longer follows
            # it (done or cancelled).
            risk = self.specs[t.spec].risk if t.spec is not None else t.risk
            chk.need(
                risk == "low" or not (batch or c.on_behalf_of is not None),
                "E_FORBIDDEN",
                "medium/high risk is accepted one by one by a human",
            )
        chk.done()
        assert t is not None
        return t

    def accept(self, c: Caller, label: int, *, batch: bool = False) -> None:
        t = self._accept_checks(c, label, batch=batch)
        self._touch(t)
        self._supersede(t)
        t.conflicts_in_row = 0
        if t.status == VERIFIED and self.lands():
            # Accepted is not done: it waits at the end of the landing queue, and tasks blocked by
            # it wait until it has landed.
            t.status = LANDING
            self.queue.append(t.label)
            return
        t.status = DONE
        self._blockers_done()

    def accept_batch(self, c: Caller, labels: list[int]) -> dict[int, frozenset[str] | None]:
        """Each task accepted or refused on its own; the answer maps each to None or its codes.
        A batch names tasks, not a project: the key's project scope is checked per task."""
        self._auth(c)
        chk = Checks()
        chk.need(bool(labels), "E_VALIDATION", "no tasks")
        chk.done()
        out: dict[int, frozenset[str] | None] = {}
        for label in labels:
            try:
                self.accept(c, label, batch=True)
                out[label] = None
            except Refused as r:
                out[label] = r.codes
        return out

    def _human_on_task(self, c: Caller, label: int, chk: Checks) -> Task | None:
        self._humans(c, chk)
        t = self._find(label, chk)
        if t is not None:
            # A delegated agent is refused on work its key claimed or submitted.
            # Silent on the code: E_SELF_ACCEPT is the one the design names for own work.
            chk.need(not self._own_work(c, t), "E_SELF_ACCEPT", "own work")
        return t

    def reopen(self, c: Caller, label: int, *, findings: bool) -> None:
        _, chk = self._start(c)
        chk.need(findings, "E_VALIDATION", "findings")
        t = self._human_on_task(c, label, chk)
        if t is not None:
            chk.need(
                t.status in (VERIFIED, DONE) or (t.status == NEEDS_VERIFICATION and not self.verification_on),
                "E_WRONG_STATE",
                "cannot reopen",
            )
        chk.done()
        assert t is not None
        self._touch(t)
        self._supersede(t)
        t.conflicts_in_row = 0
        # Reopening submitted work (needs_verification, verified) uses an attempt; reopening done
        # work does not: the design's lifecycle table marks the first two rows and leaves
        # done -> ready blank (the table wins over an older "a reopen uses an attempt").
        self._to_ready(t, uses_attempt=t.status != DONE, system=False)

    def cancel(self, c: Caller, label: int) -> None:
        _, chk = self._start(c)
        t = self._human_on_task(c, label, chk)
        if t is not None:
            chk.need(t.status not in (DONE, CANCELLED), "E_WRONG_STATE", "done or cancelled")
        chk.done()
        assert t is not None
        self._touch(t)
        self._supersede(t)
        t.conflicts_in_row = 0
        if t.claim is not None:
            self._end_claim(t, "cancelled", False)
        if t.status == LANDING:
            self.queue.remove(t.label)
        t.status = CANCELLED

    def resolve(self, c: Caller, label: int, how: str, *, blocked_by: list[int]) -> None:
        _, chk = self._start(c)
        chk.need(how != "block" or bool(blocked_by), "E_VALIDATION", "blocked_by")
        chk.need(label not in blocked_by, "E_VALIDATION", "blocks itself")
        for b in blocked_by:
            self._find(b, chk)
        t = self._human_on_task(c, label, chk)
        if t is not None and how == "cancel":
            # Silent: resolving with cancel is a cancel (allowed from any status but done).
            chk.need(t.status not in (DONE, CANCELLED), "E_WRONG_STATE", "done or cancelled")
        elif t is not None:
            chk.need(t.status == NEEDS_HUMAN, "E_WRONG_STATE", "not needs_human")
            # Silent: a resolution that does not fit the task is its state or a bad argument.
            chk.need(how != "reverify" or t.submitted, "E_WRONG_STATE", "nothing to verify", "E_VALIDATION")
            chk.need(how != "revise_spec" or t.spec is not None, "E_WRONG_STATE", "no spec", "E_VALIDATION")
        chk.done()
        assert t is not None
        self._touch(t)
        t.conflicts_in_row = 0
        if how == "requeue":
            self._to_ready(t, uses_attempt=False, system=False)
        elif how == "block":
            t.blocked_by = sorted(set(t.blocked_by) | set(blocked_by))  # as for a dependency failure
            t.status = BLOCKED
        elif how == "revise_spec":
            assert t.spec is not None
            s = self.specs[t.spec]
            if s.status == "approved":
                self._revise(s, None)
            t.status = BACKLOG
        elif how == "reverify":
            t.errors_in_row = 0
            t.status = NEEDS_VERIFICATION
        elif how == "cancel":
            self._supersede(t)
            if t.claim is not None:
                self._end_claim(t, "cancelled", False)
            if t.status == LANDING:  # a cancel: it leaves the landing queue too
                self.queue.remove(t.label)
            t.status = CANCELLED
        else:
            raise AssertionError(how)

    # ---- verification --------------------------------------------------------------------

    def _overdue(self, t: Task) -> bool:
        return t.live_run is not None and self.now >= self.runs[t.live_run].started + RUN_BUDGET_MINUTES

    def close_overdue_runs(self) -> list[int]:
        """The sweeper's part: every run past its budget ends as an error."""
        closed = [t.label for t in self.tasks if self._overdue(t)]
        for label in closed:
            self._touch(self.tasks[label])
            self._verifier_error(self.tasks[label])
        return closed

    def verify_start(self, c: Caller, label: int) -> int:
        key, chk = self._start(c)
        chk.need(key.kind == "verifier" and key.vkind == "local", "E_FORBIDDEN", "local verifiers only")
        t = self._find(label, chk)
        chk.need(self.verification_on, "E_WRONG_STATE", "verification is off")
        if t is not None:
            chk.need(t.status == NEEDS_VERIFICATION or self.stale(t), "E_WRONG_STATE", "not waiting")
        chk.done()
        assert t is not None
        settled = frozenset({label}) if self._overdue(t) else frozenset()
        if settled:
            self._touch(t)
            self._verifier_error(t)  # an abandoned run ends as an error first
        again = Checks()
        reverify = t.status == VERIFIED
        again.need(
            t.status == NEEDS_VERIFICATION or reverify, "E_WRONG_STATE", "that error was its third in a row"
        )
        # Silent on the code: "one live run per task"; a second start is a conflict or the state.
        again.need(t.live_run is None, "E_CONFLICT", "a run is live", "E_WRONG_STATE")
        if again.codes:
            raise Refused(frozenset(again.codes), "; ".join(again.why), settled)
        self._touch(t)
        run = Run(len(self.runs), label, c.key, self.now, reverify=reverify)
        self.runs.append(run)
        t.live_run = run.label
        return run.label

    def _commands_allowed(self, t: Task) -> bool:
        """A command criterion runs only if a human approved its spec (or an architect, for low
        risk); a command an agent attached to a task on its own was approved by nobody."""
        if "command" in t.own_kinds:
            return False
        if t.spec is None:
            return True
        s = self.specs[t.spec]
        if "command" not in s.kinds:
            return True
        return s.status == "approved" and (s.approved_by_human or s.risk == "low")

    def _verifier_error(self, t: Task) -> None:
        if t.live_run is not None:
            self.runs[t.live_run].state = "error"
            t.live_run = None
        # A re-verification's error leaves the verdict as it was, but counts like any other:
        # the third in a row is a human's.
        t.errors_in_row += 1
        if t.errors_in_row >= VERIFIER_ERRORS_TO_HUMAN:
            self._to_human(t, "verifier_errors")

    def verify_finish(self, c: Caller, label: int, run_label: int, verdict: str) -> str:
        _, chk = self._start(c)
        t = self.tasks[label]
        run = self.runs[run_label]
        chk.need(run.key == c.key, "E_FORBIDDEN", "not this verifier's run")
        # Silent on the code: a run that ended (finished, superseded) is like a claim that ended.
        chk.need(run.state == "running", "E_WRONG_STATE", "run ended", "E_STALE_CLAIM")
        chk.done()
        self._touch(t)
        if not self._commands_allowed(t) and verdict != "conflict":
            # "otherwise the run ends as error", whatever the checks said (a conflict is found
            # before anything runs: merging is not verification).
            verdict = "error"
        if verdict == "error":
            self._verifier_error(t)
            return "error"
        if verdict == "spec_error" and "test" not in self._kinds(t):
            verdict = "pass"  # only a test ref can be ambiguous: every other criterion passed
        if verdict == "break" and not run.reverify:
            verdict = "fail"  # a check failed: on a first verdict, the submission's failure
        run.state = {
            "pass": "passed",
            "fail": "failed",
            "break": "failed",
            "spec_error": "spec_error",
            "conflict": "conflict",
        }[verdict]
        t.live_run = None
        t.errors_in_row = 0
        if verdict == "conflict":
            # The executor's to fix: back to ready with no attempt used; the third in a row, a human.
            t.conflicts_in_row += 1
            if t.conflicts_in_row >= CONFLICTS_TO_HUMAN:
                self._to_human(t, "merge_conflicts")
            else:
                self._to_ready(t, uses_attempt=False, system=False)
            t.base = None
            return verdict
        if run.reverify:
            return self._reverified(t, verdict)
        t.conflicts_in_row = 0
        if verdict == "pass":
            t.status = VERIFIED
            t.base = self.tip_or_first()
        elif verdict == "spec_error":
            # No executor can fix a spec: a human, at once, and the attempt stays unused (open,
            # like one waiting after verifier errors, until a human resolves the task).
            self._to_human(t, "spec_error")
        else:
            self._to_ready(t, uses_attempt=True, system=False)
        return verdict

    def _reverified(self, t: Task, verdict: str) -> str:
        """A re-verification on the moved base: a pass holds the verdict for the new tip; a
        failure of its own criteria sends it back with an attempt used; a check failing while
        every criterion passes (what the base gained broke something else with it: "break")
        sends it back with none (issue: "using an attempt only if the failure is in the task's
        own criteria"); a spec error changes nothing (the verdict stays, still stale)."""
        if verdict == "pass":
            t.conflicts_in_row = 0
            t.base = self.tip_or_first()
        elif verdict in ("fail", "break"):
            t.conflicts_in_row = 0
            t.base = None
            self._to_ready(t, uses_attempt=verdict == "fail", system=False)
        return verdict

    # ---- the landing queue ---------------------------------------------------------------

    def _queue_human(self, c: Caller, label: int) -> Task:
        """A human orders the queue: not an agent, not a delegated one."""
        _, chk = self._start(c)
        self._humans(c, chk)
        chk.need(c.on_behalf_of is None, "E_FORBIDDEN", "the queue is a human's, not a delegated agent's")
        t = self._find(label, chk)
        if t is not None:
            chk.need(t.status == LANDING, "E_WRONG_STATE", "not in the landing queue")
        chk.done()
        assert t is not None
        return t

    def leave_queue(self, c: Caller, label: int) -> None:
        t = self._queue_human(c, label)
        self._touch(t)
        self.queue.remove(label)
        t.conflicts_in_row = 0  # a human's move starts the count again
        t.status = VERIFIED

    def hotfix(self, c: Caller, label: int) -> None:
        self._queue_human(c, label)
        self.queue.remove(label)
        self.queue.insert(0, label)

    def land_step(self, c: Caller, passes: list[bool], *, pushed: bool) -> list[int]:
        """One landing step: the head window, each entry tested on top of the ones ahead
        (`passes`, by position); the longest passing prefix lands when its push goes through
        (`pushed`), the first failing entry goes back to ready with no attempt used. Returns the
        window; the new tip is the landed prefix's (see the machine)."""
        key, chk = self._start(c)
        chk.need(key.kind == "verifier" and key.vkind == "local", "E_FORBIDDEN", "local verifiers only")
        chk.need(self.lands(), "E_WRONG_STATE", "this project does not land")
        chk.need(bool(self.queue), "E_WRONG_STATE", "the queue is empty")
        chk.done()
        window = self.queue[: min(self.window, 8, len(self.queue))]
        n = 0
        while n < len(window) and passes[n % len(passes)]:
            n += 1
        culprit = window[n] if n < len(window) else None
        if n and not pushed:
            return window  # refused: nothing lands; the culprit behind it is judged again
        for label in window[:n]:
            t = self.tasks[label]
            self._touch(t)
            t.status = DONE
            self.queue.remove(label)
        if culprit is not None:
            t = self.tasks[culprit]
            self._touch(t)
            t.base = None
            self.queue.remove(culprit)
            self._to_ready(t, uses_attempt=False, system=False)
            self.window = max(1, self.window // 2)
        else:
            self.window = min(8, self.window * 2)
        if n:
            self._blockers_done()
        return window

    def tip_or_first(self) -> int:
        """The tip a verifier merges onto now: the last reported, else the first."""
        return self.tip if self.tip is not None else 0

    def stale(self, t: Task) -> bool:
        return t.status == VERIFIED and t.base is not None and self.tip is not None and t.base != self.tip

    def base_moved(self, c: Caller, tip: int) -> list[int]:
        """A local verifier (or the git host's webhook holding its key) reports main's tip."""
        key, chk = self._start(c)
        chk.need(key.kind == "verifier" and key.vkind == "local", "E_FORBIDDEN", "local verifiers only")
        chk.done()
        self.tip = tip
        return sorted((t.label for t in self.tasks if self.stale(t)), key=lambda label: label)

    def _kinds(self, t: Task) -> tuple[str, ...]:
        """The kinds of the criteria the task holds now: its spec's and its own."""
        return t.own_kinds + (self.specs[t.spec].kinds if t.spec is not None else ())

    @staticmethod
    def _to_human(t: Task, why: str) -> None:
        t.status = NEEDS_HUMAN
        t.why = why

    # ---- reads ---------------------------------------------------------------------------

    def read_task(self, c: Caller, label: int) -> Task:
        _, chk = self._start(c)
        t = self._find(label, chk)
        chk.done()
        assert t is not None
        return t

    def list_tasks(self, c: Caller, status: str | None) -> list[int]:
        _, chk = self._start(c)
        chk.done()
        return [t.label for t in self.tasks if status is None or t.status == status]
