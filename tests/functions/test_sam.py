"""The stack builds: `sam validate --lint` is clean and `sam build` succeeds, with no Docker.

The SAM CLI lives in its own virtual environment (its pins clash with the project's):
scripts/test.sh installs it in .venv-sam, or TASKGATE_SAM names a `sam` to use. These tests
fail, never skip, when it is missing: a green suite must mean the template was built.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def sam() -> str:
    path = os.environ.get("TASKGATE_SAM") or str(ROOT / ".venv-sam" / "bin" / "sam")
    if not Path(path).is_file():
        pytest.fail(
            f"no SAM CLI at {path}: run `bash scripts/test.sh` (it installs aws-sam-cli in .venv-sam) "
            "or set TASKGATE_SAM to a sam executable"
        )
    return path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "SAM_CLI_TELEMETRY": "0",
            "AWS_DEFAULT_REGION": env.get("AWS_DEFAULT_REGION", "us-east-1"),
            # The layer recipe (layers/Makefile) runs pip with this Python.
            "PYTHON": sys.executable,
        }
    )
    return env


def test_sam_validate_lint_is_clean() -> None:
    out = subprocess.run(
        [sam(), "validate", "--lint", "--template-file", str(ROOT / "template.yaml")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "is a valid SAM Template" in out.stdout + out.stderr


def test_sam_build_makes_the_layer_and_every_function(tmp_path: Path) -> None:
    build = tmp_path / "build"
    out = subprocess.run(
        [sam(), "build", "--build-dir", str(build), "--template-file", str(ROOT / "template.yaml")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert "Build Succeeded" in out.stdout + out.stderr

    layer = build / "DependencyLayer" / "python"
    assert (layer / "taskgate" / "cloud" / "dispatcher.py").is_file()
    # Wheels for the functions' platform (Linux arm64, CPython 3.13), not this machine's.
    cores = list((layer / "pydantic_core").glob("_pydantic_core.*.so"))
    assert [c.name for c in cores] == ["_pydantic_core.cpython-313-aarch64-linux-gnu.so"]
    for package in ("aws_lambda_powertools", "aws_xray_sdk", "mcp", "mangum", "boto3", "pydantic"):
        assert (layer / package).is_dir(), package
    size = sum(f.stat().st_size for f in layer.rglob("*") if f.is_file())
    assert size < 200 * 1024 * 1024, f"layer is {size / 1e6:.0f} MB; Lambda allows 250 MB unzipped in all"

    for name in ("McpFunction", "ApiFunction", "AuthorizerFunction", "SweeperFunction", "DispatcherFunction"):
        files = sorted(p.name for p in (build / name).iterdir())
        assert files == ["app.py"], (name, files)  # the entry point only: everything else is the layer
    publisher = build / "BoardPublisherFunction"
    assert (publisher / "app.py").is_file()
    if (ROOT / "web").is_dir():  # the board's files travel with the function that publishes them
        web = sorted(p.relative_to(ROOT / "web").as_posix() for p in (ROOT / "web").rglob("*") if p.is_file())
        built = sorted(
            p.relative_to(publisher / "web").as_posix() for p in (publisher / "web").rglob("*") if p.is_file()
        )
        assert built == web
    built_template = (build / "template.yaml").read_text()
    assert "CodeUri: McpFunction" in built_template and "ContentUri: DependencyLayer" in built_template


def _layer_plan(*assignments: str) -> subprocess.CompletedProcess[str]:
    """What layers/Makefile would run (`make -n`), with these variables."""
    return subprocess.run(
        [
            "make",
            "-n",
            "-C",
            str(ROOT / "layers"),
            "build-DependencyLayer",
            "ARTIFACTS_DIR=/nonexistent",
            *assignments,
        ],
        env={k: v for k, v in _env().items() if k not in ("LAYER_FOR", "PLATFORM", "RUNTIME", "PYC_PYTHON")},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_layer_is_for_lambda_unless_asked_for_this_machine() -> None:
    lambda_ = _layer_plan()
    assert lambda_.returncode == 0, lambda_.stderr
    assert "--platform manylinux2014_aarch64" in lambda_.stdout and "--python-version 3.13" in lambda_.stdout
    assert "LAYER_FOR=host" not in lambda_.stdout
    here = f"{os.uname().machine}"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    host = _layer_plan("LAYER_FOR=host", f"PYTHON={sys.executable}")
    assert host.returncode == 0, host.stderr
    assert f"--platform manylinux2014_{here}" in host.stdout
    assert f"--python-version {version}" in host.stdout
    # It says so, in the build's output.
    assert (
        f"the layer is for this machine (manylinux2014_{here}, CPython {version}), not for Lambda"
        in host.stdout
    )
    wrong = _layer_plan("LAYER_FOR=arm")
    assert (
        wrong.returncode != 0 and 'LAYER_FOR is "lambda" (the default) or "host", not "arm"' in wrong.stderr
    )
