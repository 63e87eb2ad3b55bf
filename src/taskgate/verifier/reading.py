"""Reading a check's report from the checkout: only a regular file that resolves inside the
checkout (no `..`, no absolute path, no symlink out), at most MAX_REPORT_BYTES, parsed by the
domain's readers (JUnit XML through defusedxml, or the simple JSON report format).

The verifier may be root while the check ran as the check user, so the report must not become a
way to read what the check user could not: a hardlink to a root-only file, a symlink swapped in
at the last moment. The file is opened by walking from the checkout one component at a time with
O_NOFOLLOW (no link is followed, whatever changed since the path was resolved), and it must
belong to the user the check ran as (`owner`): an owner can always read its own file, so the
verifier reads nothing the check user could not have read itself. This was chosen over opening
it as the check user because that needs a process per report (or a fork from a threaded
process), and nothing of the check user's is running by the time reports are read (the process
module killed it all), so the tree cannot change under the walk.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from taskgate.domain.reports import MAX_REPORT_BYTES, Report, ReportError, parse_report
from taskgate.domain.verifier_config import ReportSpec


class ReportMissing(Exception):
    """The check wrote no file at its report path."""


@dataclass(frozen=True)
class ReadReport:
    report: Report
    sha256: str  # of the exact bytes parsed (lowercase hex)
    mtime: float = 0.0  # when the file was last written (seconds since the epoch)


def read_report(checkout: Path, spec: ReportSpec, owner: int | None = None) -> ReadReport:
    """`owner`: the uid the check ran as (default: this process's)."""
    root = checkout.resolve()
    rel = Path(spec.path)
    if rel.is_absolute() or ".." in rel.parts:
        raise ReportError(
            f"report path {spec.path!r} must be relative and stay inside the checkout", "unsafe"
        )
    target = root / rel
    if not target.exists() and not target.is_symlink():
        raise ReportMissing(spec.path)
    real = target.resolve()
    if not real.is_relative_to(root):
        raise ReportError(f"report path {spec.path!r} resolves outside the checkout", "unsafe")
    parts = real.relative_to(root).parts
    if not parts:
        raise ReportError(f"report {spec.path!r} is not a regular file", "unsafe")
    try:
        fd = _open_no_follow(root, parts)
    except FileNotFoundError as exc:
        raise ReportMissing(spec.path) from exc
    except OSError as exc:
        raise ReportError(f"report {spec.path!r} cannot be read: {exc.strerror}", "unsafe") from exc
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ReportError(f"report {spec.path!r} is not a regular file", "unsafe")
        expected = os.getuid() if owner is None else owner
        if info.st_uid != expected:
            raise ReportError(
                f"report {spec.path!r} belongs to uid {info.st_uid}, not to the check's user "
                f"(uid {expected}): a link to a file the check did not write",
                "unsafe",
            )
        if info.st_size > MAX_REPORT_BYTES:
            raise ReportError(
                f"report {spec.path!r} is {info.st_size} bytes; the limit is {MAX_REPORT_BYTES} bytes",
                "too_large",
            )
        data = f.read(MAX_REPORT_BYTES + 1)
    return ReadReport(parse_report(data, spec.format), hashlib.sha256(data).hexdigest(), info.st_mtime)


def _open_no_follow(root: Path, parts: tuple[str, ...]) -> int:
    """The file at root/parts, each directory opened relative to the last with O_NOFOLLOW.
    O_NONBLOCK on the last: a FIFO planted at the report path must not hang the verifier (fstat
    refuses anything that is not a regular file before a byte is read)."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | nofollow, dir_fd=fd)
    finally:
        os.close(fd)
