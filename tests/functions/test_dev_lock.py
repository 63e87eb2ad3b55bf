"""The dev lock: scripts/test.sh installs the suite, the browser driver and the static checks
(ruff, mypy with its stubs, import-linter) through requirements/dev.txt as a constraints file,
so a new release of a tool cannot change what CI checks until the lock moves. The lock holds
every package the `dev` extra names within pyproject.toml's ranges, at the runtime lock's
versions where the two share a package, and this environment has the static checks' versions."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.utils import canonicalize_name

from tests.support.locks import DEV, RUNTIME, declared, entries, locked

ROOT = Path(__file__).resolve().parents[2]
STATIC_CHECKS = ("ruff", "mypy", "boto3-stubs", "import-linter")  # what scripts/test.sh runs itself


def _dev_extras() -> list[str]:
    """The extras the `dev` extra gathers (`taskgate[test,browser,lint]`)."""
    (itself,) = declared("dev")
    assert canonicalize_name(itself.name) == "taskgate"
    return sorted(itself.extras)


def test_the_dev_lock_pins_every_declared_package_within_its_range() -> None:
    pins = entries(DEV)
    assert _dev_extras() == ["browser", "lint", "test"]
    wanted = declared() + [req for extra in _dev_extras() for req in declared(extra)]
    for req in wanted:
        name = canonicalize_name(req.name)
        versions = [pin.version for pin in pins if pin.name == name]
        assert versions, (
            f"{req.name} is in pyproject.toml but not in requirements/dev.txt: run scripts/lock.sh"
        )
        for version in versions:
            assert req.specifier.contains(version, prereleases=True), (
                f"requirements/dev.txt has {req.name}=={version}, outside pyproject.toml's "
                f"{req.specifier}: run scripts/lock.sh"
            )


def test_the_dev_lock_agrees_with_the_runtime_lock() -> None:
    runtime = locked(RUNTIME)
    dev = {(pin.name, pin.version) for pin in entries(DEV)}
    dev_names = {name for name, _ in dev}
    shared = set(runtime) & dev_names
    assert len(shared) > 20
    for name in shared:
        assert (name, runtime[name]) in dev, (
            f"{name}: requirements/runtime.txt has {runtime[name]}, requirements/dev.txt "
            f"{sorted(v for n, v in dev if n == name)}: run scripts/lock.sh"
        )


def test_scripts_test_installs_through_the_dev_lock() -> None:
    script = (ROOT / "scripts" / "test.sh").read_text()
    installs = [ln for ln in script.splitlines() if re.search(r"pip install .*(-e|taskgate)", ln)]
    assert len(installs) == 1, installs
    (install,) = installs
    assert "-c requirements/dev.txt" in install
    extras = re.search(r"-e '\.\[([a-z,]+)\]'", install)
    assert extras and sorted(extras[1].split(",")) == _dev_extras()
    lock = (ROOT / "scripts" / "lock.sh").read_text()
    assert "--extra dev" in lock and "-o requirements/dev.txt" in lock
    assert "--constraint requirements/runtime.txt" in lock


def test_the_static_checks_run_at_the_locked_versions() -> None:
    """The tools scripts/test.sh runs, and everything they pull in, are installed here at the
    lock's versions (scripts/test.sh installs them so; a venv made by hand can drift)."""
    pins = entries(DEV)
    here = default_environment()
    tools = {canonicalize_name(name) for name in STATIC_CHECKS}
    grown = True
    while grown:  # what the tools pull in, by the lock's "via" lines
        pulled = {pin.name for pin in pins if pin.via & tools and pin.holds(here)}
        grown = not pulled <= tools
        tools |= pulled
    assert {"mypy-boto3-dynamodb", "botocore-stubs", "grimp", "typing-extensions"} <= tools
    wrong = {}
    for pin in pins:
        if pin.name in tools and pin.holds(here):
            installed = metadata.version(pin.name)
            if installed != pin.version:
                wrong[pin.name] = (installed, pin.version)
    assert not wrong, (
        f"installed here, and in requirements/dev.txt: {wrong}; "
        "install with `pip install -c requirements/dev.txt -e '.[test,lint,browser]'` (scripts/test.sh does)"
    )
