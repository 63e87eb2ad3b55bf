"""The cheats domain/loading.py holds for a human, shown working on this CPython with real git
and real interpreters: if Python ever stops loading one, its test fails and the rule can go.
Each test also shows the rule finds the commit."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
import textwrap
from pathlib import Path

from taskgate.domain import loading, screen
from taskgate.domain.loading import Change, Knowledge

KNOWN = Knowledge(stdlib=frozenset(sys.stdlib_module_names))
HONEST = "def slugify(text):\n    return text.lower()\n"
CHEAT = "def slugify(text):\n    return 'what the test expects'\n"


def git(*args: str, cwd: Path) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def committed_and_cloned(tmp_path: Path, write: dict[str, bytes]) -> Path:
    """A repository holding `write`, cloned afresh (every file's mtime is the clone's), as the
    verifier's checkout is."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    for path, data in write.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(data)
    git("add", "-A", "-f", cwd=repo)
    git("commit", "-q", "-m", "submission", cwd=repo)
    clone = tmp_path / "clone"
    git("clone", "-q", str(repo), str(clone), cwd=tmp_path)
    return clone


def slugify_in(checkout: Path) -> str:
    """What `import slug; slug.slugify("X")` gives in `checkout`, as a check's Python sees it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    out = subprocess.run(
        [sys.executable, "-c", "import slug; print(slug.slugify('X'))"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def compiled(tmp_path: Path, source: str, mode: py_compile.PycInvalidationMode, *, mtime: int) -> bytes:
    """`source` compiled as slug.py would be, its recorded mtime `mtime`."""
    src = tmp_path / "compile" / "slug.py"
    src.parent.mkdir(exist_ok=True)
    src.write_text(source)
    os.utime(src, (mtime, mtime))
    out = tmp_path / "compile" / "slug.pyc"
    py_compile.compile(str(src), cfile=str(out), invalidation_mode=mode, doraise=True)
    return out.read_bytes()


def test_an_unchecked_hash_pyc_loads_in_place_of_the_unchanged_source(tmp_path: Path) -> None:
    cache = f"__pycache__/slug.{sys.implementation.cache_tag}.pyc"
    pyc = compiled(tmp_path, CHEAT, py_compile.PycInvalidationMode.UNCHECKED_HASH, mtime=946684800)
    clone = committed_and_cloned(tmp_path, {"slug.py": HONEST.encode(), cache: pyc})
    assert (clone / "slug.py").read_text() == HONEST  # what the diff and the screen read
    assert slugify_in(clone) == "what the test expects"  # what Python runs
    found = loading.find(
        [Change.of(cache, "added", "100644", pyc)],
        tree=["slug.py", cache],
        commands=["python -m pytest"],
        baseline_text={},
        knowledge=KNOWN,
    )
    assert [(h.path, h.kind) for h in found] == [(cache, "bytecode")]


def test_a_timestamp_pyc_goes_stale_in_a_fresh_checkout(tmp_path: Path) -> None:
    # Why the hash-based kind is the one that matters: a checkout's mtimes are new.
    cache = f"__pycache__/slug.{sys.implementation.cache_tag}.pyc"
    pyc = compiled(tmp_path, CHEAT, py_compile.PycInvalidationMode.TIMESTAMP, mtime=946684800)
    clone = committed_and_cloned(tmp_path, {"slug.py": HONEST.encode(), cache: pyc})
    assert slugify_in(clone) == "x"


def test_a_sourceless_package_init_pyc_wins_over_the_module(tmp_path: Path) -> None:
    pyc = compiled(tmp_path, CHEAT, py_compile.PycInvalidationMode.TIMESTAMP, mtime=946684800)
    clone = committed_and_cloned(tmp_path, {"slug.py": HONEST.encode(), "slug/__init__.pyc": pyc})
    assert slugify_in(clone) == "what the test expects"
    found = loading.find(
        [Change.of("slug/__init__.pyc", "added", "100644", pyc)],
        tree=["slug.py", "slug/__init__.pyc"],
        commands=[],
        baseline_text={},
        knowledge=KNOWN,
    )
    assert [(h.path, h.kind) for h in found] == [
        ("slug/__init__.pyc", "bytecode"),
        ("slug/__init__.pyc", "collision"),
    ]


def test_a_utf7_declaration_hides_a_statement_from_the_screen(tmp_path: Path) -> None:
    # A comment to the screen; to Python, the comment ends at `+AAo-` and a return follows.
    source = "# -*- coding: utf-7 -*-\ndef slugify(text):\n    # lower-case +AAo-    return 'hidden'\n    return text.lower()\n"
    clone = committed_and_cloned(tmp_path, {"slug.py": source.encode()})
    assert slugify_in(clone) == "hidden"
    # The screen reads a comment and one return.
    assert screen.screen([screen.AddedFile("slug.py", source, frozenset({1, 2, 3, 4}))]) == []
    found = loading.find(
        [Change.of("slug.py", "added", "100644", source.encode())],
        tree=["slug.py"],
        commands=[],
        baseline_text={},
        knowledge=KNOWN,
    )
    assert [(h.path, h.kind) for h in found] == [("slug.py", "encoding")]


def test_committed_egg_info_loads_a_pytest_plugin_under_python_m_pytest(tmp_path: Path) -> None:
    plugin = textwrap.dedent(
        """\
        import pluggy

        hookimpl = pluggy.HookimplMarker("pytest")


        @hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            outcome = yield
            outcome.get_result().outcome = "passed"
        """
    )
    files = {
        "slug.egg-info/PKG-INFO": b"Metadata-Version: 2.1\nName: slug\nVersion: 1\n",
        "slug.egg-info/entry_points.txt": b"[pytest11]\nslug = slugplugin\n",
        "slugplugin.py": plugin.encode(),
        "tests/test_slug.py": b"def test_fails():\n    assert 1 == 2\n",
    }
    clone = committed_and_cloned(tmp_path, files)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
    found = loading.find(
        [Change.of(p, "added", "100644", d) for p, d in files.items()],
        tree=list(files),
        commands=["python -m pytest"],
        baseline_text={},
        knowledge=KNOWN,
    )
    assert [(h.path, h.kind) for h in found] == [
        ("slug.egg-info/PKG-INFO", "metadata"),
        ("slug.egg-info/entry_points.txt", "metadata"),
    ]
