"""The watch every browser test runs under can fail: it sees a console error, an uncaught
error, a request to another origin, and a refused response no test asked for."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser
from playwright.sync_api import Error as PlaywrightError

from tests.browser.support import Guard, Site, sign_in


def test_the_guard_sees_what_it_must_fail_on(browser: Browser, site: Site) -> None:
    context = browser.new_context()
    guard = Guard(context, site.url)
    page = context.new_page()
    sign_in(page, site)
    guard.check()  # a clean sign-in passes
    page.evaluate("console.error('boom')")
    page.evaluate("setTimeout(() => { throw new Error('uncaught') }, 0)")
    page.evaluate("fetch('http://127.0.0.2:9/elsewhere').catch(() => null)")  # the CSP refuses it
    page.evaluate("fetch('/api/tasks/nope-1').catch(() => null)")
    page.wait_for_timeout(300)
    with pytest.raises(PlaywrightError):
        page.goto("http://127.0.0.2:9/away")  # a navigation is not the CSP's to refuse
    context.close()
    assert any("boom" in e for e in guard.errors), guard.errors
    assert any("uncaught" in e for e in guard.errors), guard.errors
    assert any("Content Security Policy" in e and "127.0.0.2" in e for e in guard.errors), guard.errors
    assert guard.foreign == ["http://127.0.0.2:9/away"]
    assert guard.refused == {401: 1}  # no token on that fetch
    with pytest.raises(AssertionError):
        guard.check()
