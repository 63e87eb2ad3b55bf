"""Unpacking the verifier's own archives, on this Python (its extraction filters) and on
Debian's /usr/bin/python3 (3.11.2: no filters, so taskgate's own refusals): the same answers."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
OLD_PYTHON = "/usr/bin/python3"  # Debian 12's: a Python the check user can run, without filters

# Each case: (members, links_out) and what must happen: the files and links made, or a refusal.
RUN = """
import io, json, sys, tarfile, tempfile
from pathlib import Path
from taskgate.verifier import untar

out = {"filters": hasattr(tarfile, "data_filter")}
for name, (members, links_out) in json.loads(sys.argv[1]).items():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for m in members:
            info = tarfile.TarInfo(m["name"])
            if "link" in m:
                info.type, info.linkname = tarfile.SYMTYPE, m["link"]
                tar.addfile(info)
            elif m.get("dir"):
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                data = m.get("text", "x").encode()
                info.size, info.mode = len(data), m.get("mode", 0o644)
                tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    where = Path(tempfile.mkdtemp()) / "into"
    where.mkdir()
    try:
        with tarfile.open(fileobj=buf) as tar:
            untar.extract(tar, where, links_out=links_out)
    except tarfile.TarError as exc:
        out[name] = {"refused": type(exc).__name__}
        continue
    made = {}
    for p in sorted(where.rglob("*")):
        rel = str(p.relative_to(where))
        if p.is_symlink():
            made[rel] = "-> " + str(p.readlink())
        elif p.is_file():
            made[rel] = p.read_text() + " " + oct(p.stat().st_mode & 0o7777)
    out[name] = {"made": made}
print(json.dumps(out))
"""

CASES = {
    "tree": (
        [
            {"name": "src", "dir": True},
            {"name": "src/app.py", "text": "print(1)"},
            {"name": "run.sh", "text": "echo", "mode": 0o4755},
            {"name": "src/same.py", "link": "app.py"},
        ],
        False,
    ),
    "dotdot": ([{"name": "../escaped.txt"}], False),
    "absolute": ([{"name": "/tmp/absolute.txt"}], False),
    "link_out": ([{"name": "python", "link": "/usr/bin/python3"}], False),
    "link_up": ([{"name": "up", "link": "../../etc"}], False),
    "venv_link": ([{"name": "bin", "dir": True}, {"name": "bin/python", "link": "/usr/bin/python3"}], True),
}


def _run(python: str) -> dict[str, object]:
    done = subprocess.run(
        [python, "-c", RUN, json.dumps(CASES)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout)
    return out


@pytest.mark.parametrize("python", [sys.executable, OLD_PYTHON], ids=["this", "debian-3.11.2"])
def test_members_outside_the_destination_are_refused_on_every_python(python: str) -> None:
    out = _run(python)
    # The old Python is the case the hand-made refusals are for: it must really lack filters.
    assert out.pop("filters") is (python != OLD_PYTHON)
    assert out.pop("tree") == {
        "made": {"run.sh": "echo 0o755", "src/app.py": "print(1) 0o644", "src/same.py": "-> app.py"}
    }
    assert out.pop("absolute") == {"made": {"tmp/absolute.txt": "x 0o644"}}  # the "/" dropped
    for case in ("dotdot", "link_out", "link_up"):
        assert "refused" in out.pop(case), case  # type: ignore[operator]
    assert out.pop("venv_link") == {"made": {"bin/python": "-> /usr/bin/python3"}}
    assert out == {}


def test_the_archive_is_never_written_through_on_a_refusal(tmp_path: Path) -> None:
    """A refused member leaves nothing outside: the fallback checks every member first."""
    from taskgate.verifier import untar

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    buf.seek(0)
    into = tmp_path / "into"
    into.mkdir()
    with tarfile.open(fileobj=buf) as tar, pytest.raises(tarfile.TarError):
        untar.extract(tar, into)
    assert not (tmp_path / "outside.txt").exists()
