"""The runner versions a check printed (domain/runners.py), read from the output of real runs:
pytest run for real in a temporary repository, through the verifier's own process runner (its
head is kept apart, so a long run still shows its header); node's test runner run for real
(it prints no version); vitest from lines recorded from a real run (vitest 1.6.1 under node 20:
no vitest is installed where the suite runs)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from taskgate.domain.runners import RUNNER_CHARS, runner_line
from taskgate.verifier import process
from tests.verifier.support import PYTHON, pytest_runner

TESTS = "def test_one():\n    assert 1 + 1 == 2\n"
ENV = {"PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

# Recorded from `npx vitest run` (vitest 1.6.1) with NO_COLOR=1, and with FORCE_COLOR=1.
VITEST_PLAIN = "\n RUN  v1.6.1 /tmp/i20vt\n\n ✓ t/d.test.mjs  (1 test) 2ms\n\n Test Files  1 passed (1)\n"
VITEST_COLOUR = "\n\x1b[7m\x1b[1m\x1b[36m RUN \x1b[39m\x1b[22m\x1b[27m \x1b[36mv1.6.1\x1b[39m \x1b[90m/tmp/i20vt\x1b[39m\n\n"


def _run(tmp_path: Path, command: str) -> process.Exited:
    (tmp_path / "test_it.py").write_text(TESTS)
    done = process.run(command, cwd=tmp_path, timeout_s=60, env=ENV)
    assert done.exit_code == 0, done.output
    return done


@pytest.mark.parametrize("flags", ["", "-v"], ids=["default", "verbose"])
def test_pytest_prints_its_versions_in_its_header(tmp_path: Path, flags: str) -> None:
    done = _run(tmp_path, f"{PYTHON} -m pytest -p no:cacheprovider {flags} test_it.py")
    assert "platform " in done.head  # the real header, as pytest printed it
    assert runner_line(done.head, done.output) == pytest_runner()


def test_a_quiet_pytest_prints_no_header_and_has_no_runner_line(tmp_path: Path) -> None:
    done = _run(tmp_path, f"{PYTHON} -m pytest -q -p no:cacheprovider test_it.py")
    assert "1 passed" in done.output
    assert runner_line(done.head, done.output) is None


def test_the_header_of_a_long_run_is_read_from_its_head(tmp_path: Path) -> None:
    # 120 KB after pytest's header: the kept tail (64 KiB) has lost it, the head has not.
    done = _run(tmp_path, f"{PYTHON} -m pytest -p no:cacheprovider test_it.py; seq 1 20000")
    assert len(done.output.encode()) <= process.TAIL_BYTES and runner_line(done.output) is None
    assert len(done.head.encode()) <= process.HEAD_BYTES
    assert runner_line(done.head, done.output) == pytest_runner()


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_test_runner_prints_no_version(tmp_path: Path) -> None:
    (tmp_path / "one.test.js").write_text(
        "const test = require('node:test'); const assert = require('node:assert');\n"
        "test('one', () => assert.equal(1, 1));\n"
    )
    done = process.run("node --test", cwd=tmp_path, timeout_s=60, env=ENV)
    assert done.exit_code == 0 and "pass 1" in done.output, done.output
    assert runner_line(done.head, done.output) is None


@pytest.mark.parametrize("output", [VITEST_PLAIN, VITEST_COLOUR], ids=["plain", "colour"])
def test_vitest_prints_its_version_on_its_run_line(output: str) -> None:
    assert runner_line(output) == "vitest 1.6.1"  # the checkout's path is left out


def test_several_runners_in_one_check_and_the_bound() -> None:
    header = "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0\n"
    assert runner_line(VITEST_PLAIN + header) == "pytest 8.3.2 (Python 3.12.3, pluggy 1.5.0); vitest 1.6.1"
    # The first header counts; a version longer than 40 characters is not read as one; the line
    # is at most RUNNER_CHARS.
    other = header.replace("8.3.2", "7.4.0")
    assert runner_line(other + header) == "pytest 7.4.0 (Python 3.12.3, pluggy 1.5.0)"
    long = "platform linux -- Python 3.12.3, pytest-" + "9" * 41 + ", pluggy-1.5.0\n"
    assert runner_line(long + header) == "pytest 8.3.2 (Python 3.12.3, pluggy 1.5.0)"
    assert len(runner_line(header + VITEST_PLAIN) or "") <= RUNNER_CHARS
    assert runner_line("pytest-8.3.2 was mentioned in passing\n") is None
