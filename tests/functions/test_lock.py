"""The builds install the lock: the Lambda layer (layers/Makefile) and the verifier image hold
exactly the versions of requirements/runtime.txt (made by scripts/lock.sh from pyproject.toml),
each checked against its hashes, and nothing else; the lock satisfies pyproject.toml's ranges.

The layer test runs the layer's recipe for real (pip downloads the arm64 wheels: it needs the
package index, as the whole suite does)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.locks import RUNTIME, declared, locked

ROOT = Path(__file__).resolve().parents[2]
LOCK = RUNTIME
# The functions' platform (layers/Makefile): Linux arm64, CPython 3.13.
LAMBDA = {
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "aarch64",
    "python_version": "3.13",
    "python_full_version": "3.13.0",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}
SERVE_ONLY = {"uvicorn", "click"}  # `taskgate serve`'s HTTP server and what only it pulls in


def _locked(env: dict[str, str] | None = None) -> dict[str, str]:
    return locked(LOCK, env)


def _declared() -> list[Requirement]:
    return declared()


def test_the_lock_pins_every_declared_dependency_within_its_range() -> None:
    pins = _locked()
    for req in _declared():
        name = canonicalize_name(req.name)
        if name in SERVE_ONLY:
            assert name not in pins, f"{name} is for `taskgate serve` only; the lock leaves it out"
            continue
        assert name in pins, (
            f"{req.name} is declared in pyproject.toml but not in the lock: run scripts/lock.sh"
        )
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"the lock has {req.name}=={pins[name]}, outside pyproject.toml's {req.specifier}: "
            "run scripts/lock.sh"
        )


def test_every_locked_package_has_hashes() -> None:
    text = LOCK.read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text[text.index("\n", text.index("scripts/lock.sh")) + 1 :])
    assert len(entries) == len(_locked()) > 20
    for entry in entries:
        assert "--hash=sha256:" in entry, entry.splitlines()[0]


def test_the_recipes_install_from_the_lock_alone() -> None:
    makefile = (ROOT / "layers" / "Makefile").read_text()
    assert "LOCK := $(REPO)/requirements/runtime.txt" in makefile
    assert '--require-hashes --no-deps -r "$(LOCK)"' in makefile
    assert "pyproject.toml" not in makefile.split("build-DependencyLayer:")[1]  # no second source
    dockerfile = (ROOT / "verifier_container" / "Dockerfile").read_text()
    runs = [ln for ln in dockerfile.splitlines() if ln.startswith("RUN pip install")]
    assert runs == [
        "RUN pip install --no-cache-dir --require-hashes --no-deps -r /src/requirements/runtime.txt",
        "RUN pip install --no-cache-dir --no-deps /src && rm -rf /src",
    ]


def test_the_layer_holds_exactly_the_locked_versions(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            "make",
            "build-DependencyLayer",
            f"ARTIFACTS_DIR={tmp_path}",
            f"PYTHON={sys.executable}",
            "PYC_PYTHON=",
        ],
        cwd=ROOT / "layers",
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    installed = {}
    for info in (tmp_path / "python").glob("*.dist-info"):
        meta = (info / "METADATA").read_text()
        name = re.search(r"^Name: (.+)$", meta, re.M)
        version = re.search(r"^Version: (.+)$", meta, re.M)
        assert name and version, info
        installed[canonicalize_name(name[1])] = version[1]
    expected = _locked(LAMBDA)
    assert "pywin32" in _locked() and "pywin32" not in expected  # the markers were read
    assert (
        installed.pop("taskgate")
        == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    )
    assert installed == expected
    assert not SERVE_ONLY & set(installed)
