"""A Python the check user can run.

Run as root, `taskgate verify` runs every check as an unprivileged user, who cannot reach an
interpreter under root's home (0700, as with pyenv). A bench whose checks run Python needs one
that user can run, seeing this environment's packages: this one if the user can run it; else a
venv (made once per machine) on a system Python of the same version, whose .pth lists this
environment's site-packages and source directories.
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
from pathlib import Path

NOBODY = "nobody"
_PROBE = "import pytest, taskgate.cli"


def _runs(python: str, probe: str = _PROBE) -> bool:
    """Whether user nobody can run `python` with `probe`."""
    nobody = pwd.getpwnam(NOBODY)
    try:
        done = subprocess.run(
            [python, "-c", probe],
            user=nobody.pw_uid,
            group=nobody.pw_gid,
            extra_groups=[],
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            capture_output=True,
            check=False,
        )
    except OSError:  # not even executable by that user
        return False
    return done.returncode == 0


@functools.cache
def check_python() -> str:
    if os.geteuid() != 0 or _runs(sys.executable):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base_prefix = Path(sys.base_prefix).resolve()
    paths = list(
        dict.fromkeys(
            str(Path(p).resolve())
            for p in sys.path
            if p and Path(p).is_dir() and not Path(p).resolve().is_relative_to(base_prefix)
        )
    )
    tag = hashlib.sha256("\n".join([sys.prefix, *paths]).encode()).hexdigest()[:12]
    home = Path(tempfile.gettempdir()) / f"taskgate-bench-python-{tag}"
    python = home / "bin" / "python"
    if python.exists() and _runs(str(python)):
        return str(python)
    for where in ("/usr/bin", "/usr/local/bin", "/bin"):
        base = Path(where) / version
        if base.exists() and _runs(str(base), "pass"):
            _make_venv(base, home, paths)
            if _runs(str(python)):
                return str(python)
    raise SystemExit(
        f"no {version} the check user can run: {sys.executable} is not reachable by {NOBODY}, "
        "and none is in /usr/bin or /usr/local/bin"
    )


def _make_venv(base: Path, home: Path, paths: list[str]) -> None:
    """The venv, made aside and renamed into place in one step (benches may race to make it)."""
    work = Path(tempfile.mkdtemp(prefix=home.name + ".", dir=home.parent))
    try:
        subprocess.run([str(base), "-m", "venv", "--without-pip", str(work)], check=True, capture_output=True)
        [site] = (work / "lib").glob("python3.*/site-packages")
        (site / "_taskgate_bench.pth").write_text("\n".join(paths) + "\n")
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
