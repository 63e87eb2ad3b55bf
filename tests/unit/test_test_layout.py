"""Test modules do not import each other: what several tests share lives in a support module
(tests/support/, or a fixture in a conftest.py), so a test file can be moved, split or deleted
without breaking another, and pytest never collects one test module's tests twice."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
TEST_MODULE = re.compile(r"^test_\w*$")


def imported_test_modules(source: str, package: str) -> list[str]:
    """Each test module (`tests.<...>.test_*`) a module imports, at any depth; `package` is the
    importing module's package, for relative imports."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            if _is_test_module(base):
                found.append(base)
            # `from tests.unit import test_x` imports the test module itself.
            found += [
                f"{base}.{alias.name}"
                for alias in node.names
                if _is_test_module(f"{base}.{alias.name}") and TEST_MODULE.match(alias.name)
            ]
    return found


def _absolute(module: str, level: int, package: str) -> str:
    if level == 0:
        return module
    parts = package.split(".")
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, module] if module else parts)


def _is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and any(TEST_MODULE.match(part) for part in parts[1:])


@pytest.mark.parametrize(
    "source",
    [
        "from tests.adversarial.test_harness import ALL_PASS\n",
        "import tests.unit.test_brief_and_search as other\n",
        "from tests.unit import test_brief_and_search\n",
        "from .test_runs import _alive\n",
        "from . import test_runs\n",
        "def f():\n    from tests.verifier.test_merge import RENAME\n    return RENAME\n",
    ],
)
def test_the_scan_finds_each_way_to_import_a_test_module(source: str) -> None:
    assert imported_test_modules(source, "tests.verifier")


@pytest.mark.parametrize(
    "source",
    [
        "from tests.support.world import World\n",
        "from tests.verifier.support import Gate\n",
        "from tests.mcp.events import v2_event\n",
        "from .support import Gate\n",
        "import pytest_asyncio\n",
        "from taskgate.domain import testrefs\n",
        "from taskgate.domain.statements import test_result\n",
    ],
)
def test_the_scan_leaves_support_modules_alone(source: str) -> None:
    assert imported_test_modules(source, "tests.verifier") == []


def test_no_module_under_tests_imports_a_test_module() -> None:
    found = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for module in imported_test_modules(path.read_text(), ".".join(path.relative_to(ROOT).parent.parts))
    ]
    assert found == [], "\n".join(found)
