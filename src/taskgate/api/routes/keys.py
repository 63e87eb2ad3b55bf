"""Agent and verifier keys: minted by a human, shown once, stored as a hash, revocable."""

from __future__ import annotations

from taskgate import runtime
from taskgate.api.access import Access, caller, route
from taskgate.api.schemas import CredentialOut, KeyCreate, KeyList, KeyMinted, KeyRevoked
from taskgate.service import keys

H = Access.HUMAN
TAGS = ("keys",)


@route("GET", "/api/keys", H, summary="List agent and verifier keys (never their secrets)", tags=TAGS)
def list_keys() -> KeyList:
    return KeyList(items=[CredentialOut.of(k) for k in keys.list_keys(runtime.context(), caller())])


@route(
    "POST",
    "/api/keys",
    H,
    summary="Mint an agent key (role, projects, delegations) or a verifier key (local or reviewer)",
    status=201,
    tags=TAGS,
    body=True,
)
def create_key(body: KeyCreate) -> KeyMinted:
    minted = keys.create(
        runtime.context(),
        caller(),
        kind=body.kind,
        name=body.name,
        role=body.role,
        verifier_kind=body.verifier_kind,
        projects_=body.projects,
        delegations=body.delegations,
    )
    return KeyMinted(key=minted.secret, credential=CredentialOut.of(minted.credential))


@route(
    "POST",
    "/api/keys/<key_id>/revoke",
    H,
    summary="Revoke a key; warns when a project is left with verification on and no local key",
    tags=TAGS,
)
def revoke_key(key_id: str) -> KeyRevoked:
    cred, warnings = keys.revoke(runtime.context(), caller(), key_id)
    return KeyRevoked(credential=CredentialOut.of(cred), warnings=warnings)
