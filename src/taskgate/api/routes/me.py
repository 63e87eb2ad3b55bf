"""Who the credential stands for: the board shows it, and offers it as a delegation."""

from __future__ import annotations

from taskgate.api.access import Access, caller, route
from taskgate.api.schemas import Me


@route("GET", "/api/me", Access.HUMAN, summary="The signed-in human", tags=("session",))
def me() -> Me:
    return Me(actor=caller().actor)
