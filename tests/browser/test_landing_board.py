"""Landing on the board: a real `taskgate serve`, a real git repository with main checked out
(clean, so the verifier's push updates it in place), `taskgate verify` as a real subprocess and a
real Chromium. The accept dialog says where the work lands; accepted cards wait in the Landing
lane in queue order; a hotfix moves one to the head; once landed, the card and the drawer name
the commit on main."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.support import Site, off_loop, sign_in
from tests.mcp.live import Live
from tests.support.conf_project import CONF, CONF_TEST, on_branch, own_change
from tests.support.users import shared_tmp
from tests.verifier.support import Gate, Repo, git, pytest_config


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """The checks run as an unprivileged user when the suite runs as root."""
    yield from shared_tmp()


def card(page: Page, tid: str) -> Locator:
    return page.locator(f'li.card[data-task="{tid}"]')


def lane(page: Page, status: str) -> Locator:
    return page.locator(f'section.column[data-status="{status}"]')


def test_accepted_cards_wait_in_the_landing_lane_and_name_their_commit_once_landed(
    page: Page, site: Site, tmp_path: Path
) -> None:
    repo = Repo.create(
        tmp_path / "repo", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    live = Live(site.url, site.server.data_dir, site.server.proc)  # type: ignore[arg-type]
    gate = Gate.create(live, repo, {**pytest_config(), "land": True})
    fork = git(repo.path, "rev-parse", "HEAD")
    ids = []
    for name in ("north", "south"):
        files, criterion = own_change(name)
        tid = gate.task([criterion])
        off_loop(gate.submit, tid, on_branch(repo, name, fork, files))
        ids.append(tid)
    assert [x["verdict"] for x in gate.verify_json()] == ["passed", "passed"]
    first, second = ids

    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, site, f"?project={gate.project}")
    expect(lane(page, "landing")).to_be_visible()  # landing is on: the lane shows, empty
    card(page, first).locator(".card-title").click()
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("note", name="Where it lands")).to_contain_text("Branch")
    drawer.get_by_role("button", name="Accept", exact=True).click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(f"{first} joins the landing queue.")
    expect(dialog.locator(".lands-where")).to_have_text(
        f"taskgate lands it on main of {repo.path}: tested on top of the tasks ahead of it, the branch "
        "moves by fast-forward to exactly the commit it tested. It is done once it is there."
    )
    dialog.get_by_role("button", name="Accept", exact=True).click()
    expect(lane(page, "landing").locator(f'li.card[data-task="{first}"]')).to_be_visible()
    expect(card(page, first).locator(".card-landing")).to_have_text("#1 · waiting")
    site.ok("POST", f"/api/tasks/{second}/accept")
    expect(card(page, second).locator(".card-landing")).to_have_text("#2 · waiting")
    expect(lane(page, "landing").locator("li.card")).to_have_count(2)

    # a hotfix: the second goes to the head of the queue, from its drawer
    card(page, second).locator(".card-title").click()
    expect(drawer.get_by_role("note", name="Where it lands")).to_contain_text("2 of 2, waiting")
    drawer.get_by_role("button", name="Move to head").click()
    page.get_by_role("dialog").get_by_role("button", name="Move to head").click()
    expect(card(page, second).locator(".card-landing")).to_have_text("#1 · waiting")
    expect(lane(page, "landing").locator("li.card").first).to_have_attribute("data-task", second)
    assert git(repo.path, "rev-parse", "main") == fork  # nothing landed yet

    lines = [x for x in gate.verify_json() if "landing" in x]
    assert [x["landed"] for x in lines] == [[second, first]]
    tip = git(repo.path, "rev-parse", "main")
    assert tip != fork and git(repo.path, "status", "--porcelain") == ""  # updated in place, clean
    expect(lane(page, "done").locator("li.card")).to_have_count(2)
    expect(card(page, first).locator(".card-landed")).to_have_text(f"landed at {tip[:7]}")
    card(page, first).locator(".card-title").click()
    expect(drawer.locator('[data-key="landing-landed-commit"]')).to_have_text(tip)
    expect(drawer.locator('[data-key="landing-branch"]')).to_have_text("main")
    expect(drawer.locator(".status-pill")).to_have_text(re.compile("done"))
