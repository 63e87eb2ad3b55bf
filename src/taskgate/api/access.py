"""Who may call each REST route: declared once, on the route, and enforced in one place.

The REST API serves humans (the board, the CLI) and verifiers. Agents work over MCP, so an
agent key is refused on every route here, even on reads the service layer would allow it.
Each route names exactly one kind of caller (`Access`); `taskgate.api.handler` authenticates
the request and checks that kind before the route, its request validation or any service runs.
The route table (`ROUTES`) is what the authorization-matrix test is generated from.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import VerifierKind
from taskgate.domain.principals import Acting, Principal, PrincipalKind, acting

F = TypeVar("F", bound=Callable[..., Any])


class Access(StrEnum):
    PUBLIC = "public"  # no credential needed: health, the OpenAPI document and its UI
    HUMAN = "human"  # human:<name>: the local admin token, or a Cognito user's JWT claims
    LOCAL_VERIFIER = "local_verifier"  # a verifier key of kind local: runs checks
    REVIEWER = "reviewer"  # a verifier key of kind reviewer: judges review criteria


def caller_kind(p: Principal) -> str:
    """The kind of caller a principal is, in the vocabulary of `Access` (plus "agent")."""
    if p.kind is PrincipalKind.HUMAN:
        return Access.HUMAN.value
    if p.kind is PrincipalKind.VERIFIER:
        return (Access.LOCAL_VERIFIER if p.verifier_kind is VerifierKind.LOCAL else Access.REVIEWER).value
    return "agent"


def admits(access: Access, p: Principal | None) -> bool:
    if access is Access.PUBLIC:
        return True
    return p is not None and caller_kind(p) == access.value


def forbidden(access: Access, p: Principal) -> TaskgateError:
    what = {
        Access.HUMAN: "a human (the board's admin token or a signed-in user)",
        Access.LOCAL_VERIFIER: "a local verifier key",
        Access.REVIEWER: "a reviewer verifier key",
    }.get(access, access.value)
    return TaskgateError(ErrorCode.FORBIDDEN, f"this endpoint is for {what}; {p.actor} may not call it")


# Powertools' pattern for a <param> segment (api_gateway._NAMED_GROUP_BOUNDARY_PATTERN), so our
# match agrees with its routing; the guard middleware re-checks whatever route it picked anyway.
_PARAM_CHARS = r"[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]+"
_PARAM = re.compile(r"<(\w+)>")


@dataclass(frozen=True)
class RouteSpec:
    method: str
    path: str  # Powertools rule, e.g. /api/tasks/<task_id>
    access: Access
    func: Callable[..., Any]
    summary: str = ""
    status: int = 200
    tags: tuple[str, ...] = ()
    has_body: bool = False
    include_in_schema: bool = True
    regex: re.Pattern[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        pattern = _PARAM.sub(lambda m: f"(?P<{m.group(1)}>{_PARAM_CHARS})", self.path)
        object.__setattr__(self, "regex", re.compile(f"^{pattern}$"))

    @property
    def openapi_path(self) -> str:
        return _PARAM.sub(lambda m: "{" + m.group(1) + "}", self.path)

    @property
    def key(self) -> tuple[str, str]:
        return (self.method, self.openapi_path)


ROUTES: list[RouteSpec] = []


def route(
    method: str,
    path: str,
    access: Access,
    *,
    summary: str,
    status: int = 200,
    tags: tuple[str, ...] = (),
    body: bool = False,
    include_in_schema: bool = True,
) -> Callable[[F], F]:
    """Declare a route and who may call it. `body`: the route takes a JSON request body."""

    def register(func: F) -> F:
        ROUTES.append(
            RouteSpec(
                method=method,
                path=path,
                access=access,
                func=func,
                summary=summary,
                status=status,
                tags=tags,
                has_body=body,
                include_in_schema=include_in_schema,
            )
        )
        return func

    return register


def match(method: str, path: str) -> RouteSpec | None:
    """The route a request goes to, static paths before parameterised ones (as Powertools does)."""
    candidates = [r for r in ROUTES if r.method == method and r.regex.match(path)]
    static = [r for r in candidates if "<" not in r.path]
    ordered = static or candidates
    return ordered[0] if ordered else None


def by_key(method: str, openapi_path: str) -> RouteSpec | None:
    return next((r for r in ROUTES if r.key == (method, openapi_path)), None)


# The authenticated principal of the request being handled (set by the handler).
_CALLER: ContextVar[Principal | None] = ContextVar("taskgate_api_caller", default=None)


def set_caller(p: Principal | None) -> None:
    _CALLER.set(p)


def current_principal() -> Principal | None:
    return _CALLER.get()


def caller() -> Acting:
    """Who is calling this route; identity comes from the credential only."""
    p = _CALLER.get()
    if p is None:
        raise TaskgateError(ErrorCode.UNAUTHORIZED, "missing 'Authorization: Bearer <key>'")
    return acting(p)
