"""Who is asking. Identity always comes from the credential, never from an argument."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import ACTOR_RE, AgentRole, VerifierKind


class Via(StrEnum):
    """How a human's decision reached the server, from what the server itself can tell (the
    credential and how it was issued), never from what a client says about itself, except the
    one line between a person at the CLI's terminal and a script, which only the CLI can see."""

    BOARD = "board"  # a board session: issued by the board's sign-in (local link, or Cognito's hosted UI)
    TERMINAL = "terminal"  # a human token whose CLI says a person at its controlling terminal confirmed
    SCRIPT = "script"  # a human token with no person vouched for: a script's --yes, a raw API call
    DELEGATED = "delegated"  # an agent key acting on_behalf_of a human who delegated to it


VIA_SAID = {
    Via.BOARD: "at the board",
    Via.TERMINAL: "at a terminal",
    Via.SCRIPT: "by a script",
    Via.DELEGATED: "delegated to an agent",
}
# The header the CLI sends with a human's token: "terminal" once its person confirmed at the
# controlling terminal, "script" with --yes. No value of it makes a request the board's.
PRESENCE_HEADER = "X-Taskgate-Presence"


def via_claimed(value: str | None) -> Via:
    """What a human token's request says of itself in PRESENCE_HEADER: a person at a terminal,
    or (absent, or "script") a script."""
    said = (value or "").strip().lower()
    if said in ("", Via.SCRIPT.value):
        return Via.SCRIPT
    if said == Via.TERMINAL.value:
        return Via.TERMINAL
    raise TaskgateError(
        ErrorCode.VALIDATION,
        f"{PRESENCE_HEADER} is 'terminal' or 'script', not {said[:40]!r}: the board is known by "
        "its sign-in, and a delegation by the agent's key, never by this header",
    )


class PrincipalKind(StrEnum):
    HUMAN = "human"
    AGENT = "agent"
    VERIFIER = "verifier"


@dataclass(frozen=True)
class Principal:
    kind: PrincipalKind
    name: str
    credential_id: str
    role: AgentRole | None = None
    verifier_kind: VerifierKind | None = None
    projects: tuple[str, ...] = ()  # empty: all projects
    delegations: tuple[str, ...] = ()
    via: Via | None = None  # a human's: how this request reached the server (Via)

    @property
    def actor(self) -> str:
        return actor_of(self.kind.value, self.name)

    def may_use_project(self, project: str) -> bool:
        return not self.projects or project in self.projects


@dataclass(frozen=True)
class Acting:
    """A principal, possibly acting for a human who delegated to its key."""

    principal: Principal
    on_behalf_of: str | None = None
    _checked: bool = field(default=False, repr=False)

    @property
    def actor(self) -> str:
        return self.principal.actor

    @property
    def credential_id(self) -> str:
        return self.principal.credential_id

    @property
    def is_human(self) -> bool:
        return self.principal.kind is PrincipalKind.HUMAN or self.on_behalf_of is not None

    @property
    def is_delegated(self) -> bool:
        return self.on_behalf_of is not None

    @property
    def via(self) -> Via:
        """How this decision was made: delegated when an agent acts for a human, else what the
        request's credential established, a script when it established nothing."""
        if self.on_behalf_of is not None:
            return Via.DELEGATED
        return self.principal.via or Via.SCRIPT


def human(name: str, credential_id: str = "admin") -> Principal:
    return Principal(PrincipalKind.HUMAN, name, credential_id)


def actor_of(kind: str, name: str) -> str:
    """The one stored form of an actor id, however the name was given (`serve --admin-name
    Tester`, a delegation to `human:tester`): lowercase, so one person has one spelling."""
    return f"{kind.strip().lower()}:{name.strip().lower()}"


def actor_id(named: str) -> str:
    """An actor id as a caller may write it, in its one stored form ('Bob', 'agent:Bob' and
    'agent:bob' are one agent); a bare name is an agent's."""
    kind, colon, name = named.partition(":")
    return actor_of(kind, name) if colon else actor_of("agent", named)


def acting(principal: Principal, on_behalf_of: str | None = None, claimed_actor: str | None = None) -> Acting:
    """Resolve who acts. `claimed_actor` is any actor id an argument named; it must be the caller."""
    if claimed_actor is not None:
        claimed_actor = actor_id(claimed_actor)
    if on_behalf_of is not None:
        on_behalf_of = on_behalf_of.strip().lower()
    if claimed_actor is not None and claimed_actor != principal.actor:
        raise TaskgateError(
            ErrorCode.IDENTITY_MISMATCH,
            f"you are {principal.actor}; an argument named {claimed_actor}",
        )
    if on_behalf_of is None:
        return Acting(principal)
    if not ACTOR_RE.match(on_behalf_of) or not on_behalf_of.startswith("human:"):
        raise TaskgateError(ErrorCode.VALIDATION, "on_behalf_of must be 'human:<name>'")
    if principal.kind is not PrincipalKind.AGENT or on_behalf_of not in principal.delegations:
        raise TaskgateError(
            ErrorCode.FORBIDDEN, f"{on_behalf_of} has not delegated to this key ({principal.credential_id})"
        )
    return Acting(principal, on_behalf_of)
