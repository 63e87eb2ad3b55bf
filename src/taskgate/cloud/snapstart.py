"""SnapStart runtime hooks for the MCP and REST functions.

Before the snapshot: prime (build the tracer, open the store's boto3 client), so that work
is in the snapshot instead of in the first request of every restored environment.

A SnapStart function is initialised once, when its version is published; every execution
environment is then restored from that snapshot. Whatever init left in memory is shared by
all of them, so:

- `random` is re-seeded after each restore. Its state would otherwise be the same in every
  restored environment, and agents racing for ready tasks pick a candidate with it: identical
  states mean identical picks and needless lost races. (Secrets, claim tokens and ids come
  from `secrets`/`os.urandom`, which the snapshot does not freeze.)
- The store's boto3 client is kept. Init makes no request, so the snapshot holds no open
  connection; and a SnapStart runtime hands the SDK refreshable container credentials, not
  fixed keys. Rebuilding the client after a restore would cost the first request ~80 ms
  (measured here for a DynamoDB client) and buy nothing.

`snapshot_restore_py` exists only in Lambda's Python runtime (3.12+); elsewhere nothing is
registered.
"""

from __future__ import annotations

import random
from collections.abc import Callable


def after_restore() -> None:
    random.seed()


def register(before_snapshot: Callable[[], None]) -> bool:
    """Register the hooks if this is a SnapStart-capable Lambda runtime. True if registered.

    `before_snapshot` is the function's priming (observe.prime): it runs once, when the
    version is published, so no restored environment pays for it. Without SnapStart the
    hooks never run and the first invocation does that work."""
    try:
        from snapshot_restore_py import register_after_restore, register_before_snapshot
    except ImportError:
        return False
    register_before_snapshot(before_snapshot)
    register_after_restore(after_restore)
    return True
