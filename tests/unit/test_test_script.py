"""`scripts/test.sh --help` says what the script does and does nothing: no venv is made, nothing
is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test.sh"


def test_help_says_what_it_does_and_installs_nothing(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "test.sh")
    for flag in ("--help", "-h"):
        done = subprocess.run(
            ["bash", "scripts/test.sh", flag], cwd=tmp_path, capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("usage: bash scripts/test.sh [PYTEST ARGS...]")
        assert "ruff" in done.stdout and "mypy" in done.stdout and "pytest" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scripts"]  # no .venv, no .venv-sam
