"""A project's history shows the keys that cover every project: events of
project "*" merged into each project's own when read, page by page, on both adapters."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import CredentialKind, HistoryEvent, VerifierKind
from taskgate.service import keys, project_history, projects
from taskgate.store.port import Page
from taskgate.store.sqlite import SQLiteStore
from tests.support.world import World


def _walk(w: World, project: str, limit: int) -> list[HistoryEvent]:
    out: list[HistoryEvent] = []
    cursor: str | None = None
    while True:
        items, cursor = projects.history(w.ctx, w.human, project, limit=limit, cursor=cursor)
        out += items
        if cursor is None:
            return out
        assert items, "a page with a cursor after it holds something"


def _label(e: HistoryEvent) -> str:
    return f"{e.project}:{e.action}:{e.detail.get('name') or e.detail.get('key') or ''}"


def _key(w: World, name: str, scope: list[str] | None = None) -> str:
    minted = keys.create(
        w.ctx,
        w.human,
        kind=CredentialKind.VERIFIER,
        name=name,
        verifier_kind=VerifierKind.LOCAL,
        projects_=scope,
    )
    w.clock.advance(seconds=1)
    return minted.credential.id


def _story(w: World) -> dict[str, str]:
    """Project a, an all-projects key, project b, a key for a alone, another all-projects key,
    the first revoked: a second apart each."""
    w.project("a")
    w.clock.advance(seconds=1)
    ids = {"all1": _key(w, "all1")}
    w.project("b")
    w.clock.advance(seconds=1)
    ids["a-only"] = _key(w, "a-only", ["a"])
    ids["all2"] = _key(w, "all2")
    keys.revoke(w.ctx, w.human, ids["all1"])
    w.clock.advance(seconds=1)
    return ids


def test_every_project_shows_the_keys_that_cover_it_newest_first(any_world: World) -> None:
    w = any_world
    ids = _story(w)
    a = [_label(e) for e in _walk(w, "a", 50)]
    assert a == [
        f"*:key_revoked:{ids['all1']}",
        "*:key_created:all2",
        "a:key_created:a-only",
        "*:key_created:all1",
        "a:project_created:",
    ]
    # b was made after all1: that key covers it all the same.
    assert [_label(e) for e in _walk(w, "b", 50)] == [
        f"*:key_revoked:{ids['all1']}",
        "*:key_created:all2",
        "b:project_created:",
        "*:key_created:all1",
    ]
    assert [_label(e) for e in _walk(w, "*", 50)] == [
        f"*:key_revoked:{ids['all1']}",
        "*:key_created:all2",
        "*:key_created:all1",
    ]


@pytest.mark.parametrize("limit", [1, 2, 3, 4])
def test_pages_of_any_size_show_each_event_once_in_order(any_world: World, limit: int) -> None:
    w = any_world
    _story(w)
    for i in range(3):  # more of a's own events, interleaved with more keys for everyone
        projects.set_execution_defaults(w.ctx, w.human, "a", verification_commands=[f"make t{i}"])
        w.clock.advance(seconds=1)
        _key(w, f"more{i}")
    whole = _walk(w, "a", 50)
    assert len(whole) == 11
    paged = _walk(w, "a", limit)
    assert [_label(e) for e in paged] == [_label(e) for e in whole]
    assert [e.at for e in paged] == sorted((e.at for e in paged), reverse=True)


def test_a_cursor_from_elsewhere_is_refused(world: World) -> None:
    w = world
    _story(w)
    _, star_cursor = projects.history(w.ctx, w.human, "*", limit=1)
    _, a_cursor = projects.history(w.ctx, w.human, "a", limit=1)
    assert star_cursor is not None and a_cursor is not None
    for wrong, project in [(star_cursor, "a"), (a_cursor, "*"), ("bm9wZQ", "a")]:
        with pytest.raises(TaskgateError) as exc:
            projects.history(w.ctx, w.human, project, limit=1, cursor=wrong)
        assert exc.value.code is ErrorCode.VALIDATION


class _WritesBetweenReads(SQLiteStore):
    """A real SQLite store that lets another writer commit right after one chosen read: the
    moment a concurrent key change would land while a history page is being put together."""

    hook: Any = None

    def query(self, pk: str, **kw: Any) -> Page:
        page = super().query(pk, **kw)
        if self.hook is not None and pk == "PH#a":
            hook, self.hook = self.hook, None
            hook()
        return page


def test_an_event_committed_while_a_page_is_read_is_not_shown_twice(tmp_path: Path) -> None:
    store = _WritesBetweenReads(tmp_path / "h.db")
    try:
        w = World(store)
        _story(w)
        first_walk = [_label(e) for e in _walk(w, "a", 50)]
        assert [x.split(":")[0] for x in first_walk] == ["*", "*", "a", "*", "a"]
        # Page 1 (limit 3) takes a's newest own event and two of "*": a's partition is split,
        # and a new own event lands between reading it and finding the cursor past the split.
        store.hook = lambda: _key(w, "late", ["a"])
        items, cursor = projects.history(w.ctx, w.human, "a", limit=3)
        rest: list[HistoryEvent] = []
        while cursor is not None:
            more, cursor = projects.history(w.ctx, w.human, "a", limit=3, cursor=cursor)
            rest += more
        assert [_label(e) for e in items + rest] == first_walk
        assert "a:key_created:late" in [_label(e) for e in _walk(w, "a", 50)]
    finally:
        store.close()


def test_paging_while_keys_change_in_other_threads_shows_each_event_once(tmp_path: Path) -> None:
    """Real threads: writers mint and revoke keys (for every project, and for a alone) while a
    reader pages through a's history three events at a time, again and again."""
    store = SQLiteStore(tmp_path / "race.db")
    try:
        w = World(store)
        _story(w)
        errors: list[BaseException] = []

        def writer(n: int) -> None:
            try:
                for i in range(WRITES):
                    kid = _key(w, f"w{n}-{i}", None if i % 2 else ["a"])
                    if i % 3 == 0:
                        keys.revoke(w.ctx, w.human, kid)
            except BaseException as exc:  # reported below: a writer must not fail silently
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        walks = 0
        while walks < 3 or any(t.is_alive() for t in threads):
            before = {(e.at, _label(e)) for e in _walk(w, "a", 200)}
            seen = [(e.at, _label(e)) for e in _walk(w, "a", 3)]
            assert len(seen) == len(set(seen)), "an event shown twice"
            assert before <= set(seen), "an event that was there before the walk is missing"
            walks += 1
        for t in threads:
            t.join()
        assert not errors, errors
        # every write is in a's history: 5 of the story, 2 writers x (keys + revocations), half
        # of them for every project
        revoked = len([i for i in range(WRITES) if i % 3 == 0])
        final = _walk(w, "a", 200)
        assert len(final) == 5 + 2 * (WRITES + revoked)
        everyone = [i for i in range(WRITES) if i % 2]
        everyone_revoked = [i for i in everyone if i % 3 == 0]
        shared = [e for e in final if e.project == project_history.ALL_PROJECTS]
        assert len(shared) == 3 + 2 * (len(everyone) + len(everyone_revoked))
    finally:
        store.close()


WRITES = 40
