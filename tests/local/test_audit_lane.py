"""An audit does not hold up the API on `taskgate serve`: audits of a large project run in a
lane of their own, one at a time, and outside the REST handler's one-request-at-a-time lock, so
a plain request sent while two of them run is answered before they end (with the request
workers and the lock shared, it waited for both)."""

from __future__ import annotations

import http.client
import json
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


def _audit(port: int, token: str, sent: threading.Event, out: dict[str, object]) -> None:
    """GET the project's audit on a connection of its own: `sent` is set once the whole request
    is with the server, `out` gets the status, the body and when the answer had arrived."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", "/api/projects/big/audit", headers={"Authorization": f"Bearer {token}"})
        sent.set()
        response = conn.getresponse()
        out["body"] = json.loads(response.read())
        out["ended"] = time.monotonic()
        out["status"] = response.status
    finally:
        conn.close()


def test_two_audits_of_a_large_project_do_not_hold_up_other_requests(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _large_project(data)
    with running(data, extra=["--admin-name", "alice", "--workers", "2"]) as server:
        token = server.admin_token
        sent = [threading.Event(), threading.Event()]
        results: list[dict[str, object]] = [{}, {}]
        audits = [
            threading.Thread(target=_audit, args=(server.port, token, sent[i], results[i])) for i in range(2)
        ]
        for t in audits:
            t.start()
        for event in sent:  # both audits are with the server before the plain request leaves
            assert event.wait(60)
        status, listed = server.request("GET", "/api/projects", token=token)
        answered = time.monotonic()
        for t in audits:
            t.join(120)
        assert status == 200 and [p["name"] for p in listed["items"]] == ["big"]
        for done in results:
            assert done["status"] == 200, done
            body = done["body"]
            assert isinstance(body, dict) and body["tasks"] == TASKS and body["ok"], body
        # The plain request waited for neither audit: not for a worker (the audits have a lane
        # of their own) nor for the REST handler's lock (an audit works outside it), so it was
        # answered before the first of them ended.
        ended = [float(str(done["ended"])) for done in results]
        assert answered < min(ended), (answered, ended)
