"""A verified card goes stale on the board when `main` of the project's local repository moves
by a plain git commit, with no verifier running and no push webhook: `taskgate serve` reads the
tip itself. Accepting it warns in the dialog and in what the board says after. A real `taskgate
serve`, real git, `taskgate verify --once` (exited before the board opens) and a real Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, off_loop, sign_in
from tests.mcp.live import Live
from tests.support.conf_project import USE, USE_PY, USES
from tests.support.users import shared_tmp
from tests.verifier.support import Gate, Repo, git, pytest_config

CONF = "LIMIT = 10\n"
CONF_TEST = "import conf\n\n\ndef test_limit():\n    assert conf.LIMIT == 10\n"
# The board polls every 3 s and the server reads a tip at most once per 2 s per project.
SEEN_WITHIN_MS = 15_000


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """The checks run as an unprivileged user when the suite runs as root: the repositories live
    where that user can read them."""
    yield from shared_tmp()


def test_a_git_commit_on_main_marks_the_card_stale_and_the_accept_warns(
    page: Page, site: Site, tmp_path: Path
) -> None:
    repo = Repo.create(
        tmp_path / "repo", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    live = Live(site.url, site.server.data_dir, site.server.proc)  # type: ignore[arg-type]
    gate = Gate.create(live, repo, pytest_config())
    tip0 = git(repo.path, "rev-parse", "HEAD")
    tid = gate.task([USE])
    git(repo.path, "checkout", "--quiet", "-b", "use")
    sha = repo.commit({"use.py": USE_PY, "test_use.py": USES}, "use")
    git(repo.path, "checkout", "--quiet", "main")
    off_loop(gate.submit, tid, sha)
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"]  # the verifier has exited

    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, site, f"?project={gate.project}")
    card = page.locator(f'li.card[data-task="{tid}"]')
    expect(card.locator(".card-base")).to_have_text(f"on main @ {tip0[:7]}")
    expect(card.locator(".flag-stale")).to_have_count(0)

    tip1 = repo.commit({"README": "hello\n"}, "docs")  # main moves; nobody tells the server
    stale = f"stale: main is at {tip1[:12]} now; it is verified again on that tip"
    expect(card.locator(".flag-stale")).to_have_text(stale, timeout=SEEN_WITHIN_MS)
    expect(card).to_have_class(re.compile(r"\bstale\b"))

    card.locator(".card-title").click()
    drawer = page.locator("#drawer")
    expect(
        drawer.get_by_role("note", name="What the verdict holds for").locator(".stale-note")
    ).to_contain_text(stale)
    drawer.get_by_role("button", name="Accept", exact=True).click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator(".stale-warning")).to_have_text(
        f"Its verdict is stale ({stale}): it was verified on the commit merged onto main at {tip0[:12]}."
    )
    dialog.get_by_role("button", name="Accept", exact=True).click()
    expect(page.locator("#notices")).to_have_text(
        f"{tid} accepted. Warning: {tid} was verified on the commit merged onto main at {tip0[:12]}, and main "
        f"is at {tip1[:12]} now: its verdict is stale."
    )
    assert site.status(tid) == "done"
