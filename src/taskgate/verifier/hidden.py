"""Hidden tests: fetched with the verifier's own credentials from their own repository, placed
at `into` in the checkout right before the checks, and picked out of the checks' reports.

The executor never sees them: the brief says they exist, the findings name a failing one (with
its message only under `reveal: "messages"`), and the checks' output, which can quote a test's
source and the values it compared, is withheld from everything sent to the server.

What the submission holds at `into` is removed first (a conftest or test of its own there would
stand beside the hidden ones); a symlink on the way to `into` is refused, so nothing is written
outside the checkout.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from taskgate.domain.models import FailedTest
from taskgate.domain.reports import Report, TestOutcome
from taskgate.domain.repos import is_remote
from taskgate.domain.run_report import HiddenRun
from taskgate.domain.verifier_config import HiddenTests
from taskgate.verifier.checkout import _LOCAL_UPLOAD_PACK, Checkout, CheckoutError, Git

# Said in place of every check's output when hidden tests ran in the checkout.
WITHHELD = (
    "[output withheld: hidden tests ran in this checkout, and a check's output can quote them; "
    "failing tests are named in the findings]"
)
FAILED_KEPT = 50


class HiddenError(Exception):
    """The hidden tests could not be fetched or placed: an error of the run. Its message goes to
    the server (and the task's history, which the executor reads), so it never names where the
    hidden tests come from; `detail` (git's own words) is for the verifier's log only."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


@dataclass(frozen=True)
class Placed:
    spec: HiddenTests
    commit: str
    files: tuple[str, ...]  # paths inside the checkout, under spec.into

    def holds(self, classname: str, name: str) -> bool:
        """A report's testcase is one of the hidden tests: its classname (pytest's dotted module
        path, or a path) or a JSON id starts at `into`."""
        into = self.spec.into
        dotted = into.replace("/", ".")
        for text in (classname, name):
            if text == dotted or text.startswith((dotted + ".", into + "/", into + "::")):
                return True
        return False


def place(spec: HiddenTests, co: Checkout) -> Placed:
    """Fetch `spec.ref` of `spec.repo` (shallow, with the checkout's git: the verifier's token and
    scrubbed environment, hooks off) and put its tree at `spec.into` in the checkout."""
    dest = co.path / spec.into
    _refuse_symlinks(co.path, dest)
    with tempfile.TemporaryDirectory(prefix="taskgate-hidden-") as tmp:
        work = Path(tmp) / "tree"
        git: Git = co.git
        remote = is_remote(spec.repo)
        origin = spec.repo
        if not remote:
            local = Path(spec.repo).expanduser()
            if not local.is_dir():
                raise HiddenError(
                    "hidden tests: the configured repository was not found", f"no directory {spec.repo}"
                )
            origin = str(local.resolve())
        try:
            git("init", "--quiet", str(work))
            git("remote", "add", "origin", origin, cwd=work)
            options = () if remote else (_LOCAL_UPLOAD_PACK,)
            git("fetch", "--quiet", "--no-tags", "--depth=1", *options, "origin", spec.ref, cwd=work)
            commit = git("rev-parse", "FETCH_HEAD^{commit}", cwd=work)
            git("checkout", "--quiet", "--detach", "FETCH_HEAD", cwd=work)
        except CheckoutError as exc:
            raise HiddenError(
                f"hidden tests: cannot fetch {spec.ref} from the configured repository", str(exc)
            ) from exc
        shutil.rmtree(work / ".git")
        if dest.is_symlink() or dest.is_file():
            dest.unlink()
        elif dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(work, dest, symlinks=True)
    files = sorted(str(p.relative_to(co.path)) for p in dest.rglob("*") if p.is_file() or p.is_symlink())
    return Placed(spec, commit, tuple(files))


def _refuse_symlinks(top: Path, dest: Path) -> None:
    """No directory on the way from the checkout to `dest` may be a symlink the submission made."""
    here = top
    for part in dest.relative_to(top).parts[:-1]:
        here = here / part
        if here.is_symlink():
            raise HiddenError(
                f"hidden tests cannot be placed at {dest.relative_to(top)}: "
                f"the submission holds a symlink at {here.relative_to(top)}"
            )
        if here.exists() and not here.is_dir():
            raise HiddenError(
                f"hidden tests cannot be placed at {dest.relative_to(top)}: "
                f"the submission holds a file at {here.relative_to(top)}"
            )


def outcome(placed: Placed, reports: list[Report]) -> HiddenRun:
    """The hidden testcases of the reports: how many ran, and the failing ones as the config
    reveals them."""
    ran = 0
    failed: list[FailedTest] = []
    for report in reports:
        for t in report.all_tests():
            if not placed.holds(t.classname, t.name):
                continue
            if t.outcome is not TestOutcome.SKIPPED:
                ran += 1
            if t.outcome is TestOutcome.FAILED:
                name = f"{t.classname}.{t.name}" if t.classname else t.name
                message = t.message if placed.spec.reveal == "messages" else ""
                failed.append(FailedTest(name=name, message=message))
    return HiddenRun(commit=placed.commit, ran=ran, failed=failed[:FAILED_KEPT], failed_count=len(failed))
