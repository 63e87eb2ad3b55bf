"""Hardening through the REST handler: bad text and bad JSON are refused with a stable
code and change nothing; reads page; creates take a request id; lists filter by claimer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from taskgate.api.access import ROUTES, match
from taskgate.service import claims, projects, tasks
from tests.api.support import Env, Resp, call, event
from tests.support.world import dump

BAD = "bad \ud800 text"


def _world(env: Env) -> dict[str, str]:
    """Records every body route below can act on, so that a body the API accepted would write."""
    p = env.project("demo")
    projects.set_verifier_config(
        env.ctx,
        env.world.human,
        p,
        {"checks": {"unit": {"command": "pytest", "report": {"path": "r.xml", "format": "junit"}}}},
    )
    spec = env.world.spec(p, approve=False)
    approved = env.world.spec(p)
    ids = {
        "spec": spec.id,
        "approved": approved.id,
        "submitted": env.submitted(p),
        "ready": env.task(p),
        "escalated": env.escalated(p),
    }
    return ids


def _bodies(ids: dict[str, str]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(caller, method, path, a valid body) for every REST route that takes a body."""
    crit = [{"text": "works", "kind": "test", "verify_ref": "tests.t1"}]
    return [
        (
            "admin",
            "POST",
            "/api/keys",
            {"kind": "agent", "name": "zed", "role": "executor", "delegations": []},
        ),
        ("admin", "POST", "/api/projects", {"name": "other", "repo": "git@x:y.git", "description": "about"}),
        ("admin", "PATCH", "/api/projects/demo", {"description": "about", "repo": "git@x:y.git"}),
        (
            "admin",
            "PUT",
            "/api/projects/demo/execution-defaults",
            {"verification_commands": ["pytest -q"], "conventions": ["type hints"]},
        ),
        ("admin", "POST", "/api/projects/demo/specs", {"title": "S", "body": "the body", "criteria": crit}),
        (
            "admin",
            "POST",
            f"/api/projects/demo/specs/{ids['approved']}/revise",
            {"title": "S2", "body": "new body", "criteria": crit},
        ),
        (
            "admin",
            "POST",
            "/api/projects/demo/tasks",
            {"title": "T", "description": "what", "criteria": crit, "verification_commands": ["make test"]},
        ),
        ("admin", "POST", "/api/projects/demo/accept", {"task_ids": [ids["submitted"]]}),
        ("admin", "POST", f"/api/tasks/{ids['submitted']}/reopen", {"findings": ["broken"]}),
        ("admin", "POST", f"/api/tasks/{ids['ready']}/cancel", {"reason": "not needed"}),
        (
            "admin",
            "POST",
            f"/api/tasks/{ids['escalated']}/resolve",
            {"resolution": "requeue", "note": "go on"},
        ),
        (
            "admin",
            "PATCH",
            f"/api/tasks/{ids['ready']}",
            {"title": "T2", "description": "more", "blocked_by": [ids["submitted"]], "criteria": crit},
        ),
        ("admin", "POST", f"/api/tasks/{ids['ready']}/notes", {"body": "a note"}),
        (
            "admin",
            "POST",
            "/api/projects/demo/decisions",
            {"title": "D", "body": "why", "spec_id": ids["approved"]},
        ),
        ("admin", "PUT", "/api/projects/demo/verification", {"on": False}),
        (
            "admin",
            "PUT",
            "/api/projects/demo/verifier-config",
            {"checks": {"unit": {"command": "pytest -x", "report": {"path": "r.xml"}}}},
        ),
        ("admin", "PUT", "/api/projects/demo/verifier-config/protect", {"protect": ["conftest.py"]}),
        ("verifier", "POST", "/api/verifier/runs", {"task_id": ids["submitted"]}),
        (
            "reviewer",
            "POST",
            f"/api/verifier/runs/{ids['submitted']}/run-1/review",
            {"results": {"AC-1.1": {"result": "pass", "rationale": "fine"}}},
        ),
        (
            "verifier",
            "POST",
            f"/api/verifier/runs/{ids['submitted']}/run-1/finish",
            {"checks": {"unit": {"exit_code": 0, "output_tail": "ok"}}, "error": "none"},
        ),
        (
            "verifier",
            "POST",
            "/api/verifier/projects/demo/base",
            {"ref": "refs/heads/main", "after": "c" * 40, "repository": {"full_name": "o/r"}},
        ),
        (
            "verifier",
            "POST",
            "/api/verifier/projects/demo/batches/B1/runs/run-1/finish",
            {
                "branch": "main",
                "tip": "c" * 40,
                "checks": {"unit": {"exit_code": 0, "output_tail": "ok"}},
                "results": {"demo-1": {"AC-1.1": {"result": "pass", "detail": "1 passed"}}},
                "conflict_paths": ["a.py"],
                "error": "none",
            },
        ),
        (
            "verifier",
            "POST",
            "/api/verifier/projects/demo/landing/runs/run-1/evidence",
            {
                "branch": "main",
                "tip": "c" * 40,
                "prefixes": [
                    {
                        "task_id": "demo-1",
                        "head": "d" * 40,
                        "tree": "e" * 40,
                        "checks": {"unit": {"exit_code": 0, "output_tail": "ok"}},
                        "results": {"AC-1.1": {"result": "pass", "detail": "1 passed"}},
                        "conflict_paths": ["a.py"],
                    }
                ],
                "error": "none",
            },
        ),
        (
            "verifier",
            "POST",
            "/api/verifier/projects/demo/landing/runs/run-1/push",
            {"head": "d" * 40, "pushed": False, "why": "not a fast-forward"},
        ),
    ]


def test_every_body_route_is_listed_here() -> None:
    fake = {
        "spec": "SPEC-1",
        "approved": "SPEC-2",
        "submitted": "demo-1",
        "ready": "demo-2",
        "escalated": "demo-3",
    }
    listed = {match(method, path) for _, method, path, _ in _bodies(fake)}
    assert listed == {r for r in ROUTES if r.has_body}


def _poisoned(body: Any, text: str = BAD) -> Iterator[Any]:
    """The body with each of its strings (values, and object keys) replaced by bad text in turn."""
    if isinstance(body, str):
        yield text
    elif isinstance(body, dict):
        for key, value in body.items():
            yield {**body, text: value} if key not in ("kind", "resolution") else {**body, key: text}
            for bad in _poisoned(value, text):
                yield {**body, key: bad}
    elif isinstance(body, list):
        for i, value in enumerate(body):
            for bad in _poisoned(value, text):
                yield [*body[:i], bad, *body[i + 1 :]]


def _refused_without_writing(env: Env, caller: str, method: str, path: str, raw: str) -> Resp:
    before = dump(env.ctx.store)
    ev = event(method, path, headers={**env.headers(caller), "content-type": "application/json"})
    ev["body"] = raw
    r = call(ev)
    assert 400 <= r.status < 500, (method, path, raw[:80], r)
    assert r.json["code"] == "E_VALIDATION", r
    assert dump(env.ctx.store) == before
    return r


def test_lone_surrogates_are_refused_in_every_text_field_of_every_body_route(env: Env) -> None:
    """Defect 1/4: 12 of 20 REST text fields stored a lone surrogate (201), and a task or spec
    title with one answered 500. Now every string, anywhere in any body, is refused (422)."""
    ids = _world(env)
    tried = 0
    for caller, method, path, body in _bodies(ids):
        for bad in _poisoned(body):
            r = _refused_without_writing(env, caller, method, path, json.dumps(bad))
            assert r.status == 422
            tried += 1
    assert tried >= 40


# What would rewrite a human's terminal line, or hide text on it: an escape sequence that erases
# the line, a carriage return, NUL, a C1 control (the 8-bit CSI), DEL.
CONTROLS = ["innocent\x1b[2K\x1b[1Gaccept me", "ok\rrewritten", "nul\x00", "csi\x9b2K", "del\x7f"]
# The verifier's own routes carry what a check printed, stored made plain by the service.
CHECK_OUTPUT_ROUTES = {"/review", "/finish", "/evidence"}


@pytest.mark.parametrize("control", CONTROLS)
def test_control_characters_are_refused_in_every_text_field_of_every_body_route(
    env: Env, control: str
) -> None:
    ids = _world(env)
    tried = 0
    for caller, method, path, body in _bodies(ids):
        if any(path.endswith(end) for end in CHECK_OUTPUT_ROUTES):
            continue
        for bad in _poisoned(body, control):
            r = _refused_without_writing(env, caller, method, path, json.dumps(bad))
            assert r.status == 422
            assert "text may not hold control characters (only tab and newline)" in r.json["message"], r
            tried += 1
    assert tried >= 40


def test_tab_and_newline_are_text(env: Env) -> None:
    env.project("demo")
    body = {"title": "T\tone", "description": "line one\n\tline two", "criteria": [{"text": "a\nb"}]}
    r = env.call("POST", "/api/projects/demo/tasks", body=body)
    assert r.status == 201, r
    assert r.json["task"]["description"] == "line one\n\tline two"


def test_a_checks_output_with_escapes_is_taken_and_stored_plain(env: Env) -> None:
    _world(env)
    assert env.call("PUT", "/api/projects/demo/verification", body={"on": True}).status == 200
    tid = env.submitted("demo")
    started = env.call("POST", "/api/verifier/runs", "verifier", body={"task_id": tid})
    assert started.status in (200, 201), started
    run_id = started.json["run_id"]
    output = {"checks": {"unit": {"exit_code": 1, "output_tail": "\x1b[31mFAILED\x1b[0m x\r\n"}}}
    finished = env.call("POST", f"/api/verifier/runs/{tid}/{run_id}/finish", "verifier", body=output)
    assert finished.status == 200, finished
    runs = env.world.ctx.store.query(f"T#{tid}", sk_prefix="R#").items
    assert [r.data["checks"]["unit"]["output_tail"] for r in runs] == ["FAILED x\n"]


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_json_is_refused_on_every_body_route(env: Env, depth: int) -> None:
    """Defect 4: a deeply nested body answered 500 (RecursionError while parsing) on every route."""
    ids = _world(env)
    for caller, method, path, body in _bodies(ids):
        nested = "[" * depth + "]" * depth
        first_key = next(iter(body))
        for raw in (nested, json.dumps({**body, first_key: "@@"}).replace('"@@"', nested)):
            _refused_without_writing(env, caller, method, path, raw)


def test_not_json_numbers_are_refused(env: Env) -> None:
    _world(env)
    for raw in (
        '{"max_attempts": NaN}',
        '{"max_attempts": Infinity}',
        '{"max_attempts": ' + "9" * 5000 + "}",
    ):
        _refused_without_writing(env, "admin", "PATCH", "/api/projects/demo", raw)


def test_get_task_pages_its_notes_and_history(env: Env) -> None:
    p = env.project("demo")
    tid = env.task(p)
    for i in range(5):
        tasks.add_note(env.ctx, env.world.human, tid, f"note {i}")
        tasks.update(env.ctx, env.world.human, tid, title=f"title {i}")
    notes: list[str] = []
    history: list[str] = []
    query: dict[str, str] = {"limit": "2"}
    for _ in range(10):
        r = env.call("GET", f"/api/tasks/{tid}", query=query)
        assert r.status == 200, r
        body = r.json
        assert len(body["notes"]) <= 2 and len(body["history"]) <= 2
        notes += [n["body"] for n in body["notes"]]
        history += [e["action"] for e in body["history"]]
        query = {"limit": "2"}
        if body["notes_cursor"]:
            query["notes_cursor"] = body["notes_cursor"]
        if body["history_cursor"]:
            query["history_cursor"] = body["history_cursor"]
        if len(query) == 1:
            break
    assert notes == [f"note {i}" for i in range(5)]
    assert history == ["create_ready"] + ["updated"] * 5


def test_list_tasks_by_claimer(env: Env) -> None:
    p = env.project("demo")
    mine = env.task(p)
    claims.claim(env.ctx, env.actings["agent"], p, task_id=mine)
    env.task(p)
    r = env.call("GET", f"/api/projects/{p}/tasks", query={"claimed_by": "agent"})
    assert r.status == 200, r
    assert [t["id"] for t in r.json["items"]] == [mine]


def test_a_lapsed_claim_is_listed_as_ready(env: Env) -> None:
    p = env.project("demo")
    tid = env.task(p)
    claims.claim(env.ctx, env.actings["agent"], p, task_id=tid)
    env.clock.advance(minutes=31)
    r = env.call("GET", f"/api/projects/{p}/tasks", query={"status": "ready"})
    assert [t["id"] for t in r.json["items"]] == [tid]
    r = env.call("GET", f"/api/projects/{p}/tasks", query={"status": "claimed"})
    assert r.json["items"] == []


@pytest.mark.parametrize("what", ["tasks", "specs"])
def test_a_create_retried_with_its_request_id_creates_once(env: Env, what: str) -> None:
    p = env.project("demo")
    body = {
        "title": "Once",
        "criteria": [{"text": "works"}],
        "request_id": "7c4b2d1e-0000-4000-8000-000000000001",
    }
    first = env.call("POST", f"/api/projects/{p}/{what}", body=body)
    assert first.status == 201, first
    before = dump(env.ctx.store)
    again = env.call("POST", f"/api/projects/{p}/{what}", body=body)
    assert again.status == 201, again
    created = (lambda r: r.json["task"]["id"]) if what == "tasks" else (lambda r: r.json["id"])
    assert created(again) == created(first)
    assert dump(env.ctx.store) == before
    other = env.call("POST", f"/api/projects/{p}/{what}", body={**body, "title": "Different"})
    assert other.status == 409 and other.json["code"] == "E_CONFLICT"
    bad = env.call("POST", f"/api/projects/{p}/{what}", body={**body, "request_id": "has spaces"})
    assert bad.status == 422 and bad.json["code"] == "E_VALIDATION"
    assert dump(env.ctx.store) == before
