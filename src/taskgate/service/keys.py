"""Agent and verifier keys: minted by a human, shown once, stored as a hash, revocable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from taskgate.domain.errors import ErrorCode, TaskgateError, invalid, not_found
from taskgate.domain.models import (
    ACTOR_RE,
    PROJECT_NAME_RE,
    AgentRole,
    Credential,
    CredentialKind,
    VerifierKind,
)
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting, Principal, PrincipalKind
from taskgate.service import key_cache, project_history, projects, records, secrets, verification
from taskgate.service.context import Context, event, put_event
from taskgate.store.port import Put
from taskgate.store.schema import IndexName

NAME_RE = ACTOR_RE  # reuse the actor grammar for the name part
MAX_SCOPE = 50
ALL = project_history.ALL_PROJECTS


@dataclass
class Minted:
    credential: Credential
    secret: str  # shown once; only its hash is stored


def _check_name(name: str) -> None:
    if not NAME_RE.match(f"agent:{name}"):
        raise invalid("name: lowercase letters, digits, '.', '_' and '-', up to 64 chars")


def create(
    ctx: Context,
    who: Acting,
    *,
    kind: CredentialKind,
    name: str,
    role: AgentRole | None = None,
    verifier_kind: VerifierKind | None = None,
    projects_: list[str] | None = None,
    delegations: list[str] | None = None,
) -> Minted:
    authorize(Op.MANAGE_KEYS, who)
    _check_name(name)
    scope = projects_ or []
    if len(scope) > MAX_SCOPE:
        raise invalid(f"a key names at most {MAX_SCOPE} projects; omit projects for a key that covers all")
    for p in scope:
        if not PROJECT_NAME_RE.match(p):
            raise invalid(f"project {p!r} is not a project name")
        ctx.project(p)
    if kind is CredentialKind.AGENT:
        if verifier_kind is not None:
            raise invalid("verifier_kind is for verifier keys")
        role = role or AgentRole.EXECUTOR
        delegations = [d.strip().lower() for d in delegations or []]  # one spelling per person
        for d in delegations:
            if not d.startswith("human:") or not ACTOR_RE.match(d):
                raise invalid(f"delegation {d!r} must be 'human:<name>'")
        prefix = secrets.AGENT_PREFIX
    else:
        if role is not None or delegations:
            raise invalid("role and delegations are for agent keys")
        if verifier_kind is None:
            raise invalid("a verifier key needs verifier_kind 'local' or 'reviewer'")
        prefix = secrets.VERIFIER_PREFIX
    key_id, secret = secrets.mint_key(prefix, ctx.entropy)
    now = ctx.clock.now()
    cred = Credential(
        id=key_id,
        kind=kind,
        name=name,
        role=role,
        verifier_kind=verifier_kind,
        projects=scope,
        delegations=sorted(set(delegations or [])),
        key_hash=secrets.digest(secret),
        created_by=who.actor,
        created_at=now,
    )
    ops = [Put(records.credential_item(cred))]
    # Key changes go to the history of every project the key names (every key change is recorded with who made it);
    # a key for all projects goes to project "*", which every project's history shows
    # (project_history.py: merged when read, so projects made later show it too).
    for p in scope or [ALL]:
        detail: dict[str, Any] = {
            "key": cred.id,
            "kind": kind.value,
            "name": name,
            "role": role.value if role else None,
            "verifier_kind": verifier_kind.value if verifier_kind else None,
        }
        ops.append(put_event(event(who, "key_created", project=p, at=now, **detail)))
    ctx.commit(ops)
    return Minted(cred.model_copy(update={"version": 1}), secret)


def list_keys(ctx: Context, who: Acting) -> list[Credential]:
    authorize(Op.MANAGE_KEYS, who)
    return [
        records.load(Credential, i)
        for i in ctx.all_pages(lambda c: ctx.store.query("KEYS", limit=200, cursor=c))
    ]


def revoke(ctx: Context, who: Acting, key_id: str) -> tuple[Credential, list[str]]:
    """Revoke a key. Returns warnings, e.g. a project left with verification on and no local key."""
    authorize(Op.MANAGE_KEYS, who)
    item = ctx.store.get(*records.credential_key(key_id))
    if item is None:
        raise not_found(f"key {key_id}")
    old = records.load(Credential, item)
    if not old.live:
        raise TaskgateError(ErrorCode.WRONG_STATE, f"key {key_id} is already revoked")
    now = ctx.clock.now()
    new = old.model_copy(update={"revoked_at": now, "revoked_by": who.actor})
    ops = [Put(records.credential_item(new), old.version)]
    ops += [
        put_event(event(who, "key_revoked", project=p, at=now, key=key_id)) for p in old.projects or [ALL]
    ]
    ctx.commit(ops)
    cache = key_cache.current()
    if cache is not None:
        cache.forget(key_id)  # before the answer: once revoke returns, the key is refused
    warnings = []
    if old.kind is CredentialKind.VERIFIER and old.verifier_kind is VerifierKind.LOCAL:
        covered = old.projects or ctx.project_names()
        ended = verification.end_runs_under(ctx, key_id, covered, f"verifier key {key_id} was revoked")
        if ended:
            warnings.append(f"runs in progress under this key ended as errors: {', '.join(ended)}")
        for p in covered:
            proj = ctx.project(p)
            if proj.verification_on and not projects.live_local_verifier_keys(ctx, p):
                warnings.append(
                    f"project {p}: verification is on and no live local verifier key is left; "
                    "submitted work waits until a new key is registered or verification is switched off"
                )
    return new.model_copy(update={"version": old.version + 1}), warnings


def authenticate(ctx: Context, secret: str) -> Principal:
    """The principal a bearer secret stands for, or E_UNAUTHORIZED (unknown or revoked).
    Where the key cache is on (key_cache.py), a key authenticated a moment ago is not read again."""
    if not secret.startswith((secrets.AGENT_PREFIX, secrets.VERIFIER_PREFIX)):
        raise TaskgateError(ErrorCode.UNAUTHORIZED, "not a taskgate key")
    cache = key_cache.current()
    if cache is None:
        return _authenticate(ctx, secret)
    digest = secrets.digest(secret)
    found = cache.get(id(ctx.store), digest)
    if found is not None:
        return found
    generation = cache.generation()
    principal = _authenticate(ctx, secret)
    cache.put(id(ctx.store), digest, principal, generation)
    return principal


def _authenticate(ctx: Context, secret: str) -> Principal:
    key_id = secrets.key_id_of(secret)
    if key_id is not None:
        item = ctx.store.get(*records.credential_key(key_id))
    else:  # a key in another format: find it by its hash (the LOOKUP index), then read it consistently
        page = ctx.store.query_index(IndexName.LOOKUP, records.key_hash_pk(secrets.digest(secret)), limit=1)
        item = ctx.store.get(page.items[0].pk, page.items[0].sk) if page.items else None
    if item is None:
        raise TaskgateError(ErrorCode.UNAUTHORIZED, "unknown key")
    cred = records.load(Credential, item)
    if not secrets.matches(secret, cred.key_hash):
        raise TaskgateError(ErrorCode.UNAUTHORIZED, "unknown key")
    if not cred.live:
        raise TaskgateError(ErrorCode.UNAUTHORIZED, "this key was revoked")
    if cred.kind is CredentialKind.AGENT:
        return Principal(
            PrincipalKind.AGENT,
            cred.name,
            cred.id,
            role=cred.role,
            projects=tuple(cred.projects),
            delegations=tuple(cred.delegations),
        )
    return Principal(
        PrincipalKind.VERIFIER,
        cred.name,
        cred.id,
        verifier_kind=cred.verifier_kind,
        projects=tuple(cred.projects),
    )
