"""The humans' side through `taskgate serve` and the CLI, with agents working on the same SQLite
file through the services (the MCP path is covered in tests/mcp)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from taskgate.domain.clock import SystemClock
from taskgate.domain.models import CriterionInput, Risk
from taskgate.domain.principals import acting
from taskgate.service import claims, keys, tasks
from taskgate.service.context import Context
from taskgate.store.sqlite import SQLiteStore
from tests.support.server import Server, running

SHA = "0123456789abcdef0123456789abcdef01234567"


def _agent_submits(
    server: Server, agent_key: str, project: str, *, spec_id: str | None = None, n: int = 1
) -> list[str]:
    store = SQLiteStore(server.data_dir / "taskgate.db")
    try:
        ctx = Context(store, SystemClock())
        agent = acting(keys.authenticate(ctx, agent_key))
        out = []
        for i in range(n):
            kw = {"spec_id": spec_id} if spec_id else {"criteria": [CriterionInput(text="works")]}
            t = tasks.create(ctx, agent, project, title=f"work {i}", **kw).task  # type: ignore[arg-type]
            c = claims.claim(ctx, agent, project, task_id=t.id)
            claims.submit(ctx, agent, t.id, c.token, commit_sha=SHA, evidence="done")
            out.append(t.id)
        return out
    finally:
        store.close()


def _ok(r: object) -> dict[str, object]:
    import subprocess

    assert isinstance(r, subprocess.CompletedProcess)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert isinstance(out, dict)
    return out


def test_verification_switch_needs_a_key_and_a_config(tmp_path: Path) -> None:
    with running(tmp_path / "d") as server:
        _ok(server.script("project", "create", "demo", "--repo", "https://example.com/demo.git", "--json"))
        r = server.script("verification", "on", "demo", "--json")
        assert r.returncode == 1
        err = json.loads(r.stdout)["error"]
        assert err["code"] == "E_VALIDATION" and len(err["missing"]) == 2
        minted = _ok(
            server.script("key", "create", "verifier", "ci", "--kind", "local", "--project", "demo", "--json")
        )
        assert str(minted["key"]).startswith("tgv_")
        cfg = tmp_path / "cfg.json"
        cfg.write_text(json.dumps({"checks": {"unit": {"command": "pytest -q"}}}))
        _ok(server.script("verifier-config", "set", "demo", "--file", str(cfg), "--json"))
        assert _ok(server.script("verification", "on", "demo", "--json"))["on"] is True
        credential = minted["credential"]
        assert isinstance(credential, dict)
        revoked = _ok(server.script("key", "revoke", str(credential["id"]), "--json"))
        warnings = revoked["warnings"]
        assert isinstance(warnings, list) and "verification is on" in warnings[0]
        status, body = server.request("GET", "/api/projects/demo/history", token=server.admin_token)
        assert status == 200
        actions = [e["action"] for e in body["items"]]
        assert {"verification_on", "verifier_config_changed", "key_created", "key_revoked"} <= set(actions)


def test_accepting_work_medium_risk_never_in_a_batch(tmp_path: Path) -> None:
    with running(tmp_path / "d") as server:
        admin = server.admin_token
        _ok(server.script("project", "create", "demo", "--repo", "https://example.com/demo.git", "--json"))
        key = str(_ok(server.script("key", "create", "agent", "bob", "--json"))["key"])
        status, spec = server.request(
            "POST",
            "/api/projects/demo/specs",
            {"title": "Risky", "risk": Risk.MEDIUM.value, "criteria": [{"text": "works"}]},
            token=admin,
        )
        assert status == 201, spec
        _ok(server.script("spec", "approve", spec["id"], "--project", "demo", "--json"))
        low = _agent_submits(server, key, "demo", n=2)
        (medium,) = _agent_submits(server, key, "demo", spec_id=spec["id"])
        status, body = server.request(
            "POST", "/api/projects/demo/accept", {"task_ids": [*low, medium]}, token=admin
        )
        assert status == 200
        assert sorted(t["id"] for t in body["accepted"]) == sorted(low)
        assert [(r["task_id"], r["code"]) for r in body["refused"]] == [(medium, "E_FORBIDDEN")]
        assert _ok(server.script("task", "accept", medium, "--json"))["status"] == "done"
        shown = _ok(server.cli("task", "show", medium, "--json"))
        history = shown["history"]
        assert isinstance(history, list) and history[-1]["action"] == "accept"
        r = server.script("task", "accept", medium, "--json")
        assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "E_WRONG_STATE"


def test_agent_keys_are_refused_on_human_endpoints(tmp_path: Path) -> None:
    with running(tmp_path / "d") as server:
        _ok(server.script("project", "create", "demo", "--repo", "https://example.com/demo.git", "--json"))
        key = str(_ok(server.script("key", "create", "agent", "bob", "--json"))["key"])
        (tid,) = _agent_submits(server, key, "demo")
        status, body = server.request("POST", f"/api/tasks/{tid}/accept", token=key)
        assert status == 403 and body["code"] == "E_FORBIDDEN"
        status, body = server.request("POST", "/api/keys", {"kind": "agent", "name": "evil"}, token=key)
        assert status == 403


def test_spec_export_writes_the_rendered_spec_into_a_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)  # project create wants a repository
    with running(tmp_path / "d") as server:
        admin = server.admin_token
        _ok(server.script("project", "create", "demo", "--repo", str(repo), "--json"))
        status, spec = server.request(
            "POST",
            "/api/projects/demo/specs",
            {"title": "Health", "body": "GET /healthz", "criteria": [{"text": "returns 200"}]},
            token=admin,
        )
        assert status == 201
        _ok(server.script("spec", "approve", spec["id"], "--project", "demo", "--json"))
        out = _ok(
            server.cli("spec", "export", spec["id"], "--project", "demo", "--repo", str(repo), "--json")
        )
        written = repo / "specs" / f"{spec['id']}.md"
        assert out["written"] == str(written)
        text = written.read_text()
        assert text.startswith(f"# {spec['id']}: Health") and "returns 200" in text


def test_start_from_project_commands_with_the_cli(tmp_path: Path) -> None:
    """`taskgate verifier-config draft` prints a config to review on stdout (notes on stderr);
    `set` saves the reviewed file."""
    with running(tmp_path / "d") as server:
        _ok(server.script("project", "create", "demo", "--repo", "https://example.com/demo.git", "--json"))
        status, _ = server.request(
            "PUT",
            "/api/projects/demo/execution-defaults",
            {"verification_commands": ["pytest -q --junitxml=out/junit.xml", "mypy src"]},
            token=server.admin_token,
        )
        assert status == 200
        drafted = server.cli("verifier-config", "draft", "demo")
        assert drafted.returncode == 0, drafted.stderr
        config = json.loads(drafted.stdout)
        assert config["checks"]["pytest"]["report"] == {"path": "out/junit.xml", "format": "junit"}
        assert (
            "note: Review every command" in drafted.stderr and "'mypy-src' writes no report" in drafted.stderr
        )
        assert _ok(server.cli("verifier-config", "get", "demo", "--json"))["config"] is None  # not saved
        (tmp_path / "cfg.json").write_text(drafted.stdout)
        saved = _ok(
            server.script("verifier-config", "set", "demo", "--file", str(tmp_path / "cfg.json"), "--json")
        )
        assert sorted(saved["config"]["checks"]) == ["mypy-src", "pytest"]  # type: ignore[index]
