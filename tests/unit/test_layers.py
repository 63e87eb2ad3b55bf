"""The import rules hold: import-linter's contracts in pyproject.toml ([tool.importlinter]: the
layers, a pure domain, boto3 only at the AWS edges), read from every import statement (lazy ones
included). The same contracts are run on a copy of the source with one wrong import added, to
show that each one catches what it is for."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = str(Path(sys.executable).with_name("lint-imports"))
LAYERS = "Arrows point down: entry points -> interfaces -> service -> store/signing -> domain"
PURE = "The domain imports nothing of ours"
AWS = "boto3 only in store/, signing/, cloud/ and the verifier's S3 cache"


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LINT, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_contract_is_kept() -> None:
    done = _lint(ROOT / "src", ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert all(f"{name} KEPT" in said for name in (LAYERS, PURE, AWS)), said


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    shutil.copytree(ROOT / "src" / "taskgate", src / "taskgate", ignore=shutil.ignore_patterns("__pycache__"))
    return src


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        (
            "domain/commit_ids.py",
            "import taskgate.service.records",
            (PURE, LAYERS),
        ),
        (
            "domain/commit_ids.py",
            "from taskgate import telemetry",
            (PURE, LAYERS),
        ),
        ("service/records.py", "from taskgate.mcp import errors", (LAYERS,)),
        ("store/body.py", "from taskgate.service import records", (LAYERS,)),
        ("verifier/tools.py", "from taskgate.local import serve", (LAYERS,)),
        ("service/records.py", "import boto3", (AWS,)),
        ("verifier/tools.py", "from botocore.config import Config", (AWS,)),
    ],
)
def test_a_wrong_import_breaks_its_contract(
    copy: Path, tmp_path: Path, module: str, line: str, broken: tuple[str, ...]
) -> None:
    path = copy / "taskgate" / module
    before = path.read_text()
    # Inside a function, as a lazy import would be: the contracts read those too.
    path.write_text(before + f"\n\ndef _added() -> None:\n    {line}\n")
    try:
        done = _lint(copy, tmp_path)
    finally:
        path.write_text(before)
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    kept = {LAYERS, PURE, AWS} - set(broken)
    assert all(f"{name} BROKEN" in said for name in broken), said
    assert all(f"{name} KEPT" in said for name in kept), said


def test_a_new_top_level_module_must_be_placed_in_a_layer(copy: Path, tmp_path: Path) -> None:
    added = copy / "taskgate" / "stray.py"
    added.write_text("X = 1\n")
    try:
        done = _lint(copy, tmp_path)
    finally:
        added.unlink()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "taskgate.stray" in done.stdout
