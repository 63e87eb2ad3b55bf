"""The verifier's parts on their own: running a command, the checkout, reading a report, the
reviewer's answer, and the draft config built from project commands."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from taskgate.domain.reports import MAX_REPORT_BYTES, ReportError
from taskgate.domain.run_report import Evidence
from taskgate.domain.verifier_config import ReportSpec, draft_from_commands
from taskgate.verifier import process
from taskgate.verifier.checkout import CheckoutError, CommitMissing, checkout, is_remote
from taskgate.verifier.reading import ReportMissing, read_report
from taskgate.verifier.reviewer import ReviewerError, parse_answer, prompt
from tests.support.processes import alive as _alive
from tests.verifier.support import AMBIGUOUS_PREFIX, Repo, ambiguous_commits, git

JUNIT = '<testsuites><testsuite name="s"><testcase classname="m" name="t"/></testsuite></testsuites>'


# -- process -----------------------------------------------------------------------------------


def test_the_environment_loses_keys_tokens_and_cloud_credentials() -> None:
    env = {
        "PATH": "/usr/bin",
        "HOME": "/home/v",
        "TASKGATE_VERIFIER_KEY": "k",
        "taskgate_reviewer_key": "k",
        "AWS_ACCESS_KEY_ID": "a",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/x",
        "GOOGLE_APPLICATION_CREDENTIALS": "/x.json",
        "AZURE_CLIENT_SECRET": "s",
        "GITHUB_TOKEN": "g",
        "CI": "true",
    }
    assert process.scrubbed_env(env) == {"PATH": "/usr/bin", "HOME": "/home/v", "CI": "true"}


def test_a_command_gets_its_exit_code_output_and_stdin(tmp_path: Path) -> None:
    done = process.run(
        "cat; echo err >&2; exit 3",
        cwd=tmp_path,
        timeout_s=30,
        env=os.environ,
        stdin=b"hello\n",
        split_stderr=True,
    )
    assert (done.exit_code, done.timed_out) == (3, False)
    assert done.output == "hello\n" and done.errors == "err\n"
    merged = process.run("echo out; echo err >&2", cwd=tmp_path, timeout_s=30, env=os.environ)
    assert merged.output == "out\nerr\n" and merged.errors == ""


def test_only_the_tail_of_a_huge_output_is_kept(tmp_path: Path) -> None:
    done = process.run(
        "head -c 5000000 /dev/zero | tr '\\0' 'a'; echo END", cwd=tmp_path, timeout_s=30, env=os.environ
    )
    assert done.exit_code == 0 and done.output.endswith("aEND\n")
    assert len(done.output) == process.TAIL_BYTES


def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    began = time.monotonic()
    done = process.run(
        f"sleep 600 & echo $! > {pidfile}; sleep 600", cwd=tmp_path, timeout_s=1, env=os.environ
    )
    assert done.timed_out and done.exit_code is None
    assert time.monotonic() - began < 10
    assert not _alive(int(pidfile.read_text()))


def test_secrets_that_reach_the_output_anyway_are_redacted(tmp_path: Path) -> None:
    (tmp_path / "leak").write_text("key=tgv_abcdef123456_SECRETSECRET\n")
    done = process.run(
        "cat leak", cwd=tmp_path, timeout_s=30, env=os.environ, secrets_=["tgv_abcdef123456_SECRETSECRET"]
    )
    assert done.output == "key=[redacted]\n"


# -- checkout ----------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo.create(tmp_path / "repo", {"a.txt": "one\n"})
    r.branch("feature")
    r.commit({"a.txt": "two\n"}, "two")
    return r


def test_a_local_checkout_is_a_clean_repository_of_its_own_removed_afterwards(repo: Repo) -> None:
    sha = git(repo.path, "rev-parse", "HEAD")
    repo.write({"a.txt": "dirty\n", "new.txt": "untracked\n"})
    with checkout(str(repo.path), sha[:12]) as co:
        assert co.head == sha and not co.remote
        assert (co.path / "a.txt").read_text() == "two\n" and not (co.path / "new.txt").exists()
        assert co.path.resolve() != repo.path.resolve()
        assert "+two" in co.diff_against("main") and "-one" in co.diff_against("main")
        where = co.path
    assert not where.exists() and not where.parent.exists()
    assert git(repo.path, "worktree", "list").count("\n") == 0
    assert (repo.path / "a.txt").read_text() == "dirty\n"


def test_a_remote_checkout_fetches_only_that_commit(repo: Repo) -> None:
    sha = git(repo.path, "rev-parse", "HEAD")
    url = f"file://{repo.path}"
    assert is_remote(url) and is_remote("git@github.com:o/r.git") and not is_remote(str(repo.path))
    with checkout(url, sha) as co:
        assert co.remote and co.head == sha
        assert git(co.path, "rev-list", "--count", "HEAD") == "1"  # shallow: one commit
        assert "+two" in co.diff_against("main")
    with pytest.raises(CheckoutError, match="full commit hash"), checkout(url, sha[:12]):
        pass


def test_checkout_failures_are_checkout_errors(repo: Repo, tmp_path: Path) -> None:
    with pytest.raises(CheckoutError, match="not found"), checkout(str(tmp_path / "nope"), "deadbeef"):
        pass
    with pytest.raises(CheckoutError, match="names no repository"), checkout("", "deadbeef"):
        pass
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    with pytest.raises(CheckoutError, match="not a git repository"), checkout(str(plain_dir), "deadbeef"):
        pass
    unreachable = f"file://{tmp_path}/nowhere.git"
    with pytest.raises(CheckoutError, match="git fetch failed"), checkout(unreachable, "deadbeef" * 5):
        pass


def test_a_commit_the_repository_does_not_hold_is_told_apart_from_a_failed_fetch(
    repo: Repo, tmp_path: Path
) -> None:
    """Local or fetched, a repository that was read but lacks the commit is CommitMissing (the
    executor's to fix), never a CheckoutError (the verifier's)."""
    with pytest.raises(CommitMissing) as local, checkout(str(repo.path), "deadbeef" * 5):
        pass
    assert (local.value.sha, local.value.repo) == ("deadbeef" * 5, str(repo.path))
    assert not isinstance(local.value, CheckoutError)
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(repo.path), str(bare)], check=True)
    with pytest.raises(CommitMissing), checkout(f"file://{bare}", "deadbeef" * 5):
        pass
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo.path, capture_output=True, text=True, check=True
    ).stdout.strip()
    with checkout(f"file://{bare}", head) as co:  # and a commit it holds is checked out
        assert co.head == head


def test_a_ref_named_like_the_abbreviation_never_stands_for_the_commit(repo: Repo) -> None:
    """git reads a name as a ref before an abbreviated object id: the executor's branch or tag
    named like its abbreviation must not make the verifier check out another commit (which the
    HEAD check then turned into a verifier error, never the executor's failure), nor make a
    name with no commit behind it "there"."""
    work = git(repo.path, "rev-parse", "HEAD")
    other = git(repo.path, "rev-parse", "HEAD~1")
    git(repo.path, "branch", work[:8], other)
    git(repo.path, "tag", work[:10], other)
    git(repo.path, "branch", "deadbeef", other)
    for short in (work[:8], work[:10]):
        assert git(repo.path, "rev-parse", f"{short}^{{commit}}") == other  # what git itself reads
        with checkout(str(repo.path), short) as co:
            assert co.head == work and (co.path / "a.txt").read_text() == "two\n"
    with pytest.raises(CommitMissing) as missing, checkout(str(repo.path), "deadbeef"):
        pass
    assert missing.value.sha == "deadbeef"


def test_an_abbreviation_two_commits_share_is_checked_out_as_neither(repo: Repo) -> None:
    """An abbreviation more than one commit starts with names no one commit: the executor's to
    fix (CommitMissing, the run fails), never a guess. One digit more names one, and is taken."""
    first, second = ambiguous_commits(repo.path)
    with pytest.raises(CommitMissing), checkout(str(repo.path), AMBIGUOUS_PREFIX):
        pass
    for full in (first, second):
        short = full[: len(AMBIGUOUS_PREFIX) + 1]  # the two differ in their 8th digit
        with checkout(str(repo.path), short) as co:
            assert co.head == full


def test_repository_hooks_never_run_with_the_verifiers_environment(repo: Repo, tmp_path: Path) -> None:
    """A post-checkout hook planted in the agent's repository would see the verifier's keys."""
    marker = tmp_path / "hook-ran"
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\nenv > {marker}\n")
    hook.chmod(0o755)
    sha = git(repo.path, "rev-parse", "HEAD")
    with checkout(str(repo.path), sha, env={**os.environ, "TASKGATE_VERIFIER_KEY": "tgv_x"}):
        pass
    assert not marker.exists()


def test_the_agents_repository_config_never_runs_while_the_checkout_is_made(
    repo: Repo, tmp_path: Path
) -> None:
    """The agent owns its repository's .git/config: an fsmonitor command or a smudge filter
    there would run as the verifier (as root, in CI or a container) while it makes the checkout
    and takes the reviewer's diff."""
    fsmonitor, smudge = tmp_path / "fsmonitor-ran", tmp_path / "smudge-ran"
    sha = repo.commit({".gitattributes": "* filter=agent\n", "b.txt": "three\n"})
    git(repo.path, "config", "core.fsmonitor", f"touch {fsmonitor}; false")
    git(repo.path, "config", "filter.agent.smudge", f"touch {smudge}; cat")
    with checkout(str(repo.path), sha) as co:
        assert (co.path / "b.txt").read_text() == "three\n"
        assert "+three" in co.diff_against("main")
    assert not fsmonitor.exists() and not smudge.exists()


# -- reading reports ---------------------------------------------------------------------------


def test_a_report_is_read_only_from_a_regular_file_inside_the_checkout(tmp_path: Path) -> None:
    co = tmp_path / "co"
    (co / "reports").mkdir(parents=True)
    (co / "reports" / "j.xml").write_text(JUNIT)
    (co / "reports" / "link.xml").symlink_to("j.xml")  # a link that stays inside is fine
    outside = tmp_path / "outside.xml"
    outside.write_text(JUNIT)
    (co / "out.xml").symlink_to(outside)
    os.mkfifo(co / "fifo.xml")
    with open(co / "big.xml", "wb") as f:
        f.truncate(MAX_REPORT_BYTES + 1)
    read = read_report(co, ReportSpec(path="reports/j.xml"))
    assert read.report.groups[0].tests[0].name == "t"
    assert read.sha256 == hashlib.sha256(JUNIT.encode()).hexdigest()  # of the bytes parsed
    assert read_report(co, ReportSpec(path="reports/link.xml")).report.groups[0].name == "s"
    for path, message in (
        ("out.xml", "resolves outside the checkout"),
        ("fifo.xml", "not a regular file"),
        ("big.xml", "the limit is"),
    ):
        with pytest.raises(ReportError, match=message):
            read_report(co, ReportSpec(path=path))
    with pytest.raises(ReportMissing):
        read_report(co, ReportSpec(path="reports/none.xml"))
    escaping = ReportSpec.model_construct(path="../outside.xml", format="junit")  # past validation
    with pytest.raises(ReportError, match="must be relative"):
        read_report(co, escaping)


def test_a_report_that_is_not_the_check_users_own_file_is_refused(tmp_path: Path) -> None:
    """Run as root, the verifier reads what a check user wrote: a hardlink in the checkout to a
    file that user could not read must not be read for it. The check user's own file is."""
    co = tmp_path / "co"
    (co / "reports").mkdir(parents=True)
    (co / "reports" / "j.xml").write_text(JUNIT)
    me = os.getuid()
    assert read_report(co, ReportSpec(path="reports/j.xml"), owner=me).report.groups[0].name == "s"
    with pytest.raises(ReportError, match=f"belongs to uid {me}, not to the check's user"):
        read_report(co, ReportSpec(path="reports/j.xml"), owner=me + 1)


# -- the reviewer's answer ---------------------------------------------------------------------


def test_a_well_formed_answer_is_read() -> None:
    out = parse_answer(
        json.dumps({"results": [{"criterion": "AC-1.2", "result": "pass", "rationale": " adds docs "}]}),
        ["AC-1.2"],
    )
    assert out["AC-1.2"].result is Evidence.PASS and out["AC-1.2"].rationale == "adds docs"
    bare = parse_answer('{"results":[{"criterion":"AC-1.2","result":"pass","rationale":"  "}]}', ["AC-1.2"])
    assert bare["AC-1.2"].rationale is None  # the server counts that pass as missing


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("", "printed nothing"),
        ("LGTM", "not one JSON object"),
        ("{not json", "not valid JSON"),
        ('{"results": "all good"}', "wrong shape at results"),
        ('{"results":[{"criterion":"AC-1.2","result":"maybe","rationale":"x"}]}', "wrong shape"),
        ('{"results":[{"criterion":"AC-9.9","result":"pass","rationale":"x"}]}', "not asked about"),
        ('{"results":[]}', "no answer for AC-1.2"),
        (
            '{"results":[{"criterion":"AC-1.2","result":"pass","rationale":"x"},'
            '{"criterion":"AC-1.2","result":"fail","rationale":"y"}]}',
            "twice",
        ),
        ("```json\n{}\n```\n```json\n{}\n```", "not one JSON object"),
    ],
)
def test_anything_else_is_a_reviewer_error(output: str, message: str) -> None:
    with pytest.raises(ReviewerError, match=message):
        parse_answer(output, ["AC-1.2"])


def test_the_prompt_holds_the_spec_the_criteria_and_the_diff() -> None:
    text = prompt(
        {"id": "SPEC-1", "title": "Slugs", "body": "b"}, [{"id": "AC-1.2", "text": "docs"}], "+x", "main"
    )
    assert text.index("SPEC-1: Slugs") < text.index("- AC-1.2: docs") < text.index("DIFF (against main)\n+x")
    assert "(the task has no spec" in prompt(None, [], "", "dev")


# -- start from project commands ---------------------------------------------------------------


def test_a_draft_config_from_project_commands() -> None:
    cfg, notes = draft_from_commands(
        [
            "pytest -q --junitxml=reports/junit.xml",
            "npm test",
            "npm test",
            "node --test --test-reporter=junit --test-reporter-destination=out/node.xml",
            "pytest --junitxml=/tmp/abs.xml",
            "  ",
            "python3 -m pytest --junitxml=reports/py.xml",
        ]
    )
    assert list(cfg.checks) == ["pytest", "npm-test", "node-test", "pytest-2", "pytest-3"]
    assert (
        cfg.checks["pytest-3"].report is not None and cfg.checks["pytest-3"].report.path == "reports/py.xml"
    )
    assert cfg.checks["pytest"].report is not None and cfg.checks["pytest"].report.path == "reports/junit.xml"
    assert (
        cfg.checks["node-test"].report is not None and cfg.checks["node-test"].report.path == "out/node.xml"
    )
    assert cfg.checks["pytest-2"].report is None  # an absolute path: a human chooses one
    assert notes[0].startswith("Review every command")
    assert any("'npm-test' writes no report" in n for n in notes)
    empty, empty_notes = draft_from_commands([])
    assert empty.checks == {} and "no verification commands" in empty_notes[-1]
