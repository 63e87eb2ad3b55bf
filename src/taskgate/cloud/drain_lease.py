"""A cloud verifier task's slot (service/dispatch.py), held for `taskgate verify --drain`.

The dispatcher passes the slot in TASKGATE_DRAIN_LEASE; the task renews its lease every
LEASE / 4 from a thread, through the Store port on the stack's table (the task role may touch
the drain partitions only, template.yaml). A renewal that finds the slot no longer this task's
(it lapsed and another task took it over) makes `held()` false, and the worker stops after its
current run. A renewal that fails on the network is tried again at the next tick; the lease
lapses only if none succeeds for LEASE.

The store's client, and with it the task role's credentials, are made when this is built,
before `taskgate verify` clears AWS_* from its environment with the keys. The renewing thread
starts on the first `held()`, after the verifier dropped root: a thread made earlier would keep
the capabilities the process gives up (capabilities are per thread on Linux).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping

from taskgate.cloud.ecs import LEASE_VAR, lease_from_value
from taskgate.service import dispatch
from taskgate.service.context import Context
from taskgate.service.dispatch import Lease
from taskgate.store.port import Store


class StoreLease:
    def __init__(self, store: Store, lease: Lease, *, every_s: float | None = None) -> None:
        self.ctx = Context(store=store)
        self.lease = lease
        self.every_s = every_s if every_s is not None else dispatch.LEASE.total_seconds() / 4
        self._held = True
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _renew_once(self) -> None:
        try:
            still = dispatch.renew(self.ctx, self.lease)
        except Exception as exc:  # the network, a throttle: the lease outlives a few misses
            print(
                f"taskgate verify: lease renewal failed ({type(exc).__name__}: {exc}); retrying",
                file=sys.stderr,
            )
            return
        if not still:
            self._held = False
            self._stop.set()

    def _loop(self) -> None:
        self._renew_once()
        while not self._stop.wait(self.every_s):
            self._renew_once()

    def held(self) -> bool:
        with self._lock:
            if self._thread is None and self._held and not self._stop.is_set():
                self._thread = threading.Thread(target=self._loop, name="drain-lease", daemon=True)
                self._thread.start()
        return self._held

    def _halt(self) -> None:
        with self._lock:
            self._stop.set()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=30)

    def release(self) -> None:
        self._halt()
        if self._held:
            dispatch.release(self.ctx, self.lease)
        self._held = False

    def reacquire(self) -> bool:
        self._halt()
        if not dispatch.reacquire(self.ctx, self.lease):
            return False
        with self._lock:
            self._held = True
            self._stop = threading.Event()
        return True


def lease_from_env(env: Mapping[str, str]) -> StoreLease:
    """The slot a cloud verifier task was started for, on the table the stack names."""
    from taskgate.store.dynamodb import DynamoDBStore  # boto3 only where it is used

    table = env.get("TASKGATE_TABLE", "")
    if not table:
        raise SystemExit(f"taskgate verify: {LEASE_VAR} needs TASKGATE_TABLE (the stack's table)")
    try:
        lease = lease_from_value(env[LEASE_VAR])
    except (KeyError, ValueError, TypeError) as exc:
        raise SystemExit(f"taskgate verify: {LEASE_VAR} is not a lease the dispatcher wrote: {exc}") from None
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None
    store = DynamoDBStore(
        table, region_name=region, endpoint_url=env.get("TASKGATE_DYNAMODB_ENDPOINT") or None
    )
    return StoreLease(store, lease)
