"""`taskgate audit verify` and GET /api/projects/{p}/audit against a real `taskgate serve`, on a
task whose first events an older taskgate wrote (no `prev`, no head; stored in the SQLite file
directly, as that code stored them): the count of unchained events, per task and in total, exit 0;
and exit 1 naming the event once an event after them is edited."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgate.service import records
from tests.mcp.live import Live, serving

TASKGATE = str(Path(sys.executable).with_name("taskgate"))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("taskgate-audit"))


def cli(live: Live, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": live.base, "TASKGATE_TOKEN": live.admin_token}
    return subprocess.run([TASKGATE, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def _events(db: sqlite3.Connection, tid: str) -> list[tuple[str, str]]:
    rows = db.execute("SELECT sk, data FROM items WHERE pk=? AND sk LIKE 'H#%' ORDER BY sk", (f"T#{tid}",))
    return list(rows.fetchall())


def _as_the_old_code_stored_it(live: Live, tid: str) -> int:
    """Every event of the task without `prev`, the task item without `history_head`."""
    db = sqlite3.connect(live.db_path)
    try:
        with db:
            events = _events(db, tid)
            for sk, data in events:
                body = json.loads(data)
                body.pop("prev", None)
                db.execute("UPDATE items SET data=? WHERE pk=? AND sk=?", (json.dumps(body), f"T#{tid}", sk))
            key = records.task_key(tid)
            (data,) = db.execute("SELECT data FROM items WHERE pk=? AND sk=?", key).fetchone()
            task = json.loads(data)
            assert task.pop("history_head")
            db.execute("UPDATE items SET data=? WHERE pk=? AND sk=?", (json.dumps(task), *key))
    finally:
        db.close()
    return len(events)


def test_audit_verify_counts_unchained_events_and_still_names_an_edit_after_them(live: Live) -> None:
    project = live.project("legacy")
    criteria = [{"text": "it works"}]
    old = live.ok("POST", f"/api/projects/{project}/tasks", {"title": "old", "criteria": criteria})["task"][
        "id"
    ]
    live.ok("PATCH", f"/api/tasks/{old}", {"title": "old, renamed"})
    live.ok("POST", f"/api/projects/{project}/tasks", {"title": "new", "criteria": criteria})
    legacy = _as_the_old_code_stored_it(live, old)
    assert legacy == 2
    for n in range(2):  # the new code goes on with the old task
        live.ok("PATCH", f"/api/tasks/{old}", {"title": f"renamed again {n}"})

    out = live.ok("GET", f"/api/projects/{project}/audit")
    assert out["ok"] and out["mismatches"] == [] and out["tasks"] == 2
    assert out["unchained"] == legacy and out["unchained_tasks"] == [{"task": old, "events": legacy}]

    done = cli(live, "audit", "verify", project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{legacy} unchained events in 1 task, not verified; every chain intact" in done.stdout
    assert f"{old}: {legacy} unchained events (written before this server kept a hash chain)" in done.stdout
    assert "every chain matches" not in done.stdout

    db = sqlite3.connect(live.db_path)
    try:
        with db:
            events = _events(db, old)
            edited, after = events[legacy][0], events[legacy + 1][0]  # the chain's first event
            data = events[legacy][1].replace('"actor":"', '"actor":"human:mallory-was-', 1)
            assert data != events[legacy][1]
            db.execute("UPDATE items SET data=? WHERE pk=? AND sk=?", (data, f"T#{old}", edited))
    finally:
        db.close()
    tampered = cli(live, "audit", "verify", project)
    assert tampered.returncode == 1, tampered.stdout + tampered.stderr
    assert "MISMATCH" in tampered.stdout
    assert f"{old} {after}: event {after} does not follow event {edited}" in tampered.stdout
    assert "unchained" not in tampered.stdout.split("\n", 1)[1]  # the task is a mismatch, not legacy
