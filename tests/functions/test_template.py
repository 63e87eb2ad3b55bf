"""template.yaml is valid, and its table is the one the adapter and its tests use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from cfnlint.decode import decode

from taskgate.store.schema import dynamodb_table_definition

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


def _template() -> dict[str, Any]:
    tpl, errors = decode(str(TEMPLATE))
    assert not errors, errors
    assert tpl is not None
    return dict(tpl)


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
    assert set(functions) >= {"McpFunction", "ApiFunction", "AuthorizerFunction", "SweeperFunction"}
    for name, fn in functions.items():
        code = ROOT / fn["Properties"]["CodeUri"]
        module, attr = fn["Properties"]["Handler"].split(".")
        source = (code / f"{module}.py").read_text()
        assert f"import {attr}" in source, name
        # the entry point is a few lines: the logic lives in the package
        assert len(source.splitlines()) <= 6, name


def test_entry_points_load_in_a_fresh_interpreter() -> None:
    resources = _template()["Resources"]
    paths = [
        str(ROOT / v["Properties"]["CodeUri"] / "app.py")
        for v in resources.values()
        if v["Type"] == "AWS::Serverless::Function"
    ]
    script = (
        "import importlib.util, sys\n"
        "for i, p in enumerate(sys.argv[1:]):\n"
        "    spec = importlib.util.spec_from_file_location(f'entry{i}', p)\n"
        "    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
        "    assert callable(mod.handler), p\n"
        "print('ok', len(sys.argv) - 1)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *paths], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ok {len(paths)}"
