"""Dependency caches a check may name (`"cache": {"key": [...], "paths": [...]}`), and where
they are kept.

Who may write a cache is the rule: only the verifier, from a run of the check on the
submission's baseline (a commit of the base branch, which a human merged), never from a
submission's checks. Each run gets a copy; what the submission's checks do to it is thrown
away with the checkout. A submission that changes a key file runs without the cache. The rest
is about a cache's files as data the verifier copies as itself (root, possibly):

- Only directories, regular files and symlinks are copied; a symlink is copied as a link and
  never followed (one pointing at the verifier's files would otherwise carry them into the
  cache), and nothing is ever written through one: a target that already exists in the
  submission's checkout (it committed that path, or a link above it) gets no cache.
- Nothing of the check user's runs while a cache is saved or restored, so nothing can swap a
  file for a link between a look and a copy.
- A virtualenv is not relocatable: its scripts and an editable install name the checkout's
  absolute path. Saved, that path is replaced with a placeholder in every text file and link
  that holds it (and the files are listed); restored, the new checkout's path is written in.
  A cached venv never points at the checkout it was built in, which is removed and whose path
  anyone could create again. `__pycache__` is not kept: its files name the old path too, and
  Python writes them again.
- Restored files are handed to the check user with the rest of the checkout (sandbox.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

PLACEHOLDER = "/@taskgate-cache-checkout@"
MANIFEST = ".taskgate-cache-relocate.json"
SKIPPED_DIRS = frozenset({"__pycache__"})
RELOCATE_MAX_BYTES = 8 * 1024 * 1024  # larger files are data, not scripts or .pth files
DEFAULT_MAX_MB = 2048
_KEY = re.compile(r"^[0-9a-f]{64}$")


class CacheError(Exception):
    """A cache could not be saved or restored: the run goes on without it."""


class CacheStore(Protocol):
    def restore(
        self, key: str, into: Path
    ) -> bool: ...  # copy the cached tree under key into `into`; False if none
    def save(self, key: str, source: Path) -> None: ...  # store the tree at `source` under key


# -- copying ----------------------------------------------------------------------------------


def copy_tree(src: Path, dst: Path) -> int:
    """Copy the tree at `src` to `dst` (which must not exist): directories, regular files and
    symlinks (as links), nothing else, no `__pycache__`. Returns the bytes copied."""
    if src.is_symlink() or not src.is_dir():
        raise CacheError(f"{src} is not a directory")
    total = 0
    os.mkdir(dst, 0o700)
    for here, dirs, files in os.walk(src, followlinks=False):
        rel = Path(here).relative_to(src)
        out = dst / rel
        keep = []
        for name in dirs:
            path = Path(here) / name
            if name in SKIPPED_DIRS:
                continue
            if path.is_symlink():
                os.symlink(os.readlink(path), out / name)
                continue
            os.mkdir(out / name, 0o700)
            keep.append(name)
        dirs[:] = keep
        for name in files:
            path = Path(here) / name
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(path), out / name)
            elif stat.S_ISREG(st.st_mode):
                _copy_file(path, out / name, st)
                total += st.st_size
    for here, dirs, _ in os.walk(src, followlinks=False):  # directory modes, once their files are in
        for name in dirs:
            path = Path(here) / name
            target = dst / path.relative_to(src)
            if not path.is_symlink() and target.is_dir() and not target.is_symlink():
                os.chmod(target, stat.S_IMODE(path.lstat().st_mode) | stat.S_IRWXU)
    return total


def _copy_file(src: Path, dst: Path, st: os.stat_result) -> None:
    flags = os.O_RDONLY | os.O_NOFOLLOW
    fd = os.open(src, flags)
    try:
        with (
            os.fdopen(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), "wb") as out,
            os.fdopen(fd, "rb", closefd=False) as f,
        ):
            shutil.copyfileobj(f, out, 1024 * 1024)
        os.chmod(dst, stat.S_IMODE(st.st_mode) & 0o755 | stat.S_IRUSR | stat.S_IWUSR)
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    finally:
        os.close(fd)


def relocate(tree: Path, old: str, new: str, only: Sequence[str] | None = None) -> list[str]:
    """Replace `old` with `new` in every text file and symlink under `tree` that holds it
    (`only`: in these relative paths alone). Returns the relative paths changed."""
    changed: list[str] = []
    oldb, newb = old.encode(), new.encode()
    for rel in only if only is not None else _all_entries(tree):
        if not _plain(tree, rel):
            continue  # a listed path that leaves the tree, or goes through a link, is no file of it
        path = tree / rel
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(path)
            if old in target:
                path.unlink()
                os.symlink(target.replace(old, new), path)
                changed.append(rel)
        elif stat.S_ISREG(st.st_mode) and st.st_size <= RELOCATE_MAX_BYTES:
            data = path.read_bytes()
            if oldb in data and b"\0" not in data:
                path.write_bytes(data.replace(oldb, newb))
                changed.append(rel)
    return changed


def _plain(tree: Path, rel: str) -> bool:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return False
    return not any(tree.joinpath(*parts[:i]).is_symlink() for i in range(1, len(parts)))


def _all_entries(tree: Path) -> Iterator[str]:
    for here, dirs, files in os.walk(tree, followlinks=False):
        rel = Path(here).relative_to(tree)
        for name in files + [d for d in dirs if (Path(here) / d).is_symlink()]:
            yield str(rel / name)


# -- keys -------------------------------------------------------------------------------------


def matches(pattern: str, path: str) -> bool:
    """A key pattern against a path of the repository, segment by segment: `*` stays within one
    directory, `**` spans any number of them (`requirements*.txt` is at the top only)."""
    return _match(pattern.split("/"), path.split("/"))


def _match(pat: list[str], parts: list[str]) -> bool:
    if not pat:
        return not parts
    if pat[0] == "**":
        return any(_match(pat[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pat[0]) and _match(pat[1:], parts[1:])


def cache_key(parts: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


# -- the local store --------------------------------------------------------------------------


def tree_bytes(top: Path) -> int:
    total = 0
    for here, _, files in os.walk(top, followlinks=False):
        for name in files:
            with contextlib.suppress(OSError):
                st = (Path(here) / name).lstat()
                if stat.S_ISREG(st.st_mode):
                    total += st.st_size
    return total


class LocalCacheStore:
    """Caches as directories under `root` (the verifier's, 0700), at most `max_bytes` in all:
    the least recently restored go first. A lock file orders saves, evictions and restores
    among the verifier's jobs and processes."""

    def __init__(self, root: Path, max_bytes: int = DEFAULT_MAX_MB * 1024 * 1024) -> None:
        self.root = root
        self.max_bytes = max_bytes

    @contextmanager
    def _locked(self, how: int) -> Iterator[None]:
        if not self.root.is_dir():  # made on first use, the verifier's alone
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.root, 0o700)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, how)
            yield
        finally:
            os.close(fd)

    def _entry(self, key: str) -> Path:
        if not _KEY.match(key):
            raise CacheError(f"not a cache key: {key!r}")
        return self.root / key

    def restore(self, key: str, into: Path) -> bool:
        entry = self._entry(key)
        with self._locked(fcntl.LOCK_SH):
            if not entry.is_dir() or entry.is_symlink():
                return False
            copy_tree(entry, into)
            os.utime(entry)  # least recently restored goes first
        return True

    def save(self, key: str, source: Path) -> None:
        entry = self._entry(key)
        with self._locked(fcntl.LOCK_SH):
            pass  # the root exists from here on
        staging = Path(tempfile.mkdtemp(prefix=".new-", dir=self.root))
        try:
            size = copy_tree(source, staging / "tree")
            if size > self.max_bytes:
                raise CacheError(
                    f"{size / 2**20:.0f} MB is over the cache's cap of {self.max_bytes / 2**20:.0f} MB"
                )
            with self._locked(fcntl.LOCK_EX):
                if entry.exists():
                    return  # another job saved it first: the same baseline, the same key
                os.rename(staging / "tree", entry)
                self._evict(keep=entry)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _evict(self, keep: Path) -> None:
        entries = [p for p in self.root.iterdir() if _KEY.match(p.name) and p.is_dir()]
        sizes = {p: tree_bytes(p) for p in entries}
        total = sum(sizes.values())
        for p in sorted(entries, key=lambda p: p.stat().st_mtime):
            if total <= self.max_bytes:
                break
            if p != keep:
                shutil.rmtree(p, ignore_errors=True)
                total -= sizes[p]
