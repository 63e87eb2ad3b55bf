"""`verifier-config set`, `draft` and `verification on` warn when a check runs a path inside the
checkout that no earlier check creates (a `.venv/bin/python` nobody made): such a check cannot
start unless the repository holds that path. Real `taskgate serve`, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from taskgate.domain.tooling import unmade_paths
from tests.support.server import running

WARNING = (
    "warning: check unit runs .venv/bin/python, a path inside the checkout that no earlier check "
    "creates: it runs only if the repository holds it"
)


def test_only_paths_no_earlier_check_names_are_warned_of() -> None:
    assert unmade_paths({"unit": ".venv/bin/python -m pytest"}) == [WARNING.removeprefix("warning: ")]
    made = {
        "setup": "python3 -m venv .venv && .venv/bin/pip install -e .",
        "unit": ".venv/bin/python -m pytest",
    }
    # setup's own .venv/bin/pip is named by no earlier check; unit's .venv is made by setup
    assert [w.split(",")[0] for w in unmade_paths(made)] == ["check setup runs .venv/bin/pip"]
    assert unmade_paths(
        {"unit": "python3 -m pytest", "abs": "/usr/bin/python3 x.py", "sh": "./run-tests"}
    ) == [
        "check sh runs ./run-tests, a path inside the checkout that no earlier check creates: "
        "it runs only if the repository holds it"
    ]


def test_set_and_verification_on_warn_on_stderr(tmp_path: Path) -> None:
    with running(tmp_path / "d") as server:
        r = server.script("project", "create", "demo", "--repo", "https://example.com/demo.git", "--json")
        assert r.returncode == 0, r.stderr
        r = server.script("key", "create", "verifier", "ci", "--kind", "local", "--project", "demo", "--json")
        assert r.returncode == 0, r.stderr
        cfg = tmp_path / "cfg.json"
        cfg.write_text(json.dumps({"checks": {"unit": {"command": ".venv/bin/python -m pytest -q"}}}))
        r = server.script("verifier-config", "set", "demo", "--file", str(cfg), "--json")
        assert r.returncode == 0 and WARNING in r.stderr.splitlines(), r.stderr
        assert json.loads(r.stdout)["config"]["checks"]["unit"]["command"] == ".venv/bin/python -m pytest -q"
        r = server.script("verification", "on", "demo", "--json")
        assert r.returncode == 0 and WARNING in r.stderr.splitlines(), r.stderr
        assert json.loads(r.stdout)["on"] is True
        cfg.write_text(json.dumps({"checks": {"unit": {"command": "python3 -m pytest -q"}}}))
        r = server.script("verifier-config", "set", "demo", "--file", str(cfg), "--json")
        assert r.returncode == 0 and "warning:" not in r.stderr, r.stderr
