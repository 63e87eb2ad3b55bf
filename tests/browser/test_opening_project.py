"""Without a project in the URL the board opens on the project last used in this browser, and
on a first visit on the newest one (the one a person setting up has just made), never merely
the first by name."""

from __future__ import annotations

import os

from playwright.sync_api import Browser, expect

from tests.browser.support import Guard, Site, sign_in


def test_the_board_opens_on_the_project_last_used(browser: Browser, site: Site) -> None:
    tag = os.getpid() % 10000
    older = site.project(f"aa-older-{tag}")  # first by name on this server
    newest = site.project(f"zz-newest-{tag}")
    context = browser.new_context()
    guard = Guard(context, site.url)
    page = context.new_page()
    sign_in(page, site)
    picker = page.locator("#project-picker")
    expect(picker).to_have_value(newest)  # a first visit: the newest project
    expect(page).to_have_url(f"{site.url}/?project={newest}")

    picker.select_option(older)
    expect(page).to_have_url(f"{site.url}/?project={older}")
    page.close()
    again = context.new_page()  # the same browser, later: a new sign-in link, no project in it
    sign_in(again, site)
    expect(again.locator("#project-picker")).to_have_value(older)
    context.close()
    guard.check()

    # Another browser has not used either: it opens on the newest.
    other = browser.new_context()
    fresh = other.new_page()
    sign_in(fresh, site)
    expect(fresh.locator("#project-picker")).to_have_value(newest)
    other.close()
