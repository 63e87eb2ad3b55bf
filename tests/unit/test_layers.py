"""Arrows point down only: mcp/api/auth/local -> service -> domain + store + signing; domain imports
nothing of ours. Read from the source (every import statement, lazy ones included)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "taskgate"

# What each package may import from taskgate (besides itself). telemetry imports nothing of
# ours: every layer above domain may count.
ALLOWED = {
    "domain": set(),
    "store": {"domain", "telemetry"},
    "signing": {"domain"},  # the attestation key: a port with adapters, like the store
    "service": {"domain", "store", "signing", "telemetry"},
    "auth": {"domain", "store", "service", "runtime", "telemetry"},
}


def _imports(path: Path) -> set[str]:
    """The taskgate packages a module imports ('taskgate.service.keys' -> 'service')."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "taskgate" and len(parts) > 1:
                out.add(parts[1])
    return out


def test_each_layer_imports_only_the_layers_below() -> None:
    offenders = []
    for package, allowed in ALLOWED.items():
        for path in sorted((SRC / package).rglob("*.py")):
            wrong = _imports(path) - allowed - {package}
            if wrong:
                offenders.append(f"{path.relative_to(SRC)} imports {sorted(wrong)}")
    assert offenders == []


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from taskgate.auth import resolve\n    import taskgate.mcp.app\n")
    assert _imports(module) == {"auth", "mcp"}
