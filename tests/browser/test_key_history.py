"""On the board: a key minted for every project shows in each project's
history, marked as such, and the history view can show the keys for every project alone."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.support import Guard, Site, sign_in


def test_a_key_for_every_project_is_in_the_projects_history(
    page: Page, guard: Guard, site: Site, project: str
) -> None:
    name = f"everywhere-{project}"
    minted = site.ok("POST", "/api/keys", {"kind": "verifier", "name": name, "verifier_kind": "local"})
    kid = minted["credential"]["id"]
    site.ok("POST", f"/api/keys/{kid}/revoke")

    sign_in(page, site, f"?project={project}&view=history")
    rows = page.locator("table.history tbody tr")
    created = rows.filter(has_text=f"name: {name}")
    expect(created).to_have_count(1)
    expect(created.get_by_role("rowheader")).to_have_text("key created every project")
    revoked = rows.filter(has_text=f"key: {kid}").filter(has_text="key revoked")
    expect(revoked).to_have_count(1)
    expect(revoked.locator(".badge")).to_have_text("every project")
    expect(rows.filter(has_text="project created")).to_have_count(1)

    page.get_by_label("Show").select_option("all")
    expect(page.get_by_role("heading", name="History of keys for every project")).to_be_visible()
    expect(page).to_have_url(re.compile(r"[?&]history=all"))
    expect(rows.filter(has_text=f"name: {name}")).to_have_count(1)
    expect(rows.filter(has_text="project created")).to_have_count(0)
    expect(rows.locator(".badge")).to_have_count(rows.count())  # every row is a key for every project

    page.reload()  # the choice lives in the URL
    expect(page.get_by_label("Show")).to_have_value("all")
    expect(rows.filter(has_text=f"name: {name}")).to_have_count(1)
