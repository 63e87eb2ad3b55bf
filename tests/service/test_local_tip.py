"""The server reads a local repository's base tip itself (service/staleness.py seen_base): a
verdict on a tip goes stale, and its accept warns, when `main` moves by a plain git commit with
no verifier polling and no push webhook. Real SQLite (and moto), real git repositories."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from taskgate.domain.clock import ManualTiming
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.merging import MergedBase
from taskgate.domain.models import Status
from taskgate.service import commits, projects, review, staleness, tasks
from taskgate.service.context import SYSTEM
from tests.service.scenarios import Scene, new_scene, reach, verify
from tests.support.evidence import CONFIG, Evidence
from tests.support.world import World, dump
from tests.verifier.support import Repo, git


def _verified_on_main(world: World, tmp_path: Path, *, repo: str | None = None) -> tuple[Scene, Repo, str]:
    """A project whose repository is a real local one, and a task verified on its main's tip."""
    local = Repo.create(tmp_path / "repo", {"a.py": "A = 1\n"})
    scene = new_scene(world, verification_on=True)
    tip0 = git(local.path, "rev-parse", "HEAD")
    reach(scene, Status.NEEDS_VERIFICATION)  # (its commit is made up: the repository is named after)
    projects.update_settings(
        world.ctx, world.human, "demo", repo=repo if repo is not None else str(local.path)
    )
    verify(scene, Evidence.PASS, base=MergedBase(mode="merge", branch="main", tip=tip0, tree="b0" * 20))
    assert world.reload(scene.task_id).status is Status.VERIFIED
    return scene, local, tip0


def _base_moves(world: World) -> list[dict[str, object]]:
    return [
        {"by": e.actor, **e.detail}
        for e in projects.history(world.ctx, world.human, "demo")[0]
        if e.action == "base_moved"
    ]


def test_a_git_commit_on_main_makes_the_verdict_stale_with_no_report(world: World, tmp_path: Path) -> None:
    scene, local, tip0 = _verified_on_main(world, tmp_path)
    task = world.reload(scene.task_id)
    seen = staleness.seen_base(world.ctx, world.ctx.project("demo"), [task], reads=staleness.TipReads())
    # The first read tells the server the tip it had not heard of: nothing is stale.
    assert seen.base_tip is not None and (seen.base_tip.branch, seen.base_tip.tip) == ("main", tip0)
    assert not staleness.stale(seen, task)

    tip1 = local.commit({"b.py": "B = 2\n"}, "main moves")
    seen = staleness.seen_base(world.ctx, world.ctx.project("demo"), [task], reads=staleness.TipReads())
    assert seen.base_tip is not None and (seen.base_tip.tip, seen.base_tip.by) == (tip1, SYSTEM)
    assert world.ctx.project("demo").base_tip == seen.base_tip  # recorded, not only answered
    assert staleness.stale(seen, task)
    assert [t.id for t in staleness.stale_tasks(world.ctx, seen)] == [scene.task_id]
    moves = _base_moves(world)
    assert moves[0] == {"by": SYSTEM, "branch": "main", "tip": tip1, "previous": tip0}


def test_a_moved_ref_is_read_at_once_and_an_unmoved_stamp_waits_its_longest(
    world: World, tmp_path: Path
) -> None:
    scene, local, tip0 = _verified_on_main(world, tmp_path)
    timing = ManualTiming()
    world.ctx.timing = timing
    reads = staleness.TipReads()
    task = world.reload(scene.task_id)

    def seen() -> str | None:
        p = staleness.seen_base(world.ctx, world.ctx.project("demo"), [task], reads=reads)
        return p.base_tip.tip if p.base_tip is not None else None

    assert seen() == tip0
    tip1 = local.commit({"b.py": "B = 2\n"}, "main moves")
    assert seen() == tip1  # no time passed: the ref's files changed, so it is read at once
    # main made a symbolic ref to trunk: trunk moves, no file of main's changes. The stamp cannot
    # see it; the read after TIP_READ_MAX_S does.
    git(local.path, "branch", "trunk")
    git(local.path, "symbolic-ref", "refs/heads/main", "refs/heads/trunk")
    assert seen() == tip1  # (the stamp changed: read, and the tip is the same)
    tip2 = git(
        local.path, "commit-tree", "-p", tip1, "-m", "on trunk", git(local.path, "rev-parse", "HEAD^{tree}")
    )
    git(local.path, "update-ref", "refs/heads/trunk", tip2)
    assert git(local.path, "rev-parse", "main") == tip2
    timing.sleep(staleness.TIP_READ_MAX_S - 0.1)
    assert seen() == tip1
    timing.sleep(0.2)
    assert seen() == tip2


def test_without_a_stamp_reads_wait_the_short_window(world: World, tmp_path: Path) -> None:
    """The repository named by a directory inside its working tree: git finds the repository
    above it, the stamp does not (it looks where the path says)."""
    local = tmp_path / "repo"
    scene, repo, tip0 = _verified_on_main(world, tmp_path, repo=str(local / "sub"))
    (local / "sub").mkdir()
    timing = ManualTiming()
    world.ctx.timing = timing
    reads = staleness.TipReads()
    task = world.reload(scene.task_id)

    def seen() -> str | None:
        p = staleness.seen_base(world.ctx, world.ctx.project("demo"), [task], reads=reads, every=2.0)
        return p.base_tip.tip if p.base_tip is not None else None

    assert seen() == tip0
    tip1 = repo.commit({"b.py": "B = 2\n"}, "main moves")
    timing.sleep(1.9)
    assert seen() == tip0  # inside the window: not read
    timing.sleep(0.2)
    assert seen() == tip1


def test_a_stamp_changes_with_each_way_git_moves_a_branch(tmp_path: Path) -> None:
    local = Repo.create(tmp_path / "repo", {"a.py": "A = 1\n"})
    repo = str(local.path)
    s0 = commits.tip_stamp(repo, "main")
    assert s0 is not None and s0 == commits.tip_stamp(repo, "main")
    git(local.path, "branch", "other")  # another branch: main's files are as they were
    assert commits.tip_stamp(repo, "main") == s0
    c1 = local.commit({"b.py": "B = 2\n"})
    s1 = commits.tip_stamp(repo, "main")
    assert s1 != s0
    git(local.path, "pack-refs", "--all")  # the loose ref goes, packed-refs is written
    s2 = commits.tip_stamp(repo, "main")
    assert s2 != s1
    git(local.path, "update-ref", "refs/heads/main", "HEAD~1")  # from packed-refs to a loose ref again
    assert commits.tip_stamp(repo, "main") != s2
    # A linked worktree (`.git` is a file naming its git directory) and a bare clone stamp too.
    git(local.path, "worktree", "add", "--quiet", str(tmp_path / "wt"), "-b", "wt")
    w0 = commits.tip_stamp(str(tmp_path / "wt"), "main")
    git(local.path, "update-ref", "refs/heads/main", c1)  # (it was at c1's parent)
    assert w0 is not None and commits.tip_stamp(str(tmp_path / "wt"), "main") != w0
    git(tmp_path, "clone", "--quiet", "--bare", repo, str(tmp_path / "bare.git"))
    b0 = commits.tip_stamp(str(tmp_path / "bare.git"), "main")
    git(tmp_path / "bare.git", "update-ref", "refs/heads/main", "main~1")
    assert b0 is not None and commits.tip_stamp(str(tmp_path / "bare.git"), "main") != b0
    # No stamp where the path is no repository git's way, or the branch would leave refs/heads.
    assert commits.tip_stamp(str(tmp_path), "main") is None
    assert commits.tip_stamp(repo, "../../HEAD") is None
    assert commits.tip_stamp("https://example.com/r.git", "main") is None


def test_an_accept_reads_the_tip_afresh_and_warns(world: World, tmp_path: Path) -> None:
    # Named by a directory inside it, the repository has no stamp: a read for showing it holds for
    # TIP_READ_S, which an accept does not wait for.
    scene, local, tip0 = _verified_on_main(world, tmp_path, repo=str(tmp_path / "repo" / "sub"))
    (local.path / "sub").mkdir()
    task = world.reload(scene.task_id)
    # Shown a moment ago on tip0; main moves inside the window of that read; the accept sees it.
    staleness.seen_base(world.ctx, world.ctx.project("demo"), [task])
    tip1 = local.commit({"b.py": "B = 2\n"}, "main moves")
    done, warning = review.accept_saying(world.ctx, world.human, scene.task_id)
    assert done.status is Status.DONE
    assert warning == (
        f"{scene.task_id} was verified on the commit merged onto main at {tip0[:12]}, and main is at "
        f"{tip1[:12]} now: its verdict is stale"
    )
    [accepted] = [e for e in tasks.history(world.ctx, world.human, scene.task_id) if e.action == "accept"]
    assert accepted.detail.get("stale") is True


def test_a_project_that_accepts_only_fresh_verdicts_refuses_it_and_changes_nothing(
    world: World, tmp_path: Path
) -> None:
    scene, local, _ = _verified_on_main(world, tmp_path)
    projects.set_verifier_config(world.ctx, world.human, "demo", {**CONFIG, "accept_stale": False})
    task = world.reload(scene.task_id)
    staleness.seen_base(world.ctx, world.ctx.project("demo"), [task], reads=staleness.TipReads())
    local.commit({"b.py": "B = 2\n"}, "main moves")
    before = [row for row in dump(world.store) if not row[0].startswith(("PH#", "P#demo"))]
    with pytest.raises(TaskgateError) as refused:
        review.accept_saying(world.ctx, world.human, scene.task_id)
    assert refused.value.code is ErrorCode.WRONG_STATE
    assert "accept_stale: false" in str(refused.value)
    assert world.reload(scene.task_id).status is Status.VERIFIED
    # The task and its records are as they were (the project learnt the new tip, which is true).
    assert [row for row in dump(world.store) if not row[0].startswith(("PH#", "P#demo"))] == before


def test_nothing_is_read_without_a_verdict_on_a_tip(world: World, tmp_path: Path) -> None:
    local = Repo.create(tmp_path / "repo", {"a.py": "A = 1\n"})
    scene = new_scene(world, verification_on=True)
    waiting = reach(Scene(world, scene.agent, scene.verifier), Status.NEEDS_VERIFICATION)
    alone = reach(Scene(world, scene.agent, scene.verifier), Status.NEEDS_VERIFICATION)
    projects.update_settings(world.ctx, world.human, "demo", repo=str(local.path))
    seen = staleness.seen_base(
        world.ctx, world.ctx.project("demo"), [world.reload(waiting.task_id)], reads=staleness.TipReads()
    )
    assert seen.base_tip is None and world.ctx.project("demo").base_tip is None
    # A verdict on the commit alone (merge: none) is never stale: no read for it either.
    verify(alone, Evidence.PASS, base=MergedBase(mode="none", why="merge is off"))
    assert world.reload(alone.task_id).status is Status.VERIFIED
    seen = staleness.seen_base(
        world.ctx, world.ctx.project("demo"), [world.reload(alone.task_id)], reads=staleness.TipReads()
    )
    assert seen.base_tip is None and _base_moves(world) == []
    # The same project, shown a verdict on a tip: read (so the two above were not read by rule).
    verify(waiting, Evidence.PASS, base=MergedBase(mode="merge", branch="main", tip="a0" * 20))
    seen = staleness.seen_base(
        world.ctx, world.ctx.project("demo"), [world.reload(waiting.task_id)], reads=staleness.TipReads()
    )
    assert seen.base_tip is not None and seen.base_tip.tip == git(local.path, "rev-parse", "main")


def test_a_remote_repository_is_never_read_by_the_server(world: World, tmp_path: Path) -> None:
    local = tmp_path / "repo"
    scene, _, _ = _verified_on_main(world, tmp_path, repo=f"file://{local}")
    task = world.reload(scene.task_id)
    seen = staleness.seen_base(world.ctx, world.ctx.project("demo"), [task], reads=staleness.TipReads())
    assert seen.base_tip is None and _base_moves(world) == []


def test_a_chosen_base_branch_is_the_one_read(world: World, tmp_path: Path) -> None:
    scene, local, tip0 = _verified_on_main(world, tmp_path)
    git(local.path, "branch", "release")
    projects.set_verifier_config(world.ctx, world.human, "demo", {**CONFIG, "base_branch": "release"})
    local.commit({"b.py": "B = 2\n"}, "main moves; release does not")
    task = world.reload(scene.task_id)
    seen = staleness.seen_base(world.ctx, world.ctx.project("demo"), [task], reads=staleness.TipReads())
    assert seen.base_tip is not None and (seen.base_tip.branch, seen.base_tip.tip) == ("release", tip0)


def test_racing_reads_record_one_move(race_world: World, tmp_path: Path) -> None:
    world = race_world
    scene, local, tip0 = _verified_on_main(world, tmp_path)
    task = world.reload(scene.task_id)
    staleness.seen_base(world.ctx, world.ctx.project("demo"), [task], reads=staleness.TipReads())
    tip1 = local.commit({"b.py": "B = 2\n"}, "main moves")
    start = threading.Barrier(6)
    seen: list[str | None] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            start.wait()
            p = staleness.seen_base(world.ctx, world.ctx.project("demo"), [task], reads=staleness.TipReads())
            seen.append(p.base_tip.tip if p.base_tip is not None else None)
        except BaseException as exc:  # the test reports it below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert seen == [tip1] * 6
    assert [m["tip"] for m in _base_moves(world)] == [tip1, tip0]  # newest first: one move each


def test_a_fifo_where_git_keeps_a_file_does_not_hold_the_read(tmp_path: Path) -> None:
    """The agents own the repository: a FIFO as `.git` or as a worktree's `commondir` would block
    a plain open() for good, and with it the request that shows the board."""
    local = Repo.create(tmp_path / "repo", {"a.py": "A = 1\n"})
    git(local.path, "worktree", "add", "--quiet", str(tmp_path / "wt"), "-b", "wt")
    [admin] = (local.path / ".git" / "worktrees").iterdir()
    (admin / "commondir").unlink()
    os.mkfifo(admin / "commondir")
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / ".git")
    got: dict[str, object] = {}

    def stamp(name: str) -> None:
        got[name] = commits.tip_stamp(str(tmp_path / name), "main")

    threads = [threading.Thread(target=stamp, args=(n,), daemon=True) for n in ("wt", "fifo")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads)
    assert got["fifo"] is None
    # The worktree's git directory is found; its refs are looked for there (none: all missing).
    assert got["wt"] is not None


def test_an_accept_asked_as_status_done_says_it_too(world: World, tmp_path: Path) -> None:
    """update_task(status="done") (MCP, for a human or a key they delegated to) accepts through
    the same rule, and its warnings carry what the accept said."""
    scene, local, tip0 = _verified_on_main(world, tmp_path)
    tip1 = local.commit({"b.py": "B = 2\n"}, "main moves")
    written = tasks.update(world.ctx, world.human, scene.task_id, status="done")
    assert written.task.status is Status.DONE
    assert written.warnings == [
        f"{scene.task_id} was verified on the commit merged onto main at {tip0[:12]}, and main is at "
        f"{tip1[:12]} now: its verdict is stale"
    ]


def test_a_move_hidden_from_the_stamp_still_warns_at_accept(world: World, tmp_path: Path) -> None:
    """An agent in the human's OS account makes main a symbolic ref and moves its target: no file
    of main's changes, so the board may show the old tip for up to TIP_READ_MAX_S; the accept
    reads the tip with git and warns all the same."""
    scene, local, tip0 = _verified_on_main(world, tmp_path)
    task = world.reload(scene.task_id)
    git(local.path, "branch", "trunk")
    git(local.path, "symbolic-ref", "refs/heads/main", "refs/heads/trunk")
    staleness.seen_base(world.ctx, world.ctx.project("demo"), [task])  # shown: the stamp as it is
    tree = git(local.path, "rev-parse", "HEAD^{tree}")
    tip1 = git(local.path, "commit-tree", "-p", tip0, "-m", "hidden", tree)
    git(local.path, "update-ref", "refs/heads/trunk", tip1)
    shown = staleness.seen_base(world.ctx, world.ctx.project("demo"), [task])
    assert shown.base_tip is not None and shown.base_tip.tip == tip0  # the board's view lags
    done, warning = review.accept_saying(world.ctx, world.human, scene.task_id)
    assert done.status is Status.DONE
    assert warning is not None and f"main is at {tip1[:12]} now: its verdict is stale" in warning
