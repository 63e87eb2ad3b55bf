"""OS users for the tests that need a process to be someone else.

Run as root (CI, this machine), `taskgate verify` runs every check as an unprivileged check user,
so whatever a check runs must be reachable by that user: the Python the checks use, and the
directories a check writes its markers to. pytest's own temp dirs are 0700 and this suite's
Python may live under root's home (0700 too), so:

- `check_python()`: an interpreter any user can run with this suite's packages: the suite's own
  if it is reachable, else a venv (made once per machine) on a system Python of the same
  version, whose .pth lists the suite's site-packages and source directory;
- `shared_tmp()`: a fresh temp dir every user can write to;
- `ensure_user()`: a user created with useradd (kept: users are machine-wide, and a test run
  that deletes one while another runs would pull it from under it).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

IS_ROOT = os.geteuid() == 0
NOBODY = "nobody"
TEST_WORKER = "taskgate-test-worker"  # an unprivileged user a whole `taskgate verify` runs as
_PROBE = "import pytest, taskgate.cli"


def ensure_user(name: str, uid: int | None = None) -> pwd.struct_passwd:
    """The user `name` (with its own group), created if missing; with `uid`, it must have it."""
    try:
        found = pwd.getpwnam(name)
    except KeyError:
        assert IS_ROOT, f"creating user {name} needs root"
        cmd = ["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin"]
        cmd += ["--user-group", *(["--uid", str(uid)] if uid is not None else []), name]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        try:  # another test process may have created it at the same moment
            found = pwd.getpwnam(name)
        except KeyError:
            raise AssertionError(f"useradd {name} failed: {done.stderr}") from None
    assert uid is None or found.pw_uid == uid, f"user {name} exists with uid {found.pw_uid}, not {uid}"
    return found


def runnable_by(user: pwd.struct_passwd, python: str, probe: str = _PROBE) -> bool:
    try:
        done = _as(user, [python, "-c", probe])
    except OSError:  # not even executable by that user
        return False
    return done.returncode == 0


def _as(user: pwd.struct_passwd, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv,
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=False,
    )


def _suite_paths() -> list[str]:
    """Where the suite's imports come from, outside the interpreter's own standard library."""
    base = Path(sys.base_prefix).resolve()
    out: list[str] = []
    for entry in sys.path:
        if entry and Path(entry).is_dir() and not Path(entry).resolve().is_relative_to(base):
            out.append(str(Path(entry).resolve()))
    return list(dict.fromkeys(out))


@functools.cache
def check_python() -> str:
    """An interpreter every user can run, importing what the suite imports."""
    if not IS_ROOT:
        return sys.executable
    nobody = pwd.getpwnam(NOBODY)
    if runnable_by(nobody, sys.executable):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    paths = _suite_paths()
    tag = hashlib.sha256("\n".join([sys.prefix, *paths]).encode()).hexdigest()[:12]
    home = Path(tempfile.gettempdir()) / f"taskgate-suite-python-{tag}"
    python = home / "bin" / "python"
    if python.exists() and runnable_by(nobody, str(python)):
        return str(python)
    for where in ("/usr/bin", "/usr/local/bin", "/bin"):
        base = Path(where) / version
        if base.exists() and runnable_by(nobody, str(base), "pass"):
            _make_venv(base, home, paths)
            if runnable_by(nobody, str(python)):
                return str(python)
    raise AssertionError(
        f"no {version} that the check user can run: this suite's ({sys.executable}) is not "
        f"reachable by {NOBODY}, and none in /usr/bin or /usr/local/bin is"
    )


def _make_venv(base: Path, home: Path, paths: list[str]) -> None:
    """A venv on `base` seeing the suite's packages, renamed into place in one step (several
    test processes may race to make it)."""
    work = Path(tempfile.mkdtemp(prefix=home.name + ".", dir=home.parent))
    try:
        subprocess.run([str(base), "-m", "venv", "--without-pip", str(work)], check=True, capture_output=True)
        [site] = (work / "lib").glob("python3.*/site-packages")
        (site / "_taskgate_suite.pth").write_text("\n".join(paths) + "\n")
        launcher = work / "bin" / "taskgate"
        launcher.write_text(
            f"#!{home}/bin/python\nimport sys\nfrom taskgate.cli import main\nsys.exit(main())\n"
        )
        launcher.chmod(0o755)
        for d, _dirs, files in os.walk(work):
            os.chmod(d, 0o755)
            for f in files:
                p = Path(d) / f
                if not p.is_symlink():
                    p.chmod(0o755 if os.access(p, os.X_OK) else 0o644)
        with contextlib.suppress(OSError):  # made by another process meanwhile
            work.rename(home)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def taskgate_command(python: str) -> str:
    """A `taskgate` executable on `python` (for a verifier that is not root)."""
    if python == sys.executable:
        return str(Path(sys.executable).with_name("taskgate"))
    return str(Path(python).with_name("taskgate"))


def shared_tmp() -> Iterator[Path]:
    """A fresh directory every user can reach and write (mode 0777 under a world-searchable
    parent), removed afterwards."""
    where = Path(tempfile.mkdtemp(prefix="taskgate-tests-"))
    where.chmod(0o777)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)
