"""Dependency caches (verifier/cache.py): restored into the checkout where the submission left
their key files as the baseline has them; made once from the check run on the baseline's own
commit. git's work too: done before the checkout is the check user's."""

from __future__ import annotations

import json
import os
import platform
import shutil
from contextlib import ExitStack

from taskgate.domain.verifier_config import IMAGE_VAR, CacheSpec, CheckSpec
from taskgate.verifier.cache import (
    MANIFEST,
    PLACEHOLDER,
    CacheError,
    cache_key,
    copy_tree,
    matches,
    relocate,
    tree_bytes,
)
from taskgate.verifier.checkout import CheckoutError, CommitMissing, checkout
from taskgate.verifier.state import RunState
from taskgate.verifier.trees import occupied


def restore(state: RunState) -> None:
    v, cfg = state.verifier, state.config
    if v.cache is None or not any(c.cache for c in cfg.checks.values()):
        return
    with state.timed("cache"):
        _restore(state)


def _restore(state: RunState) -> None:
    v, co, base = state.verifier, state.checkout, state.baseline
    if v.sandbox.user is None:
        state.say(
            "cache: not used: the checks run as the verifier's own user, who could write into it "
            "(started as root, the verifier runs them as a check user)"
        )
        return
    if base.commit is None:
        state.say(f"cache: not used: {base.why}")
        return
    try:
        changed = co.changed_paths(base)
        listed = co.git("ls-tree", "-r", "-z", base.commit, cwd=co.path)
    except CheckoutError as exc:
        state.say(f"cache: not used: {exc}")
        return
    blobs: dict[str, str] = {}
    for entry in filter(None, listed.split("\0")):
        meta, _, path = entry.partition("\t")
        blobs[path] = meta.split()[-1]
    for name, check in state.config.checks.items():
        if check.cache is not None:
            _one(state, name, check, check.cache, changed, blobs)


def _one(
    state: RunState, name: str, check: CheckSpec, spec: CacheSpec, changed: list[str], blobs: dict[str, str]
) -> None:
    v, co, base = state.verifier, state.checkout, state.baseline
    assert v.cache is not None and v.sandbox.user is not None and base.commit is not None
    touched = [p for p in changed if any(matches(k, p) for k in spec.key)]
    if touched:
        state.say(f"cache {name}: not used: the submission changes {touched[0]}, a key file")
        return
    for path in spec.paths:
        taken = occupied(co.path, path)
        if taken is not None:
            state.say(f"cache {name}: not used: the submission has {taken}, where the cache goes")
            return
    files = sorted([p, oid] for p, oid in blobs.items() if any(matches(k, p) for k in spec.key))
    key = cache_key(
        {
            "format": 1,
            "check": name,
            "command": check.command,
            "key": spec.key,
            "paths": spec.paths,
            "files": files,
            "machine": platform.machine(),
            "image": v.env.get(IMAGE_VAR),
            "user": v.sandbox.user.name,
        }
    )
    staged = co.path.parent / f"cache-{name}"  # in the run's directory, gone with it
    try:
        found = v.cache.restore(key, staged)
        if not found and base.commit == co.head:
            # The submitted commit is on the base branch already: its baseline is itself, and
            # a cache made from it would be made by the submission's own code.
            state.say(f"cache {name}: not made: the submitted commit is its own baseline")
        elif not found and _prepare(state, base.commit, name, check, spec, key):
            found = v.cache.restore(key, staged)
        if not found:
            return
        relocate(staged, PLACEHOLDER, str(co.path), json.loads((staged / MANIFEST).read_text()))
        restored = []
        for path in spec.paths:
            src = staged / path
            if src.is_symlink() or src.exists():
                (co.path / path).parent.mkdir(parents=True, exist_ok=True)
                os.rename(src, co.path / path)
                restored.append(path)
        state.say(
            f"cache {name}: restored {', '.join(restored) or 'nothing'} "
            f"(key {key[:12]}, from the baseline {base.commit[:12]})"
        )
    except (CacheError, OSError, ValueError) as exc:
        state.say(f"cache {name}: not used: {exc}")
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _prepare(state: RunState, commit: str, name: str, check: CheckSpec, spec: CacheSpec, key: str) -> bool:
    """Make the cache from the check run on the baseline's own commit, in a checkout of its
    own; saved only when the check passed there. True when saved."""
    v, cfg = state.verifier, state.config
    assert v.cache is not None
    state.say(f"cache {name}: none yet for key {key[:12]}: running the check on the baseline {commit[:12]}")
    with ExitStack() as stack:
        try:
            made = stack.enter_context(checkout(state.work.repo, commit, env=v.env, token=v.git_token))
        except (CheckoutError, CommitMissing) as exc:
            state.say(f"cache {name}: not made: checkout of the baseline failed: {exc}")
            return False
        with v.sandbox.hand_over(made.path) as dirs:
            done = v.run(check.command, dirs, check.timeout_minutes or cfg.check_timeout_minutes)
        if done.exit_code != 0:
            said = "timed out" if done.timed_out else f"exited {done.exit_code}"
            state.say(f"cache {name}: not saved: the check {said} on the baseline")
            return False
        # Nothing of the check user's runs any more (hand_over ended): the tree holds still.
        staging = made.path.parent / "cache-save"
        os.mkdir(staging, 0o700)
        for path in spec.paths:
            if occupied(made.path, path, parents_only=True) is not None:
                state.say(f"cache {name}: not saved: {path} is under a link on the baseline")
                return False
            src = made.path / path
            if src.is_symlink() or not src.is_dir():
                if src.is_symlink() or src.exists():
                    state.say(f"cache {name}: not saved: {path} is not a directory after the check")
                    return False
                continue  # the check made nothing there
            (staging / path).parent.mkdir(parents=True, exist_ok=True)
            copy_tree(src, staging / path)
        moved = relocate(staging, str(made.path), PLACEHOLDER)
        (staging / MANIFEST).write_text(json.dumps(moved))
        try:
            v.cache.save(key, staging)
        except (CacheError, OSError) as exc:
            state.say(f"cache {name}: not saved: {exc}")
            return False
        state.say(f"cache {name}: saved from the baseline ({tree_bytes(staging) / 2**20:.1f} MB)")
        return True
