"""Reading a check's report from the checkout: only a regular file that resolves inside the
checkout (no `..`, no absolute path, no symlink out), at most MAX_REPORT_BYTES, parsed by the
domain's readers (JUnit XML through defusedxml, or seed 000's JSON)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from taskgate.domain.reports import MAX_REPORT_BYTES, Report, ReportError, parse_report
from taskgate.domain.verifier_config import ReportSpec


class ReportMissing(Exception):
    """The check wrote no file at its report path."""


def read_report(checkout: Path, spec: ReportSpec) -> Report:
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
    # O_NONBLOCK: a FIFO planted at the report path must not hang the verifier; fstat below
    # refuses anything that is not a regular file before a byte is read.
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError as exc:
        raise ReportMissing(spec.path) from exc
    except OSError as exc:
        raise ReportError(f"report {spec.path!r} cannot be read: {exc.strerror}", "unsafe") from exc
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ReportError(f"report {spec.path!r} is not a regular file", "unsafe")
        if info.st_size > MAX_REPORT_BYTES:
            raise ReportError(
                f"report {spec.path!r} is {info.st_size} bytes; the limit is {MAX_REPORT_BYTES} bytes",
                "too_large",
            )
        data = f.read(MAX_REPORT_BYTES + 1)
    return parse_report(data, spec.format)
