"""Client request ids: a create retried after a lost response answers with what it created.

A create that carries `request_id` writes a marker item, must-not-exist, in the same commit as
the record it creates: so of any number of retries (racing or not) exactly one creates, and the
others find the marker and answer with the first result. The marker also holds a fingerprint of
the arguments: the same id with different arguments is a client bug, refused with E_CONFLICT.
Ids are scoped to the caller (its actor) and the project. Markers are kept (they are small), so
a retry is recognised however late it comes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from taskgate.domain.errors import ErrorCode, TaskgateError, invalid
from taskgate.domain.principals import Acting
from taskgate.service import records
from taskgate.service.context import Context
from taskgate.store.port import Item, Put

REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
REQUEST_ID_HELP = "1-100 letters, digits, '.', '_', ':' or '-' (e.g. a UUID)"


@dataclass(frozen=True)
class Request:
    key: tuple[str, str]
    fingerprint: str

    def record(self, created_id: str, **extra: Any) -> Put:
        """The marker write that goes into the creating commit."""
        return Put(Item(*self.key, {"id": created_id, "fingerprint": self.fingerprint, **extra}))

    def replay(self, ctx: Context) -> dict[str, Any] | None:
        """What the first request with this id created, or None if none did yet."""
        item = ctx.store.get(*self.key)
        if item is None:
            return None
        if item.data.get("fingerprint") != self.fingerprint:
            raise TaskgateError(
                ErrorCode.CONFLICT,
                f"request_id {self.key[1].rsplit('#', 1)[-1]} was already used for a different request; "
                "use a new request_id for a new request",
            )
        return dict(item.data)


def begin(who: Acting, project: str, request_id: str | None, kind: str, **arguments: Any) -> Request | None:
    """A Request for a create with this request_id (None without one)."""
    if request_id is None:
        return None
    if not REQUEST_ID_RE.match(request_id):
        raise invalid(f"request_id: {REQUEST_ID_HELP}")
    canonical = json.dumps({"kind": kind, **arguments}, sort_keys=True, separators=(",", ":"), default=str)
    return Request(
        records.request_key(project, who.actor, request_id),
        hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest(),
    )
