"""A clean checkout of the submitted commit in a fresh temporary directory, never the executor's
working tree: a new repository of the verifier's own into which that one commit is fetched
(shallow), from a remote URL or from a local repository alike. HEAD is confirmed equal to the
submitted SHA; the checkout is removed in every case.

Git runs with hooks disabled and the same scrubbed environment as the checks. A local repository
is read only through `git upload-pack` (what serves a repository to others) and a few read-only
lookups, never by running git commands in it that honour its own config: the agent owns that
config, and `core.fsmonitor`, a smudge `filter.*` or a hook there would run as the verifier (as
root, in a container or CI) with its keys in reach. The checkout's repository has only the
config git init writes, so nothing of the agent's runs before the checks do. Every git command
of a run (the diff for the reviewer included) runs before the first check: afterwards the
checkout is the check's, and the verifier does not run git in it again.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from taskgate.domain.commit_ids import is_full, resolve_prefix
from taskgate.domain.repos import is_remote
from taskgate.verifier.process import redact, scrubbed_env

GIT_TIMEOUT_S = 600.0
DIFF_MAX_BYTES = 256 * 1024
REVIEW_DEPTH = 200  # history fetched from a remote to find where a submission branched off
# A local repository may belong to another user (the agent's, read by a root verifier): git
# refuses such a repository unless told otherwise. Only read-only lookups and upload-pack run
# there, none of which runs anything its config names.
_TRUST_SOURCE = ("safe.directory=*",)
# Any commit of the local repository, reachable from a ref or not (a detached commit).
_LOCAL_UPLOAD_PACK = (
    "--upload-pack=git -c 'safe.directory=*' -c uploadpack.allowAnySHA1InWant=true upload-pack"
)


class CheckoutError(Exception):
    """The checkout failed: an error of the run (the verifier's side), never the executor's."""


class GitTimeout(CheckoutError):
    """Git took longer than GIT_TIMEOUT_S: nothing is known about the commit."""


class CommitMissing(Exception):
    """The repository was read (a local one opened, a remote one answered) and the submitted
    commit is not in it: the executor's to fix (push it), unlike a CheckoutError."""

    def __init__(self, sha: str, repo: str) -> None:
        super().__init__(f"commit {sha} is not in {repo}")
        self.sha = sha
        self.repo = repo


@dataclass(frozen=True)
class Git:
    env: Mapping[str, str]
    token: str | None = None

    @overload
    def __call__(
        self,
        *args: str,
        cwd: Path | None = ...,
        check: bool = ...,
        config: Sequence[str] = ...,
        ok: Literal[False] = ...,
    ) -> str: ...
    @overload
    def __call__(
        self,
        *args: str,
        cwd: Path | None = ...,
        check: bool = ...,
        config: Sequence[str] = ...,
        ok: Literal[True],
    ) -> str | None: ...

    def __call__(
        self,
        *args: str,
        cwd: Path | None = None,
        check: bool = True,
        config: Sequence[str] = (),
        ok: bool = False,
    ) -> str | None:
        """Git's stdout. A failure raises CheckoutError (`check`), or is ignored (not `check`),
        or, with `ok`, answers None: for the questions whose answer is whether git succeeded."""
        extra = [part for item in config for part in ("-c", item)]
        cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "protocol.file.allow=always", *extra, *args]
        env = dict(self.env)
        if self.token:
            # An HTTPS token as a header, passed through git's environment: not argv (`ps` shows
            # argv to everyone), not a file (a check could read it). git runs as the verifier and
            # only before the first check starts, so no check can read that environment.
            basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
            env |= {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "http.extraHeader",
                "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
            }
        env["GIT_TERMINAL_PROMPT"] = "0"  # never wait for a password nobody will type
        try:
            out = subprocess.run(
                cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise GitTimeout(f"git {args[0]} took longer than {GIT_TIMEOUT_S:.0f} s") from exc
        if ok and out.returncode != 0:
            return None
        if check and out.returncode != 0:
            why = redact((out.stderr or out.stdout).strip(), [self.token or ""])
            raise CheckoutError(f"git {args[0]} failed: {why.splitlines()[-1] if why else out.returncode}")
        return out.stdout.strip()


@dataclass(frozen=True)
class Baseline:
    """Where a submission started from: the merge-base of the submitted commit with the tip of
    the base branch. `commit` is None when there is none (no base branch, unrelated history);
    `why` then says so, and the submission is judged against the empty tree."""

    branch: str | None
    tip: str | None
    commit: str | None
    why: str | None = None
    # The base branch already holds the submitted commit (it was committed straight onto it).
    on_branch: bool = False


@dataclass(frozen=True)
class ClaimedBase:
    """The base branch's tip when the task was claimed, from the work item."""

    branch: str
    commit: str


@dataclass(frozen=True)
class Checkout:
    path: Path
    head: str
    repo: str
    remote: bool
    git: Git
    source: Path | None = None  # the local repository it came from

    def _fetch_options(self) -> tuple[str, ...]:
        return () if self.remote else (_LOCAL_UPLOAD_PACK,)

    def _base_ref(self, base_branch: str) -> str:
        if self.source is None:
            return f"refs/heads/{base_branch}"
        for ref in (f"refs/heads/{base_branch}", f"refs/remotes/origin/{base_branch}"):
            found = self.git(
                "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
                cwd=self.source, check=False, config=_TRUST_SOURCE,
            )  # fmt: skip
            if found:
                return ref
        raise CheckoutError(f"base branch {base_branch!r} not found in {self.repo}")

    def _has_branch(self, branch: str) -> str | None:
        """The ref that holds `branch` where the submission came from, or None."""
        if self.source is None:
            listed = self.git(
                "ls-remote", "--heads", "origin", f"refs/heads/{branch}", cwd=self.path, ok=True
            )
            return f"refs/heads/{branch}" if listed else None
        try:
            return self._base_ref(branch)
        except CheckoutError:
            return None

    def _head_branch(self) -> str | None:
        """The branch the repository's HEAD names (a bare or cloned repository's default)."""
        if self.source is None:
            listed = self.git("ls-remote", "--symref", "origin", "HEAD", cwd=self.path, ok=True) or ""
            for line in listed.splitlines():
                if line.startswith("ref: refs/heads/"):
                    return line.split("\t", 1)[0].removeprefix("ref: refs/heads/")
            return None
        name = self.git(
            "symbolic-ref", "--quiet", "--short", "HEAD", cwd=self.source, ok=True, config=_TRUST_SOURCE
        )  # fmt: skip
        return name or None

    def baseline(self, choice: str | None, claimed: ClaimedBase | None = None) -> Baseline:
        """The submission's baseline against `choice` (a human named it), else `main`, else the
        repository's HEAD branch. Fetches that branch's tip and enough history to find where the
        submission branched off. `claimed`: that branch's tip when the task was claimed, as the
        server read it (for a submission already on the branch)."""
        names = [choice] if choice else ["main", self._head_branch()]
        branch = ref = None
        for name in names:
            if name and (found := self._has_branch(name)):
                branch, ref = name, found
                break
        if branch is None or ref is None:
            asked = choice or "main (nor a HEAD branch)"
            return Baseline(None, None, None, f"the repository has no base branch {asked}")
        tracking = f"refs/remotes/origin/{branch}"
        fetch = (
            "fetch",
            "--quiet",
            "--no-tags",
            *self._fetch_options(),
            "origin",
            self.head,
            f"+{ref}:{tracking}",
        )
        self.git(*fetch[:3], f"--depth={REVIEW_DEPTH}", *fetch[3:], cwd=self.path)
        tip = self.git("rev-parse", tracking, cwd=self.path)
        found = self.git("merge-base", tip, "HEAD", cwd=self.path, ok=True)
        if not found and self.git("rev-parse", "--is-shallow-repository", cwd=self.path) == "true":
            self.git(*fetch[:3], "--unshallow", *fetch[3:], cwd=self.path, check=False)
            found = self.git("merge-base", tip, "HEAD", cwd=self.path, ok=True)
        if not found:
            return Baseline(branch, tip, None, f"the submitted commit shares no history with {branch}")
        if found == self.head:
            return dataclasses.replace(self._on_branch(branch, tip, claimed), on_branch=True)
        return Baseline(branch, tip, found)

    def _on_branch(self, branch: str, tip: str, claimed: ClaimedBase | None) -> Baseline:
        """The baseline of a submission the base branch already holds (committed straight onto
        it): its merge-base is the submission itself, which would hide every change. The tip
        the server read when the task was claimed stands in, if the submission descends from
        it; else there is none, and the submission is judged against the empty tree."""
        if claimed is not None and claimed.branch == branch:
            have = ("cat-file", "-e", f"{claimed.commit}^{{commit}}")
            if self.git(*have, cwd=self.path, ok=True) is None:
                self.git(
                    "fetch", "--quiet", "--no-tags", f"--depth={REVIEW_DEPTH}", *self._fetch_options(),
                    "origin", claimed.commit, cwd=self.path, check=False,
                )  # fmt: skip
            if self.git(*have, cwd=self.path, ok=True) is None:
                return Baseline(
                    branch, tip, None,
                    f"the submission is already on {branch} and the tip when it was claimed, "
                    f"{claimed.commit[:12]}, is not in the repository",
                )  # fmt: skip
            if self._descends_from(claimed.commit):
                return Baseline(branch, tip, claimed.commit)
            contained = ("merge-base", "--is-ancestor", self.head, claimed.commit)
            if self.git(*contained, cwd=self.path, ok=True) is not None:
                # The base branch held the submission before the task was claimed: it changes
                # nothing (not every file against the empty tree).
                return Baseline(
                    branch, tip, self.head,
                    f"the submission was already on {branch} when the task was claimed: it changes nothing",
                )  # fmt: skip
            return Baseline(
                branch, tip, None,
                f"the submission is already on {branch} and the tip when it was claimed, "
                f"{claimed.commit[:12]}, is not one of its ancestors",
            )  # fmt: skip
        return Baseline(
            branch, tip, None,
            f"the submission is already on {branch} and the tip when it was claimed is not known",
        )  # fmt: skip

    def _descends_from(self, commit: str) -> bool:
        """Whether HEAD descends from `commit` (or is it), fetching all history if a shallow
        clone cannot tell."""
        ask = ("merge-base", "--is-ancestor", commit, "HEAD")
        if self.git(*ask, cwd=self.path, ok=True) is not None:
            return True
        if self.git("rev-parse", "--is-shallow-repository", cwd=self.path) != "true":
            return False
        self.git(
            "fetch", "--quiet", "--no-tags", "--unshallow", *self._fetch_options(), "origin", self.head,
            cwd=self.path, check=False,
        )  # fmt: skip
        return self.git(*ask, cwd=self.path, ok=True) is not None

    def changed_paths(self, base: Baseline) -> list[str]:
        """The paths the submission changes against its baseline (every path of its tree when
        there is no baseline), sorted; renames count as a deletion and an addition."""
        if base.commit is None:
            listed = self.git("ls-tree", "-r", "-z", "--name-only", "HEAD", cwd=self.path)
        else:
            listed = self.git("diff", "--name-only", "-z", "--no-renames", base.commit, "HEAD", cwd=self.path)
        return sorted(p for p in listed.split("\0") if p)

    def _base_tree(self, base: Baseline) -> str:
        """What the submission is compared with: its baseline commit, else git's empty tree."""
        if base.commit is not None:
            return base.commit
        return self.git("hash-object", "-t", "tree", os.devnull, cwd=self.path)

    def read_at(self, base: Baseline | None, path: str) -> str | None:
        """A file's text at the baseline (`base`) or as submitted (None); None where it does not
        exist (or there is no baseline) or is not text."""
        rev = "HEAD" if base is None else base.commit
        if rev is None:
            return None
        data = self.git("cat-file", "blob", f"{rev}:{path}", cwd=self.path, ok=True)
        return data

    def archive(self, base: Baseline, into: Path) -> bool:
        """The baseline's tree as a tar file at `into` (git's work: done before the checkout is
        handed over). False when there is no baseline."""
        if base.commit is None:
            return False
        self.git("archive", "--format=tar", "-o", str(into), base.commit, cwd=self.path)
        return True

    def diff_from(self, base: Baseline, paths: Sequence[str] = ()) -> str:
        """The submission's changes against its baseline (the empty tree when there is none,
        the base branch's tip for unrelated history), of `paths` only when given, capped at
        DIFF_MAX_BYTES. No fetch: baseline() brought everything it needs."""
        rev = base.commit or base.tip or self._base_tree(base)
        limit = ("--", *paths) if paths else ()
        diff = self.git(
            "diff", "--no-color", "--no-ext-diff", "--no-renames", rev, "HEAD", *limit, cwd=self.path
        )
        return _capped(diff)

    def diff_against(self, base_branch: str) -> str:
        """The submission's changes against `base_branch` (from where it branched off, if known),
        capped at DIFF_MAX_BYTES."""
        self.git(
            "fetch",
            "--quiet",
            "--no-tags",
            f"--depth={REVIEW_DEPTH}",
            *self._fetch_options(),
            "origin",
            self.head,
            f"+{self._base_ref(base_branch)}:refs/remotes/origin/{base_branch}",
            cwd=self.path,
        )
        base = f"origin/{base_branch}"
        merge_base = self.git("merge-base", base, "HEAD", cwd=self.path, check=False)
        diff = self.git("diff", "--no-color", "--no-ext-diff", merge_base or base, "HEAD", cwd=self.path)
        return _capped(diff)


def _capped(diff: str, limit: int = DIFF_MAX_BYTES) -> str:
    data = diff.encode()
    if len(data) > limit:
        cut = data[:limit].decode("utf-8", "ignore")
        return f"{cut}\n[diff truncated at {limit} bytes of {len(data)}]"
    return diff


def _commit_object(git: Git, source: Path, sha: str) -> str | None:
    """The full id of the one commit whose id starts with `sha` in a local repository; None when
    there is none, or more than one (domain.commit_ids.resolve_prefix says why it takes care)."""
    return resolve_prefix(lambda *args: git(*args, cwd=source, ok=True, config=_TRUST_SOURCE), sha).commit


@contextmanager
def checkout(
    repo: str, sha: str, *, env: Mapping[str, str] | None = None, token: str | None = None
) -> Iterator[Checkout]:
    """A clean checkout of `sha`, removed when the block ends, whatever happens in it."""
    if not repo:
        raise CheckoutError("the project names no repository (set the project's repo)")
    git = Git(scrubbed_env(env if env is not None else os.environ), token)
    tmp = Path(tempfile.mkdtemp(prefix="taskgate-verify-"))
    path = tmp / "checkout"
    remote = is_remote(repo)
    source: Path | None = None
    try:
        if remote:
            if not is_full(sha):
                raise CheckoutError(f"a remote fetch needs the full commit hash, not {sha!r}")
            origin, want = repo, sha
        else:
            if not Path(repo).expanduser().is_dir():
                raise CheckoutError(f"repository {repo} not found")
            source = Path(repo).expanduser().resolve()
            git("rev-parse", "--git-dir", cwd=source, config=_TRUST_SOURCE)  # a repository at all
            found = _commit_object(git, source, sha)
            if not found:
                raise CommitMissing(sha, repo)
            origin, want = str(source), found
        git("init", "--quiet", str(path))
        git("remote", "add", "origin", origin, cwd=path)
        options = () if remote else (_LOCAL_UPLOAD_PACK,)
        try:
            git("fetch", "--quiet", "--no-tags", "--depth=1", *options, "origin", want, cwd=path)
        except GitTimeout:
            raise
        except CheckoutError:
            if not remote:
                raise
            # Either the remote could not be read (network, auth, no such repository: the
            # verifier's problem) or it was and does not serve this commit (never pushed).
            # Asking it for its refs tells which, without reading git's wording.
            if git("ls-remote", "--quiet", "origin", "HEAD", cwd=path, ok=True) is None:
                raise
            raise CommitMissing(sha, repo) from None
        git("checkout", "--quiet", "--detach", "FETCH_HEAD", cwd=path)
        head = git("rev-parse", "HEAD", cwd=path)
        if not head.startswith(sha):
            raise CheckoutError(f"HEAD of the checkout is {head}, not the submitted {sha}")
        yield Checkout(path=path, head=head, repo=repo, remote=remote, git=git, source=source)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
# The largest file the screen reads (its whole text, for context); a larger one is not screened.
ADDED_FILE_MAX_BYTES = 16 * 1024 * 1024


def added_lines(co: Checkout, base: Baseline, paths: Sequence[str]) -> dict[str, frozenset[int]]:
    """The numbers (1-based) of the lines each of `paths` adds against the baseline (against the
    empty tree when there is none): git's zero-context diff, its hunks' new-side ranges."""
    if not paths:
        return {}
    old = base.commit or co.git("hash-object", "-t", "tree", "/dev/null", cwd=co.path)
    return {p: lines for p, lines in changed_lines(co, old, paths).items() if lines}


def changed_lines(
    co: Checkout, against: str, paths: Sequence[str], *, deletions: bool = False
) -> dict[str, frozenset[int]]:
    """The numbers (1-based) of the lines each of `paths` adds or changes against `against`: git's
    zero-context diff, its hunks' new-side ranges. `deletions`: a hunk that only deletes marks the
    line before it (so the function it was cut from counts as changed)."""
    diff = co.git(
        "-c", "core.quotePath=false", "diff", "-U0", "--no-color", "--no-ext-diff", "--no-renames",
        "--src-prefix=a/", "--dst-prefix=b/", against, "HEAD", "--", *paths, cwd=co.path,
    )  # fmt: skip
    out: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            current = out.setdefault(name[2:], set()) if name.startswith("b/") else None
        elif current is not None and (m := _HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) or "1")
            current.update(range(start, start + count) if count else ([start] if deletions and start else []))
    return {p: frozenset(lines) for p, lines in out.items()}


def read_committed(co: Checkout, path: str) -> str | None:
    """A regular file of the checkout as committed (before any check ran), or None: a symlink
    is never followed (it could point anywhere the verifier may read), nor a large file read."""
    target = co.path / path
    try:
        st = target.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > ADDED_FILE_MAX_BYTES:
        return None
    return target.read_bytes().decode("utf-8", "replace")
