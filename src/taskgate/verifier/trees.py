"""The trees a run makes beside its checkout: the baseline's, unpacked from the archive taken
while git was still the verifier's, in a run directory of its own the check user may pass
through; and the test for what stands in the way of a file about to be written into a tree."""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from taskgate.verifier import untar
from taskgate.verifier.sandbox import RUN_DIR_MODE


def occupied(root: Path, rel: str, *, parents_only: bool = False) -> str | None:
    """What in `root` stands where `rel` would go: a link or a file above it (a copy would go
    through or fail), or (unless `parents_only`) anything at `rel` itself. None: the way is free."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        above = root.joinpath(*parts[:i])
        if above.is_symlink() or (above.exists() and not above.is_dir()):
            return "/".join(parts[:i])
    here = root / rel
    if not parents_only and (here.is_symlink() or here.exists()):
        return rel
    return None


@contextmanager
def baseline_tree(archive: Path | None) -> Iterator[Path]:
    """The baseline's tree (empty when there is none) in a run directory of its own, as the
    checkout's: the check user may pass through it (0711) and a worker that is not root may
    lend it and take it back. Removed afterwards."""
    top = Path(tempfile.mkdtemp(prefix="taskgate-verify-"))
    try:
        os.chmod(top, RUN_DIR_MODE)
        where = top / "checkout"
        where.mkdir()
        if archive is not None:
            with tarfile.open(archive) as tar:
                untar.extract(tar, where)
        yield where
    finally:
        shutil.rmtree(top, ignore_errors=True)
