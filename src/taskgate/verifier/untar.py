"""Unpacking a tar archive the verifier made (a baseline's `git archive`, a cached tree) without
letting a member land outside its destination.

Python's extraction filters do this from 3.11.4 on. taskgate runs on 3.11.0 and later (Debian 12
ships 3.11.2, the Python a check user can run), so on a Python without them the same refusals
are made here, by hand: only what the standard filters would refuse, nothing of our own.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path, PurePosixPath


class UnsafeMember(tarfile.TarError):
    """A member that would land outside the destination, or is not a plain file, directory or
    link."""


def extract(archive: tarfile.TarFile, where: Path, *, links_out: bool = False) -> None:
    """Every member of `archive` into `where`. `links_out`: symbolic links may point outside
    (a cached virtualenv's `bin/python` names the system's); otherwise they are refused too."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(where, filter="tar" if links_out else "data")
        return
    root = where.resolve()
    members = [_checked(m, root, links_out) for m in archive.getmembers()]
    archive.extractall(where, members=members)


def _checked(member: tarfile.TarInfo, root: Path, links_out: bool) -> tarfile.TarInfo:
    # As the standard filters do: a leading "/" is dropped, so the member lands inside.
    member.name = member.name.lstrip("/")
    name = PurePosixPath(member.name)
    if ".." in name.parts:
        raise UnsafeMember(f"{member.name}: a path outside the destination")
    if not (member.isfile() or member.isdir() or member.issym()):
        raise UnsafeMember(f"{member.name}: neither a file, a directory nor a symbolic link")
    if member.issym() and not links_out:
        target = os.path.normpath(root / name.parent / member.linkname)
        if os.path.isabs(member.linkname) or not Path(target).is_relative_to(root):
            raise UnsafeMember(f"{member.name}: a link to {member.linkname}, outside the destination")
    # As the standard filters do: no set-id or sticky bits, and never the archive's owners.
    member.mode &= 0o777
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    return member
