"""What `taskgate verify` costs beyond the checks it runs: on a small synthetic repository, or
on a real third-party one, where the cost of a second run is measured too.

    python bench/verify_overhead.py [--runs 5] [--check-seconds 5] [--smoke]
    python bench/verify_overhead.py --repo pypi:parse [--runs 5]

Synthetic (no --repo): a pytest project whose tests take about --check-seconds, one submitted
task per run, and a real `taskgate serve`. Each run is one `taskgate verify --task <id> --json`;
its own timing splits the wall time into checkout, checks, report reading (and ref matching) and
reporting (the REST calls that start and finish the run). The baseline, measured in the same
session, is the same check command run by hand in a plain clone. Prints one line per run, the
baseline, and last `overhead_share=<(verifier total - the checks' own time) / the checks' own
time>` (median).

Third party (--repo pypi:<name>: the sdist from the package index, with its own tests; or
--repo <git URL or path>: its default branch): the repository becomes `main`, and the check runs
its test suite (`--tests`, default `tests`) with pytest. The criterion names one test file's
tests as a group (--ref, default the first `tests/test_*.py`). Each run verifies two
submissions, each branched from main:
- `lib`: a line added to a library module, no test file touched: no rule needs a second run;
- `test`: a test added beside the named ones, in the named tests' file: the named tests are then
  judged by the baseline's version of that file, a second run of the checks;
- `other`: a test added to another test file, one no criterion names: no rule needs a second run;
- `fix`: a statement added at the top of the library function the named tests call most: the
  change-sensitivity run stubs it and runs the named tests' file alone.
Prints one line per submission, then the baseline (the check by hand in a plain clone),
`overhead_share` (the `lib` runs, as above; goal <= 0.10), `second_run_s` (median time of the
second run), `second_run_ratio=<median total of test runs / median total of lib runs>`, and
`unneeded_second_runs=<other runs that ran a second run>/<other runs>` (goal 0),
`stubbed_run_ratio=<median of the fix runs' stubbed_run_s / checks_own_s>` (goal <= 0.5) and the
fix runs' verdicts (held: the named tests do not call the function they were expected to).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import smoke
from benchkit.serve import Served, start
from benchkit.users import check_python

BIN = Path(sys.executable).parent
# Run as root, the verifier runs checks as an unprivileged user: they need a Python that user can run.
CHECK = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {check_python()} -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml"


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def make_repo(path: Path, seconds: float) -> str:
    path.mkdir(parents=True)
    per = seconds / 5
    tests = "\n".join(
        f"def test_{i}():\n    time.sleep({per})\n    assert slug('A B') == 'a-b'\n" for i in range(5)
    )
    (path / "slug.py").write_text("def slug(s):\n    return s.lower().replace(' ', '-')\n")
    (path / "test_slug.py").write_text(f"import time\n\nfrom slug import slug\n\n\n{tests}")
    (path / ".gitignore").write_text("reports/\n")
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "slugs")
    return git(path, "rev-parse", "HEAD")


def seed(
    data_dir: Path, repo: Path, shas: list[str], *, check: str = CHECK, ref: str = "test_slug"
) -> tuple[str, list[str]]:
    """Project, keys, config and one submitted task per commit in `shas`, written through the
    services."""
    from taskgate.domain.models import CredentialKind, CriterionInput, CriterionKind, VerifierKind
    from taskgate.domain.principals import acting, human
    from taskgate.service import claims, keys, projects, specs, tasks
    from taskgate.service.context import Context
    from taskgate.store.sqlite import SQLiteStore

    data_dir.mkdir(parents=True, mode=0o700)  # as `taskgate serve` makes its data dir
    store = SQLiteStore(str(data_dir / "taskgate.db"))
    ctx, me = Context(store), acting(human("bench"))
    projects.create(ctx, me, "bench", repo=str(repo))
    projects.set_verifier_config(
        ctx, me, "bench", {"checks": {"unit": {"command": check, "report": {"path": "reports/junit.xml"}}}}
    )
    verifier = keys.create(ctx, me, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL)
    projects.set_verification(ctx, me, "bench", True)
    agent = acting(keys.authenticate(ctx, keys.create(ctx, me, kind=CredentialKind.AGENT, name="a").secret))
    spec = specs.create(
        ctx,
        me,
        "bench",
        title="slugs",
        criteria=[CriterionInput(text="the named tests pass", kind=CriterionKind.TEST, verify_ref=ref)],
    )
    specs.approve(ctx, me, "bench", spec.id)
    ids = []
    for sha in shas:
        t = tasks.create(ctx, me, "bench", title="slug", spec_id=spec.id).task
        token = claims.claim(ctx, agent, "bench", task_id=t.id).token
        claims.submit(ctx, agent, t.id, token, commit_sha=sha, evidence="done")
        ids.append(t.id)
    store.close()
    return verifier.secret, ids


def direct_check(repo: Path, work: Path, check: str = CHECK) -> float:
    """The baseline: the check command by hand, in a plain clone."""
    clone = work / f"clone-{time.monotonic_ns()}"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True)
    began = time.monotonic()
    subprocess.run(check, shell=True, cwd=clone, check=True, capture_output=True)
    took = time.monotonic() - began
    shutil.rmtree(clone)
    return took


def started(data: Path, key: str) -> tuple[Served, dict[str, str]]:
    """A `taskgate serve` on the seeded data dir, and the environment `taskgate verify` runs in."""
    server = start(data)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {"TASKGATE_SERVER": server.base, "TASKGATE_VERIFIER_KEY": key}
    return server, env


def verify(task_id: str, env: dict[str, str]) -> tuple[dict[str, Any], float]:
    """One `taskgate verify --task`: its JSON line, and the process's own wall time."""
    began = time.monotonic()
    done = subprocess.run(
        [str(BIN / "taskgate"), "verify", "--task", task_id, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    line: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return line, time.monotonic() - began


def phases(t: dict[str, float]) -> str:
    """Each timed phase, and what no phase timed (handing the checkout to the check user, the
    environment rule's look at the outcome, the process's own bookkeeping)."""
    timed = sum(v for k, v in t.items() if k not in ("total_s", "checks_own_s"))
    return " ".join(f"{k}={v:.3f}" for k, v in sorted(t.items())) + f" untimed_s={t['total_s'] - timed:.3f}"


def synthetic(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="tg-bench-verify-") as tmp:
        work = Path(tmp)
        repo = work / "repo"
        sha = make_repo(repo, args.check_seconds)
        key, ids = seed(work / "data", repo, [sha] * args.runs)
        proc, env = started(work / "data", key)
        shares, direct = [], []
        try:
            for i, tid in enumerate(ids):
                direct.append(direct_check(repo, work))  # interleaved with the verifier's runs
                line, process_s = verify(tid, env)
                t = line["timings"]
                share = (t["total_s"] - t["checks_own_s"]) / t["checks_own_s"]
                shares.append(share)
                print(
                    f"run={i + 1} verdict={line['verdict']} total_s={t['total_s']:.3f} "
                    f"checkout_s={t['checkout_s']:.3f} checks_s={t['checks_s']:.3f} "
                    f"reports_s={t['reports_s']:.4f} reporting_s={t['reporting_s']:.3f} "
                    f"screen_s={t.get('screen_s', 0.0):.3f} "
                    f"checks_own_s={t['checks_own_s']:.3f} overhead={share:.3f} process_s={process_s:.3f}",
                    flush=True,
                )
        finally:
            proc.stop()
        print(f"baseline_direct_check_s={statistics.median(direct):.3f} runs={len(direct)}")
        print(f"overhead_share={statistics.median(shares):.3f}")


# -- a third-party repository ----------------------------------------------------------------------

# The library's own pytest options (coverage, doctests of its README) need plugins the check
# does not install: the check states its own.
THIRD_PARTY_CHECK = (
    f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {check_python()} -m pytest -q -o addopts= -p no:cacheprovider "
    "--junitxml=reports/junit.xml {tests}"
)


def fetch_repo(source: str, work: Path) -> Path:
    """`pypi:<name>`: the package's sdist from the index, made a git repository on `main`;
    anything else: a git URL or path, cloned, its default branch renamed `main`."""
    repo = work / "repo"
    if source.startswith("pypi:"):
        name = source.removeprefix("pypi:")
        sdists = work / "sdist"
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d",
             str(sdists), name],
            check=True,
        )  # fmt: skip
        (archive,) = sdists.glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(work / "src", filter="data")
        (top,) = (work / "src").iterdir()
        top.rename(repo)
        git(repo, "init", "--quiet", "--initial-branch=main")
        git(repo, "add", "-A")
        git(repo, "commit", "--quiet", "-m", f"{archive.name} as released")
    else:
        subprocess.run(["git", "clone", "--quiet", source, str(repo)], check=True)
        git(repo, "checkout", "--quiet", "-B", "main")
    return repo


def branch(repo: Path, name: str, path: str, added: str) -> str:
    """A submission: `added` appended to `path`, committed on a branch from main."""
    git(repo, "checkout", "--quiet", "-B", name, "main")
    with (repo / path).open("a") as f:
        f.write(added)
    git(repo, "commit", "--quiet", "-am", name)
    sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "main")
    return sha


def touch_function(repo: Path, libraries: list[str], named: str) -> str:
    """A submission changing the library function (or method) that the named test file calls most
    by name, in any of `libraries`: `pass` added as its body's first statement, committed on a
    branch `fix` from main."""
    import ast

    called: dict[str, int] = {}
    for node in ast.walk(ast.parse((repo / named).read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name:
                called[name] = called.get(name, 0) + 1
    found: list[tuple[int, str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for library in libraries:
        try:
            tree = ast.parse((repo / library).read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((called.get(n.name, 0), library, n))
    _, library, target = max(found, key=lambda f: f[0])
    source = (repo / library).read_text()
    first = target.body[0]
    lines = source.splitlines(keepends=True)
    lines.insert(first.lineno - 1, " " * first.col_offset + "pass\n")
    git(repo, "checkout", "--quiet", "-B", "fix", "main")
    (repo / library).write_text("".join(lines))
    git(repo, "commit", "--quiet", "-am", f"fix: {target.name}")
    sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--quiet", "main")
    print(f"fix_edit={library}:{target.name}", flush=True)
    return sha


def third_party(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="tg-bench-verify-") as tmp:
        work = Path(tmp)
        repo = fetch_repo(args.repo, work)
        test_files = sorted(p.relative_to(repo).as_posix() for p in (repo / args.tests).glob("test_*.py"))
        named = args.ref_file or test_files[0]
        ref = named.removesuffix(".py").replace("/", ".")
        tracked = git(repo, "ls-files", "*.py").splitlines()
        library = next(p for p in tracked if not p.startswith(args.tests) and not p.split("/")[-1].startswith(
            ("test_", "setup", "conftest")))  # fmt: skip
        lib = branch(repo, "lib", library, "\n# a submission's line: no test file changes\n")
        addition = "\n\ndef test_a_submissions_own_addition():\n    assert 1 + 1 == 2\n"
        test = branch(repo, "test", named, addition)
        unnamed = next(p for p in test_files if p != named)
        other = branch(repo, "other", unnamed, addition)
        libraries = [
            p
            for p in tracked
            if not p.startswith(args.tests)
            and not p.split("/")[-1].startswith(("test_", "setup", "conftest"))
        ]
        fix = touch_function(repo, libraries, named)
        check = THIRD_PARTY_CHECK.format(tests=args.tests)
        kinds = ("lib", "test", "other", "fix")
        key, ids = seed(work / "data", repo, [lib, test, other, fix] * args.runs, check=check, ref=ref)
        print(
            f"repo={args.repo} ref={ref} lib_edit={library} test_edit={named} other_edit={unnamed}",
            flush=True,
        )
        proc, env = started(work / "data", key)
        direct: list[float] = []
        totals: dict[str, list[float]] = {kind: [] for kind in kinds}
        shares: list[float] = []
        second: list[float] = []
        stubbed: list[float] = []
        fix_verdicts: list[str] = []
        unneeded = 0
        try:
            for i in range(args.runs):
                direct.append(direct_check(repo, work, check))  # interleaved with the verifier's runs
                for kind, tid in zip(kinds, ids[4 * i : 4 * i + 4], strict=True):
                    line, process_s = verify(tid, env)
                    t = line["timings"]
                    if kind == "fix":
                        # Held or passed, the stubbed run's cost is what is measured.
                        fix_verdicts.append(line["verdict"])
                        stubbed.append(t.get("stubbed_run_s", 0.0) / t["checks_own_s"])
                    elif line["verdict"] != "passed":
                        raise SystemExit(f"{kind}: {line['verdict']} ({line['summary']})")
                    totals[kind].append(t["total_s"])
                    if kind == "lib":
                        shares.append((t["total_s"] - t["checks_own_s"]) / t["checks_own_s"])
                    elif kind == "test":
                        second.append(t.get("second_run_s", 0.0))
                    elif kind == "other":
                        # rule 3's run on the baseline's tests, or rule 4's on the baseline's code
                        unneeded += "second_run_s" in t or "without_change_s" in t
                    print(f"run={i + 1} kind={kind} verdict={line['verdict']} {phases(t)} "
                          f"process_s={process_s:.3f}", flush=True)  # fmt: skip
        finally:
            proc.stop()
        if not all(second):
            raise SystemExit("a test-file submission ran no second run: the bench measures nothing")
        print(f"baseline_direct_check_s={statistics.median(direct):.3f} runs={len(direct)}")
        print(f"overhead_share={statistics.median(shares):.3f}")
        print(f"second_run_s={statistics.median(second):.3f}")
        print(f"second_run_ratio={statistics.median(totals['test']) / statistics.median(totals['lib']):.3f}")
        print(f"unneeded_second_runs={unneeded}/{len(totals['other'])}")
        if not all(stubbed):
            raise SystemExit("a fix submission ran no stubbed run: the bench measures nothing")
        print(f"stubbed_run_ratio={statistics.median(stubbed):.3f} fix_verdicts={','.join(fix_verdicts)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--check-seconds", type=float, default=5.0, help="synthetic mode: the tests' time")
    ap.add_argument("--repo", help="a third-party repository: pypi:<name>, or a git URL or path")
    ap.add_argument("--tests", default="tests", help="third party: the test directory the check runs")
    ap.add_argument("--ref-file", help="third party: the test file whose tests the criterion names")
    args = smoke.parse(ap, runs=1, check_seconds=0.2)
    if args.repo:
        third_party(args)
    else:
        synthetic(args)


if __name__ == "__main__":
    main()
