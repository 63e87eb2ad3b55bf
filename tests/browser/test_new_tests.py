"""The drawer shows a criterion whose new named test passes without the change: the mark under
its evidence, the hold's reason, and the answers a person has (reopen, or allow the tests)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.support import Site, sign_in, submit


def test_a_held_new_test_is_marked_and_offers_reopen_and_allow(page: Page, site: Site) -> None:
    project = site.project("new-tests", verification=True)
    ada = site.agent_key(f"ada-{project}")
    tid = site.rest_task(
        project, "Typed slugs", criteria=[{"text": "typed", "kind": "test", "verify_ref": "t.test_typd"}]
    )
    own = f"AC-{tid}.1"
    submit(site, ada, project, tid)
    evidence = {
        "result": "pass",
        "detail": "1 test passed: t.test_typd",
        "source": {"check": "unit", "report": "reports/junit.xml", "ref": "t.test_typd"},
        "without_change": {"result": "pass", "detail": "1 test passed", "files": ["t.py"]},
    }
    site.verify(project, tid, results={own: evidence})
    assert site.status(tid) == "needs_human"

    sign_in(page, site, f"?project={project}")
    page.locator(f'li.card[data-task="{tid}"] .card-title').click()
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("heading", level=2)).to_contain_text(tid)
    row = drawer.locator(f'tr.criterion[data-criterion="{own}"]')
    expect(row.locator(".without-change")).to_have_text(
        "Passes without the change: its new test passes on the baseline's code too."
    )
    expect(drawer).to_contain_text(f"{own} passes without the change: its new test `t.test_typd`")
    # said once, in its sentence, not again as a generic flag
    expect(row.locator('[data-flag="passes_without_change"]')).to_have_count(0)
    expect(drawer.get_by_role("button", name="Reopen…")).to_be_visible()
    expect(drawer.get_by_role("button", name="Allow the tests")).to_be_visible()
    expect(drawer.get_by_role("button", name="Allow the change")).to_have_count(0)
