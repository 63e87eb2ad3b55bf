"""Dependency caches: made only from the check run on the baseline, restored as a copy into
each submission's checkout, never written from a submission's checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from taskgate.domain.verifier_config import CacheSpec
from taskgate.verifier.cache import PLACEHOLDER, LocalCacheStore, copy_tree, matches, relocate
from tests.mcp.live import Live
from tests.support.users import IS_ROOT
from tests.verifier.support import BROKEN, KEEPS_DIGITS, PYTHON, SLUGIFY, SLUGIFY_TESTS, Gate, Repo, git

pytestmark = pytest.mark.skipif(
    not IS_ROOT, reason="caches are used only when checks run as a check user (root)"
)

# An "install" that behaves like a virtualenv: a runner whose script names the checkout's absolute
# path (as a venv's scripts and an editable install do), built only when missing, each build
# counted in a file outside the checkout.
INSTALL = (
    "[ -x .venv/bin/runner ] || {{ mkdir -p .venv/bin && "
    "printf '#!/bin/sh\\ncd %s && exec {python} -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml\\n' "
    '"$PWD" > .venv/bin/runner && chmod +x .venv/bin/runner && echo built >> {log}; }}; '
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 .venv/bin/runner"
)


def config(log: Path) -> dict[str, Any]:
    return {
        "check_timeout_minutes": 2,
        "checks": {
            "unit": {
                "command": INSTALL.format(python=PYTHON, log=log),
                "report": {"path": "reports/junit.xml", "format": "junit"},
                "cache": {"key": ["requirements*.txt"], "paths": [".venv"]},
            }
        },
    }


@pytest.fixture
def setup(live: Live, tmp_path: Path) -> tuple[Gate, Path, dict[str, str]]:
    log = tmp_path / "installs.log"
    repo = Repo.create(
        tmp_path / "repo",
        {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS, "requirements.txt": "pytest\n"},
    )
    gate = Gate.create(live, repo, config(log))
    env = {"TASKGATE_VERIFIER_CACHE": str(tmp_path / "cache")}
    return gate, log, env


def branch(gate: Gate, name: str, files: dict[str, str]) -> str:
    """A submission as an agent makes one: a commit on a branch of its own off main."""
    git(gate.repo.path, "checkout", "--quiet", "-B", name, "main")
    try:
        return gate.repo.commit(files, name)
    finally:
        git(gate.repo.path, "checkout", "--quiet", "main")


def builds(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def verdicts(gate: Gate, env: dict[str, str]) -> dict[str, dict[str, Any]]:
    done = gate.verify(env=env)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return {r["task_id"]: r for r in map(json.loads, done.stdout.splitlines())}


def progress(gate: Gate, env: dict[str, str]) -> str:
    done = gate.verify("--once", "--project", gate.project, env=env)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout


def test_made_once_from_the_baseline_and_restored_where_the_checkout_is(
    setup: tuple[Gate, Path, dict[str, str]],
) -> None:
    gate, log, env = setup
    first = gate.task([KEEPS_DIGITS])
    gate.submit(first, branch(gate, "first", {"slug.py": SLUGIFY + "\n# one\n"}))
    out = progress(gate, env)
    assert "cache unit: none yet for key" in out and "running the check on the baseline" in out, out
    assert "cache unit: saved from the baseline" in out, out
    assert f"{first}: passed -> verified" in out, out
    assert builds(log) == 1  # the baseline's run built it; the submission's restored it
    for n in range(2):
        task = gate.task([KEEPS_DIGITS])
        gate.submit(task, branch(gate, f"more-{n}", {"slug.py": SLUGIFY + f"\n# {n}\n"}))
        out = progress(gate, env)
        assert "cache unit: restored .venv (key" in out, out
        # The runner names the checkout it was built in: it passes only if the restore wrote
        # this checkout's path in.
        assert f"{task}: passed -> verified" in out, out
    assert builds(log) == 1


def test_a_submission_that_poisons_the_restored_venv_does_not_affect_the_next(
    setup: tuple[Gate, Path, dict[str, str]], tmp_path: Path
) -> None:
    gate, log, env = setup
    poisoned = tmp_path / "poisoned"
    fake_runner = (
        '#!/bin/sh\\nmkdir -p reports && printf \'<testsuite name=\\"pytest\\" tests=\\"1\\">'
        '<testcase classname=\\"test_slug.TestSlugify\\" name=\\"test_keeps_digits\\"/></testsuite>\' '
        "> reports/junit.xml\\n"
    )
    # In the library the tests import: a conftest of the submission's is not in the grading run.
    poison = f"""import os, pathlib
runner = pathlib.Path(".venv/bin/runner")
runner.write_text("{fake_runner}")
os.chmod(runner, 0o755)
pathlib.Path("{poisoned}").write_text(str(os.getuid()))
"""
    evil = gate.task([KEEPS_DIGITS])
    gate.submit(evil, branch(gate, "evil", {"slug.py": poison + SLUGIFY}))
    out = progress(gate, env)
    assert "cache unit: restored .venv" in out, out
    # The restored files were the check user's: the poisoning took, in that checkout.
    assert poisoned.read_text() == str(_check_uid(out)), out
    # The next submission breaks the code: the fake runner would pass it.
    broken = gate.task([KEEPS_DIGITS])
    gate.submit(broken, branch(gate, "broken", {"slug.py": BROKEN}))
    out = progress(gate, env)
    assert "cache unit: restored .venv" in out, out
    assert f"{broken}: failed -> ready" in out, out
    assert builds(log) == 1


def _check_uid(out: str) -> int:
    for line in out.splitlines():
        if "checks run as" in line and "(uid " in line:
            return int(line.rsplit("(uid ", 1)[1].rstrip(")"))
    raise AssertionError(f"no check user in {out}")


def test_a_submission_that_changes_a_key_file_runs_without_the_cache(
    setup: tuple[Gate, Path, dict[str, str]],
) -> None:
    gate, log, env = setup
    warm = gate.task([KEEPS_DIGITS])
    gate.submit(warm, branch(gate, "warm", {"slug.py": SLUGIFY + "\n# warm\n"}))
    progress(gate, env)
    assert builds(log) == 1
    task = gate.task([KEEPS_DIGITS])
    gate.submit(task, branch(gate, "deps", {"requirements.txt": "pytest\nrequests\n"}))
    out = progress(gate, env)
    assert "cache unit: not used: the submission changes requirements.txt, a key file" in out, out
    assert f"{task}: passed -> verified" in out, out
    assert builds(log) == 2  # its own check installed


def test_a_submission_with_a_link_where_the_cache_goes_gets_no_cache(
    setup: tuple[Gate, Path, dict[str, str]], tmp_path: Path
) -> None:
    gate, _, env = setup
    outside = tmp_path / "outside"
    outside.mkdir()
    task = gate.task([KEEPS_DIGITS])
    git(gate.repo.path, "checkout", "--quiet", "-B", "link", "main")
    os.symlink(outside, gate.repo.path / ".venv")
    sha = gate.repo.commit({"slug.py": SLUGIFY + "\n# link\n"}, "link")
    git(gate.repo.path, "checkout", "--quiet", "main")
    gate.submit(task, sha)
    out = progress(gate, env)
    assert "cache unit: not used: the submission has .venv, where the cache goes" in out, out
    assert list(outside.iterdir()) == []  # nothing was written through the link


# -- the pieces ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("requirements*.txt", "requirements-dev.txt", True),
        ("requirements*.txt", "sub/requirements.txt", False),
        ("**/package-lock.json", "a/b/package-lock.json", True),
        ("**/package-lock.json", "package-lock.json", True),
        ("pyproject.toml", "pyproject.toml.bak", False),
    ],
)
def test_key_patterns(pattern: str, path: str, hit: bool) -> None:
    assert matches(pattern, path) is hit


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"key": ["../x"], "paths": [".venv"]}, "must be a relative path inside the checkout"),
        ({"key": ["a"], "paths": ["/venv"]}, "must be a relative path inside the checkout"),
        ({"key": ["a"], "paths": [".git/hooks"]}, "is inside .git"),
        ({"key": ["a"], "paths": ["a", "a/b"]}, "overlap"),
        ({"key": ["a"], "paths": ["node_*"]}, "is a path, not a pattern"),
        ({"key": [], "paths": [".venv"]}, "at least 1 item"),
        ({"key": ["a"], "paths": [".venv"], "restore": "always"}, "Extra inputs are not permitted"),
    ],
)
def test_cache_specs_that_are_refused(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        CacheSpec.model_validate(spec)


def test_a_config_with_a_bad_cache_is_refused_and_changes_nothing(live: Live, tmp_path: Path) -> None:
    repo = Repo.create(tmp_path / "r", {"a.txt": "a"})
    gate = Gate.create(live, repo, {"checks": {"unit": {"command": "true"}}})
    before = live.dump()
    r = live.rest(
        "PUT",
        f"/api/projects/{gate.project}/verifier-config",
        {"checks": {"unit": {"command": "true", "cache": {"key": ["a"], "paths": ["../up"]}}}},
    )
    assert r.status_code in (400, 422), r.text
    assert r.json()["code"] == "E_VALIDATION"
    assert "cache path '../up' must be a relative path inside the checkout" in r.text
    assert live.dump() == before


def test_copies_keep_links_as_links_and_skip_what_is_not_a_file(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "bin").mkdir(parents=True)
    (src / "bin" / "tool").write_text("#!/bin/sh\n")
    os.chmod(src / "bin" / "tool", 0o4755)  # setuid: not carried into a copy
    os.symlink("/etc/passwd", src / "bin" / "secret")
    os.mkfifo(src / "bin" / "pipe")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "x.pyc").write_bytes(b"\0")
    copy_tree(src, tmp_path / "dst")
    dst = tmp_path / "dst"
    assert os.readlink(dst / "bin" / "secret") == "/etc/passwd"
    assert not (dst / "bin" / "pipe").exists() and not (dst / "__pycache__").exists()
    assert os.stat(dst / "bin" / "tool").st_mode & 0o7777 == 0o755


def test_relocation_rewrites_text_and_links_but_not_binaries(tmp_path: Path) -> None:
    old = str(tmp_path / "old" / "checkout")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "script").write_text(f"#!{old}/.venv/bin/python\n")
    (tmp_path / "t" / "blob").write_bytes(old.encode() + b"\0")
    os.symlink(f"{old}/src", tmp_path / "t" / "link")
    changed = relocate(tmp_path / "t", old, PLACEHOLDER)
    assert sorted(changed) == ["link", "script"]
    assert (tmp_path / "t" / "script").read_text() == f"#!{PLACEHOLDER}/.venv/bin/python\n"
    assert os.readlink(tmp_path / "t" / "link") == f"{PLACEHOLDER}/src"
    # A list naming paths outside the tree, or through a link, changes nothing there.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text(PLACEHOLDER)
    os.symlink(outside, tmp_path / "t" / "out")
    assert relocate(tmp_path / "t", PLACEHOLDER, "/x", ["../outside/f", "out/f", str(outside / "f")]) == []
    assert (outside / "f").read_text() == PLACEHOLDER


def test_the_local_store_evicts_the_least_recently_restored(tmp_path: Path) -> None:
    store = LocalCacheStore(tmp_path / "cache", max_bytes=2500)
    keys = [c * 64 for c in "abc"]
    for i, key in enumerate(keys[:2]):
        tree = tmp_path / f"t{i}"
        tree.mkdir()
        (tree / "f").write_bytes(b"x" * 1000)
        store.save(key, tree)
    os.utime(tmp_path / "cache" / keys[0], (1, 1))
    os.utime(tmp_path / "cache" / keys[1], (2, 2))
    assert store.restore(keys[0], tmp_path / "r0")  # restored: now the most recent
    tree = tmp_path / "t2"
    tree.mkdir()
    (tree / "f").write_bytes(b"x" * 1000)
    store.save(keys[2], tree)
    assert store.restore(keys[0], tmp_path / "r1")
    assert not store.restore(keys[1], tmp_path / "r2")
    assert store.restore(keys[2], tmp_path / "r3")
    assert (tmp_path / "r3" / "f").read_bytes() == b"x" * 1000
    big = tmp_path / "big"
    big.mkdir()
    (big / "f").write_bytes(b"x" * 3000)
    with pytest.raises(Exception, match="over the cache's cap"):
        store.save("d" * 64, big)
    assert not store.restore("d" * 64, tmp_path / "r4")


def test_a_submission_already_on_the_base_branch_makes_no_cache(
    setup: tuple[Gate, Path, dict[str, str]],
) -> None:
    """Its baseline is itself: a cache made from it would be made by its own code."""
    gate, log, env = setup
    task = gate.task([KEEPS_DIGITS])
    gate.submit(task, gate.repo.commit({"slug.py": SLUGIFY + "\n# on main\n"}))
    out = progress(gate, env)
    assert "cache unit: not made: the submitted commit is its own baseline" in out, out
    assert f"{task}: passed -> verified" in out, out
    assert builds(log) == 1  # its own check installed; nothing was saved
    assert not any((Path(env["TASKGATE_VERIFIER_CACHE"])).glob("[0-9a-f]*"))
