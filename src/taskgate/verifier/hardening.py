"""What `taskgate verify` does to its own process before it runs anything: the keys leave its
environment, other processes of the same user can no longer read it, and, started as root, it
gives up root.

Why each step (Linux):
- `/proc/<pid>/environ` shows the environment block the process was started with, whatever
  `os.environ` says later: the keys are removed from `os.environ` (and so from libc's `environ`,
  which every child inherits) and their values overwritten in that initial block.
- `prctl(PR_SET_DUMPABLE, 0)`: `/proc/<pid>/environ`, `mem`, `fd/`, `maps` of the worker are
  then owned by root and ptrace is refused, so a check running as the same OS user cannot read
  the keys out of the worker's memory.
- `prctl(PR_SET_NO_NEW_PRIVS, 1)`: nothing the worker starts gains privileges through a setuid
  binary (`sudo`, `su`) or file capabilities; the worker's own setuid() calls (to run a check as
  the check user) are unaffected.
- `prctl(PR_SET_CHILD_SUBREAPER, 1)`: a check that daemonizes (double fork, setsid, a scrubbed
  environment) is re-parented to the worker instead of init, so it stays findable and is killed
  when its command ends (process.py).
- Started as root with a worker user: the worker switches to that user keeping only the
  capabilities it needs to run checks as the check user (KEEP), with the bounding set and the
  ambient set cleared, so no program it starts can get any of them back.

These are a handful of syscalls through ctypes: the maintained Python bindings for prctl and
capabilities are C extensions that need libcap headers to build, for five calls.
"""

from __future__ import annotations

import ctypes
import functools
import os
import pwd
import sys
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from taskgate.verifier.process import is_secret_name
from taskgate.verifier.sandbox import CheckUser, Sandbox, SandboxError, default_check_user

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_KEEPCAPS = 8
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522

CAP_CHOWN = 0  # hand the checkout to the check user, and take it back to remove it
CAP_KILL = 5  # stop a check's processes, which belong to another user
CAP_SETGID = 6  # start a check with the check user's group and no supplementary groups
CAP_SETUID = 7  # start a check as the check user
KEEP = (CAP_CHOWN, CAP_KILL, CAP_SETGID, CAP_SETUID)
CAP_NAMES = {CAP_CHOWN: "CAP_CHOWN", CAP_KILL: "CAP_KILL", CAP_SETGID: "CAP_SETGID", CAP_SETUID: "CAP_SETUID"}


class HardeningError(Exception):
    """The process could not be put in the state it promises: the verifier must not run."""


@dataclass(frozen=True)
class Hardened:
    """What took effect (Linux); elsewhere only the environment was cleaned."""

    forgotten: tuple[str, ...]  # names removed from the environment
    non_dumpable: bool
    reaper: bool  # every orphaned descendant comes back to this process


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, arg2: int = 0, *, ok_errnos: Iterable[int] = ()) -> int:
    libc = _libc()
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    libc.prctl.restype = ctypes.c_int
    rc = int(libc.prctl(option, arg2, 0, 0, 0))
    if rc < 0:
        err = ctypes.get_errno()
        if err in ok_errnos:
            return rc
        raise HardeningError(f"prctl({option}) failed: {os.strerror(err)}")
    return rc


def forget_secrets(environ: MutableMapping[str, str] | None = None) -> tuple[str, ...]:
    """Remove every key, token and cloud credential from the process environment: from
    `os.environ` and libc's (unsetenv), and their values from the initial block that
    `/proc/<pid>/environ` reads (Linux)."""
    env = os.environ if environ is None else environ
    names = tuple(sorted(k for k in env if is_secret_name(k)))
    for name in names:
        del env[name]  # os.environ calls unsetenv(): children and libc no longer see it
    if environ is None and sys.platform == "linux":
        _blank_initial_environ({n.encode() for n in names})
    return names


def _blank_initial_environ(names: set[bytes]) -> None:
    """Overwrite the values of `names` in the environment block the kernel shows as
    /proc/self/environ. The block's bounds come from /proc/self/stat; its bytes are compared with
    /proc/self/environ first and nothing is written unless they match exactly."""
    if not names:
        return
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # fields 50 and 51: env_start, env_end
        shown = Path("/proc/self/environ").read_bytes()
    except (OSError, IndexError, ValueError):
        return
    if not start or end <= start or ctypes.string_at(start, end - start) != shown:
        return
    offset = 0
    for entry in shown.split(b"\0"):
        name, eq, value = entry.partition(b"=")
        if eq and name in names and value:
            ctypes.memset(start + offset + len(name) + 1, 0, len(value))
        offset += len(entry) + 1


def lock_down() -> Hardened:
    """Non-dumpable, no new privileges, child subreaper (Linux). The keys must already be read
    and forgotten: from here on they live only in this process's memory."""
    forgotten = forget_secrets()
    if sys.platform != "linux":
        return Hardened(forgotten, non_dumpable=False, reaper=False)
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if _prctl(PR_GET_DUMPABLE) != 0:
        raise HardeningError("the verifier could not make itself non-dumpable")
    return Hardened(forgotten, non_dumpable=True, reaper=True)


def become_subreaper() -> None:
    """Orphans of this process's commands come back to it (a forked job: fork does not inherit
    the setting)."""
    if sys.platform == "linux":
        _prctl(PR_SET_CHILD_SUBREAPER, 1)


def drop_to(user: pwd.struct_passwd) -> None:
    """From root to `user`, keeping only KEEP (effective and permitted; nothing inheritable,
    nothing ambient, the bounding set cut down to KEEP). Linux only."""
    if os.geteuid() != 0:
        raise HardeningError(f"switching to {user.pw_name} needs the verifier to start as root")
    if user.pw_uid == 0:
        raise HardeningError(f"the worker user {user.pw_name} is root")
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        if cap not in KEEP:
            # EPERM: the runtime already took CAP_SETPCAP (then it also limits the bounding set).
            _prctl(PR_CAPBSET_DROP, cap, ok_errnos=(1, 22))
    _prctl(PR_SET_KEEPCAPS, 1)
    os.setgroups([])
    os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
    os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)
    mask = sum(1 << c for c in KEEP)
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)(_CapData(mask, mask, 0), _CapData(0, 0, 0))
    if _libc().capset(ctypes.byref(header), data) != 0:
        missing = ", ".join(CAP_NAMES[c] for c in KEEP)
        raise HardeningError(
            f"cannot keep {missing} as {user.pw_name}: {os.strerror(ctypes.get_errno())} "
            "(the container runtime must not drop them)"
        )
    _prctl(PR_SET_KEEPCAPS, 0)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, ok_errnos=(22,))  # EINVAL: kernel < 4.3
    _prctl(PR_SET_DUMPABLE, 0)  # a uid change already cleared it; say so explicitly
    if os.getresuid() != (user.pw_uid,) * 3 or os.getresgid() != (user.pw_gid,) * 3 or os.getgroups():
        raise HardeningError(f"the switch to {user.pw_name} did not take")
    # Tools the worker runs (git) read $HOME and XDG config: root's are no longer readable.
    os.environ["HOME"] = user.pw_dir
    os.environ["USER"] = os.environ["LOGNAME"] = user.pw_name
    for name in [k for k in os.environ if k.startswith("XDG_")]:
        del os.environ[name]


def effective_caps() -> int:
    """This process's effective capability mask (Linux), from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def isolate(*, check_user: str | None, worker_user: str | None) -> Sandbox:
    """Everything above, in order, once the keys are read: who the checks will run as.

    Started as root: the checks run as `check_user` (default: taskgate-check if it exists, else
    nobody), never as root; with `worker_user` the verifier itself also leaves root (keeping
    only KEEP). Started as anyone else: the checks run as that same user (naming another one is
    refused: only root can switch), and the non-dumpable worker is what keeps its keys from them.
    """
    me = os.geteuid()
    if me != 0:
        for flag, name in (("--check-user", check_user), ("--worker-user", worker_user)):
            if name and _user(name).pw_uid != me:
                raise HardeningError(
                    f"{flag} {name} needs the verifier to start as root (it runs as uid {me}); "
                    "leave it out to run the checks as this same user"
                )
        done = lock_down()
        return Sandbox(user=None, reaper=done.reaper)
    check = CheckUser.named(check_user or default_check_user())
    if check.uid == 0:
        raise HardeningError(f"the check user {check.name} is root: checks never run as root")
    worker = _user(worker_user) if worker_user else None
    if worker is not None and worker.pw_uid in (0, check.uid):
        raise HardeningError(
            f"the worker user {worker.pw_name} must be neither root nor the check user {check.name}"
        )
    if sys.platform == "linux" and effective_caps() & ((1 << CAP_SETUID) | (1 << CAP_SETGID)) != (
        (1 << CAP_SETUID) | (1 << CAP_SETGID)
    ):
        raise HardeningError(f"root without CAP_SETUID and CAP_SETGID cannot run checks as {check.name}")
    done = lock_down()
    if worker is not None:
        drop_to(worker)
        _can_still_read_python(worker.pw_name)
    return Sandbox(user=check, reaper=done.reaper)


def _user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name) if not name.isdigit() else pwd.getpwuid(int(name))
    except KeyError:
        raise SandboxError(f"user {name!r} does not exist") from None


def _can_still_read_python(name: str) -> None:
    """After the switch, modules not yet imported must still be importable: a Python installed
    under root's home (0700) is not, and the verifier would fail in the middle of a run."""
    import taskgate

    for where in (Path(os.__file__).parent, Path(taskgate.__file__).parent):
        if not os.access(where, os.R_OK | os.X_OK):
            raise HardeningError(
                f"the worker user {name} cannot read {where}: install Python and taskgate where it can"
            )
