"""A clean checkout of the submitted commit in a fresh temporary directory, never the executor's
working tree: `git worktree add --detach` from a local repository, or a shallow fetch of that one
commit from a remote URL. HEAD is confirmed equal to the submitted SHA; the checkout is removed
(and the source repository's worktree list pruned) in every case.

Git runs with hooks disabled and the same scrubbed environment as the checks: a repository on
the agent's machine could carry a post-checkout hook, and it must not see the verifier's keys.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from taskgate.domain.repos import is_remote
from taskgate.verifier.process import redact, scrubbed_env

GIT_TIMEOUT_S = 600.0
DIFF_MAX_BYTES = 256 * 1024
REVIEW_DEPTH = 200  # history fetched from a remote to find where a submission branched off
_FULL_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


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
        self, *args: str, cwd: Path | None = ..., check: bool = ..., ok: Literal[False] = ...
    ) -> str: ...
    @overload
    def __call__(
        self, *args: str, cwd: Path | None = ..., check: bool = ..., ok: Literal[True]
    ) -> str | None: ...

    def __call__(
        self, *args: str, cwd: Path | None = None, check: bool = True, ok: bool = False
    ) -> str | None:
        """Git's stdout. A failure raises CheckoutError (`check`), or is ignored (not `check`),
        or, with `ok`, answers None: for the questions whose answer is whether git succeeded."""
        cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "protocol.file.allow=always", *args]
        env = dict(self.env)
        if self.token:
            # An HTTPS token as a header, passed through the environment (not argv: `ps` shows argv).
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
class Checkout:
    path: Path
    head: str
    repo: str
    remote: bool
    git: Git

    def diff_against(self, base_branch: str) -> str:
        """The submission's changes against `base_branch` (from where it branched off, if known),
        capped at DIFF_MAX_BYTES."""
        if self.remote:
            self.git(
                "fetch",
                "--quiet",
                "--no-tags",
                f"--depth={REVIEW_DEPTH}",
                "origin",
                self.head,
                f"+refs/heads/{base_branch}:refs/remotes/origin/{base_branch}",
                cwd=self.path,
            )
            base = f"origin/{base_branch}"
        else:
            found = [
                ref
                for ref in (base_branch, f"origin/{base_branch}")
                if self.git(
                    "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=self.path, check=False
                )
            ]
            if not found:
                raise CheckoutError(f"base branch {base_branch!r} not found in {self.repo}")
            base = found[0]
        merge_base = self.git("merge-base", base, "HEAD", cwd=self.path, check=False)
        diff = self.git("diff", "--no-color", "--no-ext-diff", merge_base or base, "HEAD", cwd=self.path)
        data = diff.encode()
        if len(data) > DIFF_MAX_BYTES:
            cut = data[:DIFF_MAX_BYTES].decode("utf-8", "ignore")
            return f"{cut}\n[diff truncated at {DIFF_MAX_BYTES} bytes of {len(data)}]"
        return diff


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
            if not _FULL_SHA.match(sha):
                raise CheckoutError(f"a remote fetch needs the full commit hash, not {sha!r}")
            git("init", "--quiet", str(path))
            git("remote", "add", "origin", repo, cwd=path)
            try:
                git("fetch", "--quiet", "--no-tags", "--depth=1", "origin", sha, cwd=path)
            except GitTimeout:
                raise
            except CheckoutError:
                # Either the remote could not be read (network, auth, no such repository: the
                # verifier's problem) or it was and does not serve this commit (never pushed).
                # Asking it for its refs tells which, without reading git's wording.
                if git("ls-remote", "--quiet", "origin", "HEAD", cwd=path, ok=True) is None:
                    raise
                raise CommitMissing(sha, repo) from None
            git("checkout", "--quiet", "--detach", "FETCH_HEAD", cwd=path)
        else:
            if not Path(repo).expanduser().is_dir():
                raise CheckoutError(f"repository {repo} not found")
            source = Path(repo).expanduser()
            git("rev-parse", "--git-dir", cwd=source)  # a repository at all: else a CheckoutError
            if git("rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}", cwd=source, ok=True) is None:
                raise CommitMissing(sha, repo)
            git("worktree", "add", "--quiet", "--detach", str(path), sha, cwd=source)
        head = git("rev-parse", "HEAD", cwd=path)
        if not head.startswith(sha):
            raise CheckoutError(f"HEAD of the checkout is {head}, not the submitted {sha}")
        yield Checkout(path=path, head=head, repo=repo, remote=remote, git=git)
    finally:
        if source is not None:
            git("worktree", "remove", "--force", str(path), cwd=source, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        if source is not None:
            git("worktree", "prune", cwd=source, check=False)
