"""Who the checks run as, and what of the verifier's they can reach.

Started as root (a container, CI, a server), the verifier never runs a check as root: every
check, command criterion and the reviewer command run as the check user (`--check-user`; by
default `taskgate-check` if that user exists, else `nobody`). A run's directory then reads:

    /tmp/taskgate-verify-XXXX/   the verifier's, mode 0711: the check user can pass, not list
        checkout/                the submitted commit, handed over to the check user
        home/                    the check user's, 0700: HOME of this run only
        tmp/                     the check user's, 0700: TMPDIR of this run only

and nothing else of the verifier's is in it (the git token only ever lives in the environment of
git, which runs as the verifier before any check starts). A fresh HOME each run: a check cannot
leave a `~/.local/.../usercustomize.py`, a `~/.gitconfig` or a cache behind for the next run's
checks to load. When the run ends everything of the check user's still running is gone (the
process module kills it) and the verifier takes the tree back to remove it.

Started as another user, the verifier runs the checks as itself (there is no one to switch to),
and what keeps its keys from them is that it made itself non-dumpable (hardening.py).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from taskgate.verifier import process

DEFAULT_CHECK_USER = "taskgate-check"
FALLBACK_CHECK_USER = "nobody"
RUN_DIR_MODE = 0o711
# Set by the verifier for a check run as the check user: the worker's own values point into
# its home (root's), which the check user can neither read nor write.
_THEIRS = ("HOME", "TMPDIR", "USER", "LOGNAME")


class SandboxError(Exception):
    """The check user cannot be used as asked: the verifier must not run."""


@dataclass(frozen=True)
class CheckUser:
    name: str
    uid: int
    gid: int

    @classmethod
    def named(cls, name: str) -> CheckUser:
        try:
            pw = pwd.getpwnam(name) if not name.isdigit() else pwd.getpwuid(int(name))
        except KeyError:
            raise SandboxError(f"user {name!r} does not exist") from None
        return cls(pw.pw_name, pw.pw_uid, pw.pw_gid)


def default_check_user() -> str:
    try:
        pwd.getpwnam(DEFAULT_CHECK_USER)
    except KeyError:
        return FALLBACK_CHECK_USER
    return DEFAULT_CHECK_USER


@dataclass(frozen=True)
class RunDirs:
    checkout: Path
    home: Path | None = None
    tmp: Path | None = None


@dataclass(frozen=True)
class Sandbox:
    """`user`: the check user, or None when checks run as the verifier's own user. `reaper`: the
    verifier is a child subreaper, so every descendant of it is a command's (hardening.py)."""

    user: CheckUser | None = None
    reaper: bool = False
    own_uid: int = field(default_factory=os.getuid)
    own_gid: int = field(default_factory=os.getgid)

    @property
    def check_uid(self) -> int:
        return self.user.uid if self.user is not None else self.own_uid

    def env(self, base: Mapping[str, str], dirs: RunDirs) -> dict[str, str]:
        """The environment of a check: without secrets (process.run scrubs them again), and as
        the check user, with its own HOME, TMPDIR and names, and no XDG directories of ours."""
        env = process.scrubbed_env(base)
        if self.user is None or dirs.home is None or dirs.tmp is None:
            return env
        env = {k: v for k, v in env.items() if k not in _THEIRS and not k.startswith("XDG_")}
        return env | {
            "HOME": str(dirs.home),
            "TMPDIR": str(dirs.tmp),
            "USER": self.user.name,
            "LOGNAME": self.user.name,
        }

    @contextmanager
    def hand_over(self, checkout: Path) -> Iterator[RunDirs]:
        """The checkout becomes the check user's for the block; afterwards nothing of the check
        user's runs any more and the whole run directory is the verifier's again."""
        if self.user is None:
            yield RunDirs(checkout)
            return
        run_dir = checkout.parent
        os.chmod(run_dir, RUN_DIR_MODE)
        with self._lent(checkout, run_dir / "home", run_dir / "tmp") as dirs:
            yield dirs

    @contextmanager
    def lend(self, tree: Path) -> Iterator[RunDirs]:
        """Another tree of the run (the baseline's) the check user's for the block, with a home
        and tmp of its own: nothing the checks before it left there reaches it. The verifier's
        again afterwards."""
        if self.user is None:
            yield RunDirs(tree)
            return
        with self._lent(tree, tree.parent / f"{tree.name}-home", tree.parent / f"{tree.name}-tmp") as dirs:
            yield dirs

    @contextmanager
    def _lent(self, tree: Path, home: Path, tmp: Path) -> Iterator[RunDirs]:
        """`tree`, and a fresh `home` and `tmp`, the check user's for the block; then nothing of
        the check user's runs any more and all three are the verifier's again."""
        assert self.user is not None
        try:
            for d in (home, tmp):
                d.mkdir(mode=0o700)
                os.chown(d, self.user.uid, self.user.gid)
            _chown_tree(tree, self.user.uid, self.user.gid)
            yield RunDirs(tree, home, tmp)
        finally:
            if self.reaper:
                process.kill_descendants()
            if os.geteuid() != 0:  # root removes anything; a worker with CAP_CHOWN takes it back
                for d in (tree, home, tmp):
                    if d.exists():
                        _chown_tree(d, self.own_uid, self.own_gid, dir_mode=0o700)


def _chown_tree(top: Path, uid: int, gid: int, *, dir_mode: int | None = None) -> None:
    """lchown every entry under `top` (top included), descending into real directories only:
    a symlink the checkout holds is changed itself, never what it points to. `dir_mode`: also
    make each directory searchable and writable by its new owner (a check may leave a 0500
    directory behind), before it is listed. Nothing of the check user's runs while this walks."""
    os.chown(top, uid, gid, follow_symlinks=False)
    if dir_mode is not None:
        os.chmod(top, dir_mode)
    todo = [top]
    while todo:
        where = todo.pop()
        fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            with os.scandir(fd) as entries:
                listed = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            for name, is_dir in listed:
                os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
                if is_dir:
                    if dir_mode is not None:
                        os.chmod(name, dir_mode, dir_fd=fd)
                    todo.append(where / name)
        finally:
            os.close(fd)
