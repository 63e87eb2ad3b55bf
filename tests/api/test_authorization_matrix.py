"""Every route x every kind of caller, with the exact status of each cell.

The cells are generated from the API's own route table (`taskgate.api.access.ROUTES`): a new
route without a row in RECIPES below fails here. Each row says how to make a request that an
admitted caller gets its success status for, built on fresh objects each time, so every cell
stands alone. A refused cell must also have written nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from taskgate.api.access import ROUTES, Access, RouteSpec
from taskgate.domain.models import CredentialKind
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence
from taskgate.service import batches, keys, landing, projects, review, verification
from tests.api.support import CALLERS, NO_BODY, Env
from tests.support.evidence import BASE0, CONFIG, run_verifier
from tests.support.world import dump


@dataclass
class Req:
    path: str
    body: Any = NO_BODY
    query: dict[str, str] | None = None


Recipe = Callable[[Env, str], Req]
RECIPES: dict[tuple[str, str], tuple[int, Recipe]] = {}


def row(method: str, path: str, ok: int) -> Callable[[Recipe], Recipe]:
    def register(make: Recipe) -> Recipe:
        RECIPES[(method, path)] = (ok, make)
        return make

    return register


# Which caller is which kind (the vocabulary of taskgate.api.access.Access), written out here
# rather than derived from the code under test.
KIND = {
    "agent": "agent",
    "architect": "agent",
    "verifier": "local_verifier",
    "reviewer": "reviewer",
    "admin": "human",
    "jwt": "human",
}


def expected(spec: RouteSpec, caller: str, ok: int) -> int:
    if spec.access is Access.PUBLIC:
        return ok
    if caller == "none":
        return 401
    return ok if KIND[caller] == spec.access.value else 403


# -- public -----------------------------------------------------------------------------------


@row("GET", "/api/health", 200)
def _health(env: Env, caller: str) -> Req:
    return Req("/api/health")


@row("GET", "/api/openapi.json", 200)
def _openapi(env: Env, caller: str) -> Req:
    return Req("/api/openapi.json")


@row("GET", "/api/docs", 200)
def _docs(env: Env, caller: str) -> Req:
    return Req("/api/docs")


@row("GET", "/api/attestations/key", 200)
def _attestation_key(env: Env, caller: str) -> Req:
    return Req("/api/attestations/key")


@row("GET", "/api/tasks/{task_id}/attestations", 200)
def _attestations(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{env.task(MAIN)}/attestations")


@row("GET", "/api/projects/{project}/audit", 200)
def _audit(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/audit")


# -- projects ---------------------------------------------------------------------------------


@row("GET", "/api/projects", 200)
def _list_projects(env: Env, caller: str) -> Req:
    return Req("/api/projects")


@row("POST", "/api/projects", 201)
def _create_project(env: Env, caller: str) -> Req:
    return Req("/api/projects", {"name": f"new-{uuid.uuid4().hex[:8]}"})


@row("GET", "/api/projects/{project}", 200)
def _get_project(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}")


@row("PATCH", "/api/projects/{project}", 200)
def _patch_project(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}", {"max_attempts": 4, "lease_minutes": 45})


@row("PUT", "/api/projects/{project}/execution-defaults", 200)
def _exec_defaults(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/execution-defaults", {"verification_commands": ["pytest -q"]})


@row("GET", "/api/projects/{project}/history", 200)
def _history(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/history", query={"limit": "5"})


@row("GET", "/api/projects/{project}/metrics", 200)
def _metrics(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/metrics", query={"days": "7"})


# -- specs ------------------------------------------------------------------------------------

SPEC_BODY = {"title": "Health", "body": "GET /healthz", "risk": "high", "criteria": [{"text": "200 OK"}]}


def _spec(env: Env, *, approve: bool) -> str:
    return env.world.spec(MAIN, approve=approve).id


@row("GET", "/api/projects/{project}/specs", 200)
def _list_specs(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/specs")


@row("POST", "/api/projects/{project}/specs", 201)
def _create_spec(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/specs", SPEC_BODY)


@row("GET", "/api/projects/{project}/specs/{spec_id}", 200)
def _get_spec(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/specs/{_spec(env, approve=False)}")


@row("POST", "/api/projects/{project}/specs/{spec_id}/approve", 200)
def _approve_spec(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/specs/{_spec(env, approve=False)}/approve")


@row("POST", "/api/projects/{project}/specs/{spec_id}/revise", 200)
def _revise_spec(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/specs/{_spec(env, approve=True)}/revise", {"body": "v2"})


@row("GET", "/api/projects/{project}/specs/{spec_id}/markdown", 200)
def _spec_markdown(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/specs/{_spec(env, approve=True)}/markdown")


# -- tasks ------------------------------------------------------------------------------------


@row("GET", "/api/projects/{project}/tasks", 200)
def _list_tasks(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/tasks", query={"status": "ready", "limit": "3"})


@row("POST", "/api/projects/{project}/tasks", 201)
def _create_task(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/tasks", {"title": "Add /healthz", "criteria": [{"text": "200 OK"}]})


@row("GET", "/api/tasks/{task_id}", 200)
def _get_task(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{env.task(MAIN)}")


@row("POST", "/api/tasks/{task_id}/accept", 200)
def _accept(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{env.submitted(MAIN)}/accept")


@row("POST", "/api/projects/{project}/accept", 200)
def _accept_batch(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/accept", {"task_ids": [env.submitted(MAIN), env.submitted(MAIN)]})


@row("POST", "/api/tasks/{task_id}/reopen", 200)
def _reopen(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{env.submitted(MAIN)}/reopen", {"findings": ["test missing"]})


@row("POST", "/api/tasks/{task_id}/cancel", 200)
def _cancel(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{env.task(MAIN)}/cancel", {"reason": "not needed"})


@row("POST", "/api/tasks/{task_id}/resolve", 200)
def _resolve(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{env.escalated(MAIN)}/resolve", {"resolution": "requeue", "note": "use v2"})


@row("PATCH", "/api/tasks/{task_id}", 200)
def _edit_task(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{env.task(MAIN)}", {"title": "renamed", "priority": 3})


@row("POST", "/api/tasks/{task_id}/notes", 201)
def _add_note(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{env.task(MAIN)}/notes", {"body": "checked with the team"})


# -- decisions and search --------------------------------------------------------------------


@row("GET", "/api/projects/{project}/decisions", 200)
def _list_decisions(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/decisions", query={"include_superseded": "true"})


@row("POST", "/api/projects/{project}/decisions", 201)
def _log_decision(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/decisions", {"title": "Use JSON", "body": "always"})


@row("GET", "/api/projects/{project}/search", 200)
def _search(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{MAIN}/search", query={"q": "json"})


@row("GET", "/api/me", 200)
def _me(env: Env, caller: str) -> Req:
    return Req("/api/me")


# -- verification switch, verifier config ----------------------------------------------------


@row("GET", "/api/projects/{project}/verification", 200)
def _get_verification(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{VERIFIED}/verification")


@row("PUT", "/api/projects/{project}/verification", 200)
def _put_verification(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{VERIFIED}/verification", {"on": True})


@row("GET", "/api/projects/{project}/verifier-config", 200)
def _get_config(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{VERIFIED}/verifier-config")


@row("GET", "/api/projects/{project}/verifier-config/draft", 200)
def _draft_config(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{VERIFIED}/verifier-config/draft")


@row("PUT", "/api/projects/{project}/verifier-config", 200)
def _put_config(env: Env, caller: str) -> Req:
    return Req(
        f"/api/projects/{VERIFIED}/verifier-config",
        {"checks": {"unit": {"command": "pytest", "report": {"path": "r.xml", "format": "junit"}}}},
    )


@row("PUT", "/api/projects/{project}/verifier-config/protect", 200)
def _put_protect(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{VERIFIED}/verifier-config/protect", {"protect": ["**/conftest.py"]})


# -- keys -------------------------------------------------------------------------------------


@row("GET", "/api/keys", 200)
def _list_keys(env: Env, caller: str) -> Req:
    return Req("/api/keys")


@row("POST", "/api/keys", 201)
def _create_key(env: Env, caller: str) -> Req:
    return Req("/api/keys", {"kind": "agent", "name": "bob", "role": "executor", "projects": [MAIN]})


@row("POST", "/api/keys/{key_id}/revoke", 200)
def _revoke_key(env: Env, caller: str) -> Req:
    minted = keys.create(env.ctx, env.world.human, kind=CredentialKind.AGENT, name="temp", projects_=[MAIN])
    return Req(f"/api/keys/{minted.credential.id}/revoke")


# -- verifier endpoints ----------------------------------------------------------------------


@row("GET", "/api/verifier/work", 200)
def _work(env: Env, caller: str) -> Req:
    return Req("/api/verifier/work", query={"project": VERIFIED})


@row("POST", "/api/verifier/runs", 201)
def _start_run(env: Env, caller: str) -> Req:
    return Req("/api/verifier/runs", {"task_id": env.submitted(VERIFIED)})


def _started(env: Env, *, criteria: Any) -> tuple[str, str, list[str]]:
    tid = env.submitted(VERIFIED, criteria=criteria)
    started = verification.start(env.ctx, env.actings["verifier"], task_id=tid)
    return tid, started.run.id, [c["id"] for c in started.work["criteria"]]


@row("POST", "/api/verifier/runs/{task_id}/{run_id}/review", 200)
def _review(env: Env, caller: str) -> Req:
    tid, run, crits = _started(env, criteria=None)  # one review criterion
    return Req(
        f"/api/verifier/runs/{tid}/{run}/review",
        {"results": {crits[0]: {"result": "pass", "rationale": "the diff adds the route"}}},
    )


@row("POST", "/api/verifier/runs/{task_id}/{run_id}/finish", 200)
def _finish(env: Env, caller: str) -> Req:
    tid, run, crits = _started(env, criteria=env.test_criterion())
    return Req(
        f"/api/verifier/runs/{tid}/{run}/finish",
        {
            "checks": {"unit": {"exit_code": 0}},
            "results": {crits[0]: {"result": "pass", "detail": "1 passed"}},
        },
    )


@row("POST", "/api/verifier/projects/{project}/base", 200)
def _base_moved(env: Env, caller: str) -> Req:
    return Req(f"/api/verifier/projects/{VERIFIED}/base", {"ref": "refs/heads/main", "after": "c" * 40})


def _batch(env: Env) -> str:
    """A batch of one verified task, queued to be verified together (in a project of its own:
    other cells change VERIFIED's verifier config, and with it what a run's evidence must name)."""
    # A ref of its own: a ref another open task holds would make the run's evidence ambiguous.
    tid = env.submitted(TOGETHER, criteria=env.test_criterion(f"tests.test_{uuid.uuid4().hex[:8]}"))
    run_verifier(env.ctx, env.actings["verifier"], tid, Evidence.PASS, base=BASE0)
    return batches.request(env.ctx, env.world.human, TOGETHER, [tid]).id


@row("GET", "/api/projects/{project}/batches/{batch_id}", 200)
def _get_batch(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{TOGETHER}/batches/{_batch(env)}")


@row("POST", "/api/verifier/projects/{project}/batches/{batch_id}/runs", 201)
def _start_batch_run(env: Env, caller: str) -> Req:
    return Req(f"/api/verifier/projects/{TOGETHER}/batches/{_batch(env)}/runs")


@row("POST", "/api/verifier/projects/{project}/batches/{batch_id}/runs/{run_id}/finish", 200)
def _finish_batch_run(env: Env, caller: str) -> Req:
    batch_id = _batch(env)
    step = batches.start_step(env.ctx, env.actings["verifier"], TOGETHER, batch_id)
    [task] = step.work["tasks"]
    results = {task["task_id"]: {c["id"]: {"result": "pass", "detail": "1 passed"} for c in task["criteria"]}}
    return Req(
        f"/api/verifier/projects/{TOGETHER}/batches/{batch_id}/runs/{step.work['run_id']}/finish",
        {"branch": "main", "tip": "c" * 40, "checks": {"unit": {"exit_code": 0}}, "results": results},
    )


def _landing(env: Env) -> tuple[str, str]:
    """A project of its own that lands accepted work (each cell's queue stands alone), with one
    verified task accepted into its landing queue: (project, task)."""
    project = env.project()
    projects.set_verifier_config(env.ctx, env.world.human, project, {**CONFIG, "land": True})
    projects.set_verification(env.ctx, env.world.human, project, True)
    tid = env.submitted(project, criteria=env.test_criterion())
    run_verifier(env.ctx, env.actings["verifier"], tid, Evidence.PASS, base=BASE0)
    review.accept(env.ctx, env.world.human, tid)
    return project, tid


@row("GET", "/api/projects/{project}/queue", 200)
def _queue(env: Env, caller: str) -> Req:
    return Req(f"/api/projects/{_landing(env)[0]}/queue")


@row("POST", "/api/tasks/{task_id}/queue/head", 200)
def _queue_head(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{_landing(env)[1]}/queue/head")


@row("POST", "/api/tasks/{task_id}/queue/leave", 200)
def _queue_leave(env: Env, caller: str) -> Req:
    return Req(f"/api/tasks/{_landing(env)[1]}/queue/leave")


@row("POST", "/api/verifier/projects/{project}/landing/runs", 201)
def _start_landing(env: Env, caller: str) -> Req:
    return Req(f"/api/verifier/projects/{_landing(env)[0]}/landing/runs")


def _landing_evidence(env: Env) -> tuple[str, str, dict[str, Any]]:
    project, _ = _landing(env)
    work = landing.start_step(env.ctx, env.actings["verifier"], project)
    [task] = work["tasks"]
    prefix = {
        "task_id": task["task_id"],
        "head": "d" * 40,
        "tree": "e" * 40,
        "checks": {"unit": {"exit_code": 0}},
        "results": {c["id"]: {"result": "pass", "detail": "1 passed"} for c in task["criteria"]},
    }
    return project, work["run_id"], {"branch": "main", "tip": "c" * 40, "prefixes": [prefix]}


@row("POST", "/api/verifier/projects/{project}/landing/runs/{run_id}/evidence", 200)
def _landing_evidence_cell(env: Env, caller: str) -> Req:
    project, run_id, body = _landing_evidence(env)
    return Req(f"/api/verifier/projects/{project}/landing/runs/{run_id}/evidence", body)


@row("POST", "/api/verifier/projects/{project}/landing/runs/{run_id}/push", 200)
def _landing_push(env: Env, caller: str) -> Req:
    project, run_id, body = _landing_evidence(env)
    ev = landing.Evidence(
        branch="main",
        tip="c" * 40,
        prefixes=(
            landing.Prefix(
                task_id=body["prefixes"][0]["task_id"],
                head="d" * 40,
                tree="e" * 40,
                checks={"unit": CheckResult(exit_code=0)},
                results={
                    cid: CriterionResult(result=Evidence.PASS, detail="1 passed")
                    for cid in body["prefixes"][0]["results"]
                },
            ),
        ),
    )
    landing.record_evidence(env.ctx, env.actings["verifier"], project, run_id, ev)
    return Req(
        f"/api/verifier/projects/{project}/landing/runs/{run_id}/push", {"head": "d" * 40, "pushed": True}
    )


MAIN = "main"  # verification off
VERIFIED = "checked"  # verification on, with a live local key and a config
TOGETHER = "together"  # the same, for batches verified together


@pytest.fixture(scope="module")
def matrix_env(shared_env: Env) -> Env:
    shared_env.project(MAIN)
    shared_env.project(VERIFIED, verification=True)
    shared_env.project(TOGETHER, verification=True)
    return shared_env


def _cell_id(value: Any) -> str:
    if isinstance(value, RouteSpec):
        return f"{value.method} {value.openapi_path}"
    return str(value)


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("spec", ROUTES, ids=_cell_id)
def test_cell(matrix_env: Env, spec: RouteSpec, caller: str) -> None:
    assert spec.key in RECIPES, f"route {spec.method} {spec.openapi_path} has no row in the matrix"
    ok, make = RECIPES[spec.key]
    req = make(matrix_env, caller)
    want = expected(spec, caller, ok)
    before = dump(matrix_env.ctx.store) if want != ok else None
    resp = matrix_env.call(spec.method, req.path, caller, body=req.body, query=req.query)
    assert resp.status == want, f"{spec.method} {req.path} as {caller}: {resp!r}"
    if want == 401:
        assert resp.json["code"] == "E_UNAUTHORIZED"
        assert resp.headers["www-authenticate"].startswith("Bearer")
    if want == 403:
        assert resp.json["code"] == "E_FORBIDDEN"
    if before is not None:
        assert dump(matrix_env.ctx.store) == before, "a refused call wrote something"


def test_every_row_names_a_route() -> None:
    known = {r.key for r in ROUTES}
    assert set(RECIPES) <= known, f"rows for routes that do not exist: {sorted(set(RECIPES) - known)}"


def test_who_may_call_what() -> None:
    """The declarations themselves: three public routes, verifier routes only under
    /api/verifier, everything else for humans."""
    public = {r.key for r in ROUTES if r.access is Access.PUBLIC}
    assert public == {
        ("GET", "/api/health"),
        ("GET", "/api/openapi.json"),
        ("GET", "/api/docs"),
        ("GET", "/api/attestations/key"),  # a public key: anyone verifies statements with it
    }
    for r in ROUTES:
        if r.path.startswith("/api/verifier/"):
            want = Access.REVIEWER if r.path.endswith("/review") else Access.LOCAL_VERIFIER
            assert r.access is want, r
        elif r.access is not Access.PUBLIC:
            assert r.access is Access.HUMAN, r
