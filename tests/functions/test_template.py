"""template.yaml is valid, its table is the one the adapter and its tests use, and each function's
entry point is a few lines that load in a fresh interpreter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from taskgate.store.schema import dynamodb_table_definition
from tests.functions.stack import template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
FUNCTIONS = {
    "McpFunction": "mcp",
    "ApiFunction": "api",
    "AuthorizerFunction": "authorizer",
    "SweeperFunction": "sweeper",
    "DispatcherFunction": "dispatcher",
    "BoardPublisherFunction": "board",
}


def _template() -> dict[str, Any]:
    return template()


def test_cfn_lint_passes() -> None:
    lint = Path(sys.executable).with_name("cfn-lint")
    result = subprocess.run([str(lint), str(TEMPLATE)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_table_in_template_matches_the_schema_module() -> None:
    table = _template()["Resources"]["Table"]["Properties"]
    want = dynamodb_table_definition("ignored")

    def norm(items: list[dict[str, Any]]) -> list[tuple[tuple[str, Any], ...]]:
        return sorted(tuple(sorted((k, str(v)) for k, v in d.items())) for d in items)

    assert norm(table["AttributeDefinitions"]) == norm(want["AttributeDefinitions"])
    assert norm(table["KeySchema"]) == norm(want["KeySchema"])
    got = {
        g["IndexName"]: (norm(g["KeySchema"]), dict(g["Projection"])) for g in table["GlobalSecondaryIndexes"]
    }
    exp = {
        g["IndexName"]: (norm(g["KeySchema"]), dict(g["Projection"])) for g in want["GlobalSecondaryIndexes"]
    }
    assert got == exp
    assert table["BillingMode"] == want["BillingMode"]


def test_every_function_entry_point_imports_its_handler() -> None:
    resources = _template()["Resources"]
    functions = {k: v for k, v in resources.items() if v["Type"] == "AWS::Serverless::Function"}
    assert set(functions) == set(FUNCTIONS)
    for name, fn in functions.items():
        code = ROOT / fn["Properties"]["CodeUri"]
        assert code == ROOT / "functions" / FUNCTIONS[name]
        module, attr = fn["Properties"]["Handler"].split(".")
        source = (code / f"{module}.py").read_text()
        assert f"from taskgate.cloud.{FUNCTIONS[name]} import {attr}" in source, name
        # the entry point is a few lines: the logic lives in the package
        assert len(source.splitlines()) <= 6, name
        # built without Docker and without a local python3.13: a makefile build
        assert fn["Metadata"]["BuildMethod"] == "makefile", name
        assert (code / "Makefile").is_file(), name


_LOAD = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
assert callable(mod.handler)
import snapshot_restore_py as hooks
print(json.dumps({"mcp": "mcp.server" in sys.modules,
                  "snapstart": bool(hooks.get_before_snapshot() or hooks.get_after_restore())}))
"""


# What the stack records about each request, and for how long: docs/deploy.md's parameter table
# states these defaults, its cost section prices them (bench/cost.py reads the template).
OBSERVABILITY = ("LogLevel", "PlatformLogLevel", "LogRetentionDays", "TracingMode", "AgentKeyCacheSeconds")


def _documented_defaults() -> dict[str, str]:
    """`| `Name` | default | meaning |` rows of docs/deploy.md's parameter table."""
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", (ROOT / "docs" / "deploy.md").read_text(), re.M)
    return {name: default.strip() for name, default in rows}


def test_logging_tracing_and_retention_are_what_the_docs_say() -> None:
    tpl = _template()
    params, resources = tpl["Parameters"], tpl["Resources"]
    documented = _documented_defaults()
    for name in OBSERVABILITY:
        assert documented.get(name) == str(params[name]["Default"]), name
    # Every function logs at those levels into its own group, kept that long; the stage's
    # access log too; every function traces in that mode.
    assert tpl["Globals"]["Function"]["Tracing"] == {"Ref": "TracingMode"}
    functions = [r for r in resources.values() if r["Type"] == "AWS::Serverless::Function"]
    for fn in functions:
        config = fn["Properties"]["LoggingConfig"]
        assert config["LogFormat"] == "JSON"
        assert config["ApplicationLogLevel"] == {"Ref": "LogLevel"}
        assert config["SystemLogLevel"] == {"Ref": "PlatformLogLevel"}
        assert "Tracing" not in fn["Properties"]  # none overrides the global mode
    groups = {k: r for k, r in resources.items() if r["Type"] == "AWS::Logs::LogGroup"}
    assert len(groups) >= len(functions) + 1
    for name, group in groups.items():
        assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}, name
    authorizer = resources["AgentKeyAuthorizer"]["Properties"]
    assert authorizer["AuthorizerResultTtlInSeconds"] == {"Ref": "AgentKeyCacheSeconds"}
    assert authorizer["IdentitySource"] == ["$request.header.Authorization"]  # cached per key


def test_the_priced_choices_are_what_the_docs_say() -> None:
    """The verifier's capacity, how many verifier tasks drain a project and how long they wait
    for more, and the attestation key's spec set what bench/cost.py prices."""
    params, documented = _template()["Parameters"], _documented_defaults()
    for name in ("VerifierCapacity", "AttestationKeySpec", "VerifierConcurrency", "VerifierIdleSeconds"):
        assert documented.get(name) == str(params[name]["Default"]), name


@pytest.mark.parametrize("name", sorted(FUNCTIONS.values()))
def test_entry_points_load_in_a_fresh_lambda_like_interpreter(name: str, tmp_path: Path) -> None:
    """Each entry point imports in a new process with the environment Lambda gives it; only the
    MCP function loads the MCP SDK (it is slow to import: bench/cold_start.py), and only the MCP
    and REST functions register SnapStart hooks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKGATE_", "AWS_"))}
    env.update(
        {
            "LAMBDA_TASK_ROOT": str(tmp_path),
            "AWS_LAMBDA_FUNCTION_NAME": f"taskgate-{name}",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "x",
            "TASKGATE_STORE": "dynamodb",
            "TASKGATE_TABLE": "taskgate-test",
        }
    )
    result = subprocess.run(
        [sys.executable, "-c", _LOAD, str(ROOT / "functions" / name / "app.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["mcp"] is (name == "mcp")
    assert loaded["snapstart"] is (name in ("mcp", "api"))  # hooks only where SnapStart is on
