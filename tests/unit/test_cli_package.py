"""The CLI package: its modules import one another one way only, and the REST client the
verifier and the demo use loads without the parser and its commands."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "src" / "taskgate" / "cli"


def _cli_imports(path: Path) -> set[str]:
    """The modules of taskgate.cli that a module imports (lazy imports included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "taskgate.cli":
                out |= {a.name for a in node.names if (CLI / f"{a.name}.py").is_file()}
            elif node.module.startswith("taskgate.cli."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[2] for a in node.names if a.name.startswith("taskgate.cli.")}
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle in `graph`, or [] when it has none (depth-first, colouring nodes)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, set())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_module_of_the_cli_imports_one_that_imports_it() -> None:
    graph = {p.stem: _cli_imports(p) - {p.stem} for p in CLI.glob("*.py") if p.stem != "__init__"}
    assert "main" in graph and "client" in graph  # the walk found the package
    assert _cycle(graph) == []
    # the helpers import nothing of the command groups
    for helper in ("client", "presence", "text"):
        assert graph.get(helper, set()) == set(), helper


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_the_rest_client_loads_without_the_parser() -> None:
    code = (
        "import sys, taskgate.cli.client\n"
        "print(sorted(m for m in sys.modules if m.startswith('taskgate.cli')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['taskgate.cli', 'taskgate.cli.client']"


def test_the_console_script_and_python_dash_m_both_run_the_cli() -> None:
    script = Path(sys.executable).with_name("taskgate")
    for argv in ([str(script), "--version"], [sys.executable, "-m", "taskgate.cli", "--version"]):
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("taskgate "), out.stdout
