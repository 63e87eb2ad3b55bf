"""An audit does not hold up the API on `taskgate serve`: audits of a large project run in a
lane of their own, one at a time, and outside the REST handler's one-request-at-a-time lock, so
a plain request sent while two of them run is answered before they end (with the request
workers and the lock shared, it waited for both)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from taskgate.domain.models import CriterionInput
from taskgate.domain.principals import acting, human
from taskgate.service import projects, tasks
from taskgate.service.context import Context
from taskgate.store.sqlite import SQLiteStore
from tests.support.server import running

TASKS = 1500


def _large_project(data: Path) -> None:
    """A project of TASKS tasks, written through the services on the file the server will open."""
    data.mkdir(mode=0o700)
    store = SQLiteStore(data / "taskgate.db")
    try:
        ctx = Context(store)
        admin = acting(human("alice"))
        projects.create(ctx, admin, "big")
        for i in range(TASKS):
            tasks.create(ctx, admin, "big", title=f"t{i}", criteria=[CriterionInput(text="works")])
    finally:
        store.close()


def test_two_audits_of_a_large_project_do_not_hold_up_other_requests(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _large_project(data)
    with running(data, extra=["--admin-name", "alice", "--workers", "2"]) as server:
        token = server.admin_token
        ended: dict[str, float] = {}
        statuses: dict[str, int] = {}

        def audit(name: str) -> None:
            status, body = server.request("GET", "/api/projects/big/audit", token=token)
            ended[name] = time.monotonic()
            statuses[name] = status
            assert body["tasks"] == TASKS and body["ok"], body

        audits = [threading.Thread(target=audit, args=(f"audit{i}",)) for i in range(2)]
        for t in audits:
            t.start()
        time.sleep(0.2)  # both audits are in the server
        status, listed = server.request("GET", "/api/projects", token=token)
        answered = time.monotonic()
        for t in audits:
            t.join(120)
        assert status == 200 and [p["name"] for p in listed["items"]] == ["big"]
        assert statuses == {"audit0": 200, "audit1": 200}
        # The plain request did not wait for the audits: the second of them, which starts when
        # the first ends, ended after it.
        assert answered < max(ended.values()), (answered, ended)
