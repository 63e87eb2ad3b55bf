"""Who is asking. Identity always comes from the credential, never from an argument."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import ACTOR_RE, AgentRole, VerifierKind


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

    @property
    def actor(self) -> str:
        return f"{self.kind.value}:{self.name}"

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


def human(name: str, credential_id: str = "admin") -> Principal:
    return Principal(PrincipalKind.HUMAN, name, credential_id)


def actor_id(named: str) -> str:
    """An actor id as a caller may write it, in its one stored form: names are lowercase
    ('Bob', 'agent:Bob' and 'agent:bob' are one agent); a bare name is an agent's."""
    name = named.strip().lower()
    return name if ":" in name else f"agent:{name}"


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
