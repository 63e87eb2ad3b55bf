"""The board as a human sees it: columns and cards, filters kept in the URL, the task drawer,
live updates while an agent works over MCP, a narrow window, the keyboard."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from tests.browser.scene import Scene
from tests.browser.support import Site, claim, mcp, no_unlabelled_controls, sign_in

STATUSES = [
    "backlog",
    "blocked",
    "ready",
    "claimed",
    "needs_verification",
    "verified",
    "needs_human",
    "done",
    "cancelled",
]


def column(page: Page, status: str) -> Locator:
    return page.locator(f'section.column[data-status="{status}"]')


def card(page: Page, tid: str) -> Locator:
    return page.locator(f'li.card[data-task="{tid}"]')


def test_a_column_per_status_and_cards_that_say_what_matters(page: Page, site: Site, scene: Scene) -> None:
    sign_in(page, site, f"?project={scene.project}")
    where = {
        "backlog": "backlog",
        "migrate": "blocked",
        "logging": "ready",
        "ratelimit": "claimed",
        "docs": "needs_verification",
        "health": "verified",
        "database": "needs_human",
        "changelog": "done",
        "xml": "cancelled",
    }
    for status in STATUSES:
        expect(column(page, status).get_by_role("heading")).to_contain_text(status.replace("_", " "))
    for role, status in where.items():
        expect(column(page, status).locator(f'li.card[data-task="{scene.ids[role]}"]')).to_be_visible()

    held = card(page, scene.ids["ratelimit"])
    expect(held.locator(".card-id")).to_have_text(scene.ids["ratelimit"])
    expect(held.get_by_role("button")).to_have_text("Rate-limit the API")
    expect(held.locator(".badge")).to_have_text("high risk")
    expect(held).to_contain_text("priority 6")
    expect(held).to_contain_text("attempts 0/3")
    expect(held.locator(".claimant")).to_have_text(f"agent:bob-{scene.project}")
    lease = held.locator(".countdown")
    first = lease.inner_text()
    assert re.fullmatch(r"(29|30):\d\d", first), first
    expect(lease).not_to_have_text(first)  # the countdown ticks without a reload

    failed = card(page, scene.ids["logging"])
    expect(failed).to_contain_text("attempts 1/3")
    expect(failed.locator(".flag-mismatch")).to_have_text(
        f"self-report mismatch in attempt 1: AC-{scene.ids['logging']}.1"
    )
    expect(card(page, scene.ids["docs"]).locator(".flag-verifier-errors")).to_have_text(
        "1 verifier error in a row"
    )
    expect(card(page, scene.ids["health"]).locator(".flag")).to_have_count(0)
    expect(page.locator("li.card")).to_have_count(len(where))


def test_filters_live_in_the_url_and_survive_a_reload(page: Page, site: Site, scene: Scene) -> None:
    sign_in(page, site, f"?project={scene.project}")
    page.get_by_label("Risk", exact=True).select_option("medium")
    expect(page).to_have_url(re.compile(r"[?&]risk=medium"))
    medium = {scene.ids["logging"], scene.ids["database"], scene.ids["backlog"]}
    expect(page.locator("li.card")).to_have_count(len(medium))
    assert {c.get_attribute("data-task") for c in page.locator("li.card").all()} == medium
    page.get_by_label("Agent", exact=True).select_option(f"agent:bob-{scene.project}")
    page.get_by_label("Text", exact=True).fill("datab")
    expect(page.locator("li.card")).to_have_count(1)
    expect(page).to_have_url(re.compile(r"[?&]q=datab"))
    page.reload()
    expect(page.get_by_label("Risk", exact=True)).to_have_value("medium")
    expect(page.get_by_label("Agent", exact=True)).to_have_value(f"agent:bob-{scene.project}")
    expect(page.get_by_label("Text", exact=True)).to_have_value("datab")
    expect(page.locator("li.card")).to_have_count(1)
    expect(card(page, scene.ids["database"])).to_be_visible()

    page.get_by_label("Text", exact=True).fill("")
    page.get_by_label("Agent", exact=True).select_option("")
    page.get_by_label("Risk", exact=True).select_option("")
    page.get_by_label("Status", exact=True).select_option("needs_human")
    expect(page).to_have_url(re.compile(r"[?&]status=needs_human"))
    expect(column(page, "needs_human")).to_be_visible()
    for status in STATUSES:
        if status != "needs_human":
            expect(column(page, status)).to_be_hidden()


def test_the_drawer_shows_criteria_evidence_attempts_runs_and_history(
    page: Page, site: Site, scene: Scene
) -> None:
    sign_in(page, site, f"?project={scene.project}")
    tid = scene.ids["logging"]
    card(page, tid).get_by_role("button", name="Add request logging").click()
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("heading", level=2)).to_have_text(f"{tid}: Add request logging")
    expect(page).to_have_url(re.compile(rf"[?&]task={tid}"))
    expect(drawer).to_contain_text("Log method, path, status and duration of every request.")

    crit = drawer.locator("table.criteria-table tbody tr.criterion")
    expect(crit).to_have_count(1)
    expect(crit.locator("th")).to_have_text(f"AC-{tid}.1")
    cells = crit.locator("td")
    expect(cells.nth(1)).to_have_text("fail")
    expect(cells.nth(2)).to_contain_text("test_duration failed: KeyError 'duration'")
    expect(cells.nth(2)).to_contain_text("unit · reports/junit.xml · tests.test_log")
    expect(cells.nth(3)).to_have_text("pass")  # what the agent said

    expect(drawer.locator(".attempt")).to_contain_text(f"Attempt 1 by agent:ada-{scene.project}")
    expect(drawer.locator(".attempt .flag-mismatch")).to_have_text(
        f"self-report mismatch in attempt 1: AC-{tid}.1"
    )
    check = drawer.locator("table.checks tbody tr.check")
    expect(check.locator("th")).to_have_text("unit")
    expect(check.locator("td").nth(0)).to_have_text("1")
    expect(check.locator("td").nth(1)).to_have_text("4s")
    output = drawer.locator("table.checks tbody tr.check-output")
    output.get_by_text("Show output").click()
    expect(output.locator("pre")).to_contain_text("FAILED tests/test_log.py::test_duration")
    timeline = drawer.locator("ol.timeline li")
    expect(timeline.first).to_contain_text(f"agent:arch-{scene.project}")
    expect(timeline.first).to_contain_text("create ready")
    expect(drawer.locator("ol.timeline")).to_contain_text("verify fail (needs verification → ready)")

    # The spec's criteria, with the reviewer's rationale, on the verified task.
    page.reload()  # the open drawer is in the URL
    expect(drawer.get_by_role("heading", level=2)).to_have_text(f"{tid}: Add request logging")
    card(page, scene.ids["health"]).get_by_role("button").click()
    expect(drawer.get_by_role("heading", level=2)).to_have_text(f"{scene.ids['health']}: Implement /healthz")
    expect(drawer).to_contain_text("SPEC-1: Health endpoint")
    rows = drawer.locator("table.criteria-table tbody tr.criterion")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("AC-1.1")
    expect(rows.nth(0).locator("td").nth(1)).to_have_text("pass")
    expect(rows.nth(1)).to_contain_text("the diff does what it says")

    # Who acted on whose behalf.
    card(page, scene.ids["changelog"]).get_by_role("button").click()
    accepted = drawer.locator("ol.timeline li").last
    expect(accepted).to_contain_text(f"agent:deputy-{scene.project} for human:alice accept")
    drawer.get_by_role("button", name="Close").click()
    expect(drawer).to_be_hidden()
    expect(page).not_to_have_url(re.compile(r"[?&]task="))


def test_an_agents_claim_over_mcp_appears_without_a_reload(page: Page, site: Site, project: str) -> None:
    tid = site.rest_task(project, "Add /version")
    key = site.agent_key(f"eve-{project}")
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("heading", level=2)).to_have_text(f"{tid}: Add /version")
    expect(column(page, "ready").locator("li.card")).to_have_count(1)
    page.evaluate("window.__noReload = true")
    note = drawer.get_by_label("New note")
    note.fill("half-written thought")
    note.focus()

    claim(site, key, project, tid)

    expect(column(page, "claimed").locator(f'li.card[data-task="{tid}"]')).to_be_visible()
    expect(card(page, tid).locator(".claimant")).to_have_text(f"agent:eve-{project}")
    expect(drawer).to_contain_text(f"held by agent:eve-{project}")
    expect(column(page, "ready").locator("li.card")).to_have_count(0)
    assert page.evaluate("window.__noReload") is True
    expect(drawer.get_by_label("New note")).to_have_value("half-written thought")
    expect(drawer.get_by_label("New note")).to_be_focused()

    # And the agent's note reaches the open drawer too.
    mcp(site, key, ("add_note", {"task_id": tid, "body": "starting with the route"}))
    expect(drawer.locator("ul.notes")).to_contain_text("starting with the route")


def test_a_narrow_window_stacks_the_columns(page: Page, site: Site, scene: Scene) -> None:
    page.set_viewport_size({"width": 400, "height": 800})
    sign_in(page, site, f"?project={scene.project}")
    expect(page.locator("li.card")).to_have_count(9)
    boxes = [column(page, s).bounding_box() for s in STATUSES]
    assert all(b is not None for b in boxes)
    xs = {round(b["x"]) for b in boxes if b}
    ys = [b["y"] for b in boxes if b]
    assert len(xs) == 1 and ys == sorted(ys), (xs, ys)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    card(page, scene.ids["logging"]).get_by_role("button").click()
    expect(page.locator("#drawer").get_by_role("heading", level=2)).to_contain_text("Add request logging")
    drawer = page.locator("#drawer").bounding_box()
    assert drawer is not None and drawer["width"] > 340
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_keyboard_reaches_everything_and_every_control_is_labelled(
    page: Page, site: Site, scene: Scene
) -> None:
    sign_in(page, site, f"?project={scene.project}")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_label("Project")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Board", exact=True)).to_be_focused()
    card(page, scene.ids["database"]).get_by_role("button").focus()
    page.keyboard.press("Enter")
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("heading", level=2)).to_contain_text("Pick a database")
    expect(drawer).to_be_focused()
    page.keyboard.press("Tab")
    expect(drawer.get_by_role("button", name="Close")).to_be_focused()
    page.keyboard.press("Tab")
    expect(drawer.get_by_role("button", name="Requeue")).to_be_focused()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert site.status(scene.ids["database"]) == "needs_human"  # going back changed nothing

    assert no_unlabelled_controls(page) == []
    for view in ["Specs", "Verifiers", "Agent keys", "Decisions", "History", "Metrics"]:
        page.get_by_role("button", name=view, exact=True).click()
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        page.wait_for_load_state("networkidle")
        assert no_unlabelled_controls(page) == [], view


def test_opening_the_board_mounts_it_once(page: Page, site: Site, project: str) -> None:
    """Without a project in the URL the board picks one and records it: one board, one poller."""
    lists: list[str] = []
    page.on(
        "request", lambda r: lists.append(r.url) if re.search(r"/api/projects/[^/]+/tasks", r.url) else None
    )
    sign_in(page, site)
    expect(page).to_have_url(re.compile(r"[?&]project="))
    expect(page.locator(".board-count")).to_contain_text("tasks shown")
    page.wait_for_timeout(1000)  # less than one poll interval: only the first load may have happened
    assert len(lists) == 1, lists


def _fits(page: Page, width: int) -> None:
    """Every column inside the window, none cut off, and no sideways scrolling anywhere."""
    for status in STATUSES:
        box = column(page, status).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (status, box)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate(
        "(() => { const c = document.querySelector('.columns'); return c.scrollWidth <= c.clientWidth; })()"
    )


def test_nine_full_columns_fit_a_1280_px_window(page: Page, site: Site, scene: Scene, tmp_path: Path) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, site, f"?project={scene.project}")
    expect(page.locator("li.card")).to_have_count(9)
    _fits(page, 1280)
    done = column(page, "done")
    expect(done.locator(f'li.card[data-task="{scene.ids["changelog"]}"]')).to_be_in_viewport()
    widths = [b["width"] for b in (column(page, s).bounding_box() for s in STATUSES) if b]
    assert len(widths) == 9 and min(widths) >= 110, widths  # readable, not squeezed to nothing
    shot = tmp_path / "board-1280.png"
    page.screenshot(path=str(shot))
    assert shot.read_bytes()[16:24] == (1280).to_bytes(4, "big") + (900).to_bytes(4, "big")  # PNG IHDR size


def test_empty_columns_shrink_to_their_heading_and_the_rest_widen(
    page: Page, site: Site, project: str
) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    tid = site.rest_task(project, "Only one task")
    sign_in(page, site, f"?project={project}")
    expect(card(page, tid)).to_be_visible()
    ready = column(page, "ready")
    expect(ready).not_to_have_class(re.compile(r"\bempty\b"))
    for status in STATUSES:
        if status != "ready":
            expect(column(page, status)).to_have_class(re.compile(r"\bempty\b"))
            expect(column(page, status).get_by_role("heading")).to_contain_text(status.replace("_", " "))
    _fits(page, 1280)
    box = ready.bounding_box()
    narrow = [column(page, s).bounding_box() for s in STATUSES if s != "ready"]
    assert box is not None and all(b is not None and b["width"] < 60 for b in narrow), narrow
    assert box["width"] > 600, box  # the room the empty ones gave up
    # A status filter on an empty column shows it full width, not collapsed.
    page.get_by_label("Status", exact=True).select_option("done")
    expect(page).to_have_url(re.compile(r"[?&]status=done"))
    expect(column(page, "done")).to_be_visible()
    expect(column(page, "done")).not_to_have_class(re.compile(r"\bempty\b"))
