"""The commands the demo prints name `taskgate` the way the person can run it from where they
are: by name once it is on their PATH, else by the path they started it by."""

from __future__ import annotations

import sys
from pathlib import Path

from taskgate.demo.tour import runnable_as


def test_before_the_readme_puts_it_on_the_path_the_typed_path_is_printed(tmp_path: Path) -> None:
    script = tmp_path / "clone" / ".venv" / "bin" / "taskgate"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    clone = tmp_path / "clone"
    assert runnable_as(".venv/bin/taskgate", None, clone) == ".venv/bin/taskgate"
    assert runnable_as(str(script), None, clone) == "./.venv/bin/taskgate"
    assert runnable_as(str(script), None, tmp_path / "elsewhere") == str(script)
    # another taskgate on the PATH is not this one: the path still
    assert runnable_as(".venv/bin/taskgate", "/usr/local/bin/taskgate", clone) == ".venv/bin/taskgate"


def test_on_the_path_it_is_taskgate(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "taskgate"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    assert runnable_as("taskgate", str(script), tmp_path / "anywhere") == "taskgate"
    assert runnable_as(str(script), str(script), tmp_path) == "taskgate"


def test_started_as_a_module_it_says_so() -> None:
    assert runnable_as("/x/taskgate/cli/__main__.py", None, Path("/")) == f"{sys.executable} -m taskgate.cli"
