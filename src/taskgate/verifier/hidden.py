"""Hidden tests: fetched with the verifier's own credentials from their own repository, placed
at `into` in a tree of their own (the grading tree with no other test file: the baseline's
harness, the submission's source), run there by the checks, and read out of their reports.

The executor never sees them: the brief says they exist, the findings name a failing one (with
its message only under `reveal: "messages"`), and the output of the checks run on them, which
can quote a test's source and the values it compared, is never sent to the server. All or
nothing: every test the hidden files define must be reported passed; a skipped or missing one
fails the run like a failing one, named.

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
from taskgate.domain.reports import Report, TestCase, TestOutcome
from taskgate.domain.repos import is_remote
from taskgate.domain.run_report import HiddenRun
from taskgate.domain.testdefs import TestDef
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


def place(spec: HiddenTests, co: Checkout, root: Path | None = None) -> Placed:
    """Fetch `spec.ref` of `spec.repo` (shallow, with the checkout's git: the verifier's token and
    scrubbed environment, hooks off) and put its tree at `spec.into` in `root` (by default the
    checkout)."""
    top = root if root is not None else co.path
    dest = top / spec.into
    _refuse_symlinks(top, dest)
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
    files = sorted(str(p.relative_to(top)) for p in dest.rglob("*") if p.is_file() or p.is_symlink())
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


def _full(t: TestCase) -> str:
    return f"{t.classname}.{t.name}" if t.classname else t.name


def _reported(d: TestDef, cases: list[TestCase]) -> bool:
    """Whether a report holds the test `d` defines: a case of its name (a parametrized row,
    `name[...]`, included) whose classname or full name carries its groups."""
    for t in cases:
        if t.name == d.name or t.name.startswith(d.name + "[") or (d.each and d.name in t.name):
            full = _full(t)
            if all(g in full for g in d.groups):
                return True
    return False


def outcome(placed: Placed, reports: list[Report], defined: list[TestDef] | None = None) -> HiddenRun:
    """The hidden testcases of the reports (of their own run: those `placed` holds, or every
    case when the runner names no file, as node --test): how many ran, the failing ones as the
    config reveals them, the skipped ones and the tests `defined` (in the hidden files) that no
    report holds, by name."""
    every = [t for report in reports for t in report.all_tests()]
    cases = [t for t in every if placed.holds(t.classname, t.name)] or every
    ran = 0
    failed: list[FailedTest] = []
    skipped: list[str] = []
    for t in cases:
        if t.outcome is TestOutcome.SKIPPED:
            skipped.append(_full(t))
            continue
        ran += 1
        if t.outcome is TestOutcome.FAILED:
            message = t.message if placed.spec.reveal == "messages" else ""
            failed.append(FailedTest(name=_full(t), message=message))
    missing = [" > ".join([*d.groups, d.name]) for d in defined or [] if not _reported(d, cases)]
    return HiddenRun(
        commit=placed.commit,
        ran=ran,
        failed=failed[:FAILED_KEPT],
        failed_count=len(failed),
        skipped=skipped[:FAILED_KEPT],
        missing=missing[:FAILED_KEPT],
    )
