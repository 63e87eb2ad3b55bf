"""A one-constant Python project (`conf.LIMIT`, its test) and the changes the merge tests make
to it: a rename of the constant with its test, a second test that uses the old name, and the
criteria on each; `conf_gate` serves it behind a gate, `on_branch` commits on a branch of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.mcp.live import Live
from tests.verifier.support import Gate, Repo, git, pytest_config

CONF = "LIMIT = 10\n"
CONF_TEST = "import conf\n\n\ndef test_limit():\n    assert conf.LIMIT == 10\n"
RENAMED = "MAX_LIMIT = 10\n"
RENAMED_TEST = "import conf\n\n\ndef test_max_limit():\n    assert conf.MAX_LIMIT == 10\n"
# A module of its own that uses the limit, and its test: new behaviour whose test fails before
# the change and when `doubled` is stubbed out (a guard's test must be the baseline's).
USE_PY = "import conf\n\n\ndef doubled():\n    return conf.LIMIT * 2\n"
USES = "from use import doubled\n\n\ndef test_uses_limit():\n    assert doubled() == 20\n"
RENAME = {"text": "the limit is MAX_LIMIT", "kind": "test", "verify_ref": "test_conf.test_max_limit"}
USE = {"text": "the limit doubles", "kind": "test", "verify_ref": "test_use.test_uses_limit"}


def conf_gate(live: Live, tmp_path: Path, **config: Any) -> Gate:
    repo = Repo.create(
        tmp_path / "repo", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    return Gate.create(live, repo, pytest_config(**config))


def on_branch(repo: Repo, name: str, start: str, files: dict[str, str]) -> str:
    """A commit on a new branch from `start`; the repository goes back to main."""
    git(repo.path, "checkout", "--quiet", "-b", name, start)
    sha = repo.commit(files, name)
    git(repo.path, "checkout", "--quiet", "main")
    return sha


def own_change(name: str) -> tuple[dict[str, str], dict[str, Any]]:
    """A change of its own, touching no other: a module `name` with one function and its test,
    named by a criterion. The test fails before the change and with the function stubbed out, as
    a test of new behaviour does; it merges with any other such change."""
    module = f"def {name}():\n    return {name!r}\n"
    test = f"from {name} import {name}\n\n\ndef test_{name}():\n    assert {name}() == {name!r}\n"
    criterion = {"text": f"{name} works", "kind": "test", "verify_ref": f"test_{name}.test_{name}"}
    return {f"{name}.py": module, f"test_{name}.py": test}, criterion
