"""The verifier-facing additions of the REST API: work across projects, and the draft config
a human starts from ("start from project commands")."""

from __future__ import annotations

from taskgate.service import projects
from tests.api.support import Env
from tests.support.world import dump


def test_work_without_a_project_covers_every_project_with_verification_on(env: Env) -> None:
    on = env.project("on", verification=True)
    also = env.project("also", verification=True)
    off = env.project("off")
    waiting = [env.submitted(on), env.submitted(also)]
    env.submitted(off)
    everything = env.call("GET", "/api/verifier/work", "verifier")
    assert everything.status == 200 and sorted(everything.json["items"]) == sorted(waiting)
    one = env.call("GET", "/api/verifier/work", "verifier", query={"project": also})
    assert one.json["items"] == waiting[1:]
    assert env.call("GET", "/api/verifier/work", "reviewer").status == 403


def test_a_draft_config_from_the_projects_commands_is_returned_not_saved(env: Env) -> None:
    pid = env.project("demo")
    projects.set_execution_defaults(
        env.ctx,
        env.world.human,
        pid,
        verification_commands=["pytest --junitxml=reports/junit.xml", "ruff check ."],
    )
    before = dump(env.ctx.store)
    resp = env.call("GET", f"/api/projects/{pid}/verifier-config/draft")
    assert resp.status == 200, resp.json
    assert resp.json["config"]["checks"] == {
        "pytest": {
            "command": "pytest --junitxml=reports/junit.xml",
            "report": {"path": "reports/junit.xml", "format": "junit"},
            "timeout_minutes": None,
            "cache": None,
        },
        "ruff-check": {"command": "ruff check .", "report": None, "timeout_minutes": None, "cache": None},
    }
    assert any("'ruff-check' writes no report" in n for n in resp.json["notes"])
    assert dump(env.ctx.store) == before  # a draft: nothing saved
    saved = env.call("PUT", f"/api/projects/{pid}/verifier-config", body=resp.json["config"])
    assert (
        saved.status == 200
        and saved.json["config"]["checks"]["pytest"]["report"]["path"] == "reports/junit.xml"
    )
    for caller in ("agent", "verifier", "none"):
        assert env.call("GET", f"/api/projects/{pid}/verifier-config/draft", caller).status in (401, 403)
