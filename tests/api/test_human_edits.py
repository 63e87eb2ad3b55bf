"""What humans edit over REST: tasks nobody holds, notes, decisions (log, supersede, list),
search. Each refusal answers its code with a hint and writes nothing."""

from __future__ import annotations

from tests.api.support import Env
from tests.support.world import dump


def test_a_human_edits_a_task_and_history_says_who_and_what(env: Env) -> None:
    p = env.project()
    tid = env.task(p)
    blocker = env.task(p)
    resp = env.call(
        "PATCH",
        f"/api/tasks/{tid}",
        body={
            "title": "Add /healthz",
            "description": "JSON body",
            "priority": 9,
            "blocked_by": [blocker],
            "criteria": [{"text": "answers 200"}, {"text": "documented", "kind": "review"}],
        },
    )
    assert resp.status == 200, resp
    task = resp.json["task"]
    assert (task["title"], task["description"], task["priority"], task["status"]) == (
        "Add /healthz",
        "JSON body",
        9,
        "blocked",
    )
    assert [c["text"] for c in task["criteria"]] == ["answers 200", "documented"]
    detail = env.call("GET", f"/api/tasks/{tid}").json
    last = detail["history"][-1]
    assert (last["action"], last["actor"], last["to_status"]) == ("blockers_added", "human:admin", "blocked")
    assert last["detail"]["fields"] == ["blocked_by", "criteria", "description", "priority", "title"]
    resp = env.call("PATCH", f"/api/tasks/{tid}", body={"blocked_by": []})
    assert resp.json["task"]["status"] == "ready"


def test_held_work_and_bad_edits_are_refused_with_a_hint_and_nothing_written(env: Env) -> None:
    p = env.project()
    held = env.submitted(p)
    tid = env.task(p)
    before = dump(env.ctx.store)
    resp = env.call("PATCH", f"/api/tasks/{held}", body={"title": "x"})
    assert resp.status == 409
    assert resp.json["code"] == "E_WRONG_STATE" and resp.json["current_status"] == "needs_verification"
    assert resp.json["hint"].startswith("Reload")
    resp = env.call("PATCH", f"/api/tasks/{tid}", body={"criteria": []})
    assert resp.status == 422 and resp.json["code"] == "E_EMPTY_CRITERIA"
    resp = env.call("PATCH", f"/api/tasks/{tid}", body={"priority": "high"})
    assert resp.status == 422 and resp.json["errors"][0]["loc"] == "body.priority"
    resp = env.call("PATCH", f"/api/tasks/{tid}", body={"blocked_by": [tid]})
    assert resp.status == 422 and "itself" in resp.json["message"]
    resp = env.call("PATCH", f"/api/tasks/{tid}", body={})
    assert resp.status == 422 and resp.json["message"] == "nothing to update"
    assert dump(env.ctx.store) == before


def test_notes_are_added_and_shown_with_the_task(env: Env) -> None:
    p = env.project()
    tid = env.task(p)
    resp = env.call("POST", f"/api/tasks/{tid}/notes", body={"body": "talked to the API team"})
    assert resp.status == 201 and resp.json["author"] == "human:admin"
    notes = env.call("GET", f"/api/tasks/{tid}").json["notes"]
    assert [(n["author"], n["body"]) for n in notes] == [("human:admin", "talked to the API team")]
    before = dump(env.ctx.store)
    assert env.call("POST", f"/api/tasks/{tid}/notes", body={"body": "  "}).status == 422
    assert env.call("POST", f"/api/tasks/{p}-999/notes", body={"body": "x"}).status == 404
    assert dump(env.ctx.store) == before


def test_decisions_are_logged_superseded_listed_and_searched(env: Env) -> None:
    p = env.project()
    first = env.call(
        "POST", f"/api/projects/{p}/decisions", body={"title": "Health answers XML", "body": "legacy"}
    )
    assert first.status == 201 and first.json["id"] == "DEC-1"
    second = env.call(
        "POST",
        f"/api/projects/{p}/decisions",
        body={"title": "Health answers JSON", "body": "always JSON", "supersedes": "DEC-1"},
    )
    assert second.status == 201 and second.json["supersedes"] == "DEC-1"
    live = env.call("GET", f"/api/projects/{p}/decisions").json["items"]
    assert [d["id"] for d in live] == ["DEC-2"]
    everything = env.call("GET", f"/api/projects/{p}/decisions", query={"include_superseded": "true"}).json[
        "items"
    ]
    assert [(d["id"], d["superseded_by"]) for d in everything] == [("DEC-1", "DEC-2"), ("DEC-2", None)]
    hits = env.call("GET", f"/api/projects/{p}/search", query={"q": "health json"}).json["items"]
    assert hits[0]["id"] == "DEC-2" and hits[0]["kind"] == "decision"
    assert "DEC-1" not in [h["id"] for h in hits]  # superseded decisions are not searched
    before = dump(env.ctx.store)
    again = env.call("POST", f"/api/projects/{p}/decisions", body={"title": "x", "supersedes": "DEC-1"})
    assert again.status == 422 and "already superseded" in again.json["message"]
    missing = env.call("POST", f"/api/projects/{p}/decisions", body={"title": "x", "supersedes": "DEC-9"})
    assert missing.status == 404 and missing.json["code"] == "E_NOT_FOUND"
    assert env.call("GET", f"/api/projects/{p}/search", query={"q": ""}).status == 422
    assert dump(env.ctx.store) == before


def test_me_names_the_signed_in_human(env: Env) -> None:
    assert env.call("GET", "/api/me").json == {"actor": "human:admin"}
    assert env.call("GET", "/api/me", "jwt").json == {"actor": "human:carol"}


def test_verifier_config_errors_name_each_field(env: Env) -> None:
    p = env.project()
    resp = env.call(
        "PUT",
        f"/api/projects/{p}/verifier-config",
        body={"checks": {"unit": {"command": ""}, "bad name!": {"command": "x"}}, "check_timeout_minutes": 0},
    )
    assert resp.status == 422
    locs = {e["loc"] for e in resp.json["errors"]}
    assert {"body.checks.unit.command", "body.check_timeout_minutes"} <= locs
