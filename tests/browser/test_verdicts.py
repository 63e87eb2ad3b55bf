"""Verdicts that tell the truth on the board: flags belong to their attempt, a task in
needs_human says why and offers what answers it, a failed run shows each failing test's own
message and the end of a failing check's output, and the drawer and cards have the room they
need at ordinary desktop widths."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.scene import (
    FAILING_FIRST_LINE,
    FAILING_MESSAGE,
    FAILING_SUMMARY,
    FAILING_TEST,
    Scene,
    long_failure,
)
from tests.browser.support import CONFIG, Site, sign_in, submit

WIDTHS = [1280, 1600]


def card(page: Page, tid: str) -> Locator:
    return page.locator(f'li.card[data-task="{tid}"]')


def open_drawer(page: Page, tid: str) -> Locator:
    card(page, tid).locator(".card-title").click()
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("heading", level=2)).to_contain_text(tid)
    return drawer


def attempt(drawer: Locator, n: int) -> Locator:
    return drawer.locator(f'li.attempt[data-attempt="{n}"]')


def test_flags_are_the_current_attempts_and_earlier_ones_stay_with_their_attempt(
    page: Page, site: Site
) -> None:
    project = site.project("flags-per-attempt", verification=True)
    ada = site.agent_key(f"ada-{project}")
    tid = site.rest_task(
        project,
        "Add /ping",
        criteria=[{"text": "ping answers", "kind": "test", "verify_ref": "tests.test_ping"}],
    )
    own = f"AC-{tid}.1"
    fail = {
        "result": "fail",
        "detail": "test_ping failed",
        "source": {"check": "unit", "ref": "tests.test_ping"},
    }
    submit(site, ada, project, tid, self_report={own: "pass"})
    site.verify(project, tid, exit_code=1, results={own: fail})  # attempt 1 claimed a pass: mismatch
    submit(site, ada, project, tid, self_report={own: "pass"})
    site.verify(project, tid)  # attempt 2 was honest and verified
    assert site.status(tid) == "verified"

    sign_in(page, site, f"?project={project}")
    expect(card(page, tid)).to_be_visible()
    expect(card(page, tid).locator(".flag")).to_have_count(0)  # nothing next to the Accept button
    drawer = open_drawer(page, tid)
    expect(drawer.get_by_role("button", name="Accept", exact=True)).to_be_visible()
    expect(drawer.locator(":scope > ul.flags")).to_have_count(0)
    first = attempt(drawer, 1)
    expect(first.locator(".flag-mismatch")).to_have_text(f"self-report mismatch in attempt 1: {own}")
    expect(first.locator(".attempt-state")).to_have_text("verification failed")
    second = attempt(drawer, 2)
    expect(second.locator(".flag")).to_have_count(0)
    expect(second.locator(".attempt-state")).to_have_text("submitted and verified, waiting for a human")


def test_a_submitted_attempt_says_what_it_waits_for(page: Page, site: Site, scene: Scene) -> None:
    """The scene's docs task was submitted, and its one verifier run was an error."""
    tid = scene.ids["docs"]
    sign_in(page, site, f"?project={scene.project}")
    expect(card(page, tid).locator(".flag-verifier-errors")).to_have_text("1 verifier error in a row")
    drawer = open_drawer(page, tid)
    first = attempt(drawer, 1)
    expect(first.locator(".attempt-state")).to_have_text("submitted, waiting for verification")
    expect(first).not_to_contain_text("in progress")


def test_without_verification_a_submitted_attempt_waits_for_a_human(
    page: Page, site: Site, project: str
) -> None:
    tid = site.rest_task(project, "Add /version")
    submit(site, site.agent_key(f"ada-{project}"), project, tid)
    sign_in(page, site, f"?project={project}&task={tid}")
    first = attempt(page.locator("#drawer"), 1)
    expect(first.locator(".attempt-state")).to_have_text("submitted, waiting for a human")


def _spec_error_task(site: Site, project: str) -> tuple[str, str]:
    spec = site.ok(
        "POST",
        f"/api/projects/{project}/specs",
        {
            "title": "Basic iteration",
            "risk": "low",
            "criteria": [{"text": "the basics pass", "kind": "test", "verify_ref": "tests.test_basic"}],
        },
    )
    site.ok("POST", f"/api/projects/{project}/specs/{spec['id']}/approve")
    tid = site.rest_task(project, "Iterate the basics", spec_id=spec["id"], criteria=None)
    ada = site.agent_key(f"ada-{project}")
    ac = spec["criteria"][0]["id"]
    submit(site, ada, project, tid, self_report={ac: "pass"})
    site.verify(
        project,
        tid,
        results={
            ac: {
                "result": "ambiguous",
                "detail": "`tests.test_basic` matches 71 tests: tests/test_basic.py::test_a, tests/test_basic.py::test_b",
                "source": {"check": "unit", "report": "reports/junit.xml", "ref": "tests.test_basic"},
            }
        },
    )
    return tid, str(spec["id"])


def test_needs_human_says_why_and_a_spec_error_offers_revise_spec_first(page: Page, site: Site) -> None:
    project = site.project("spec-error", verification=True)
    tid, spec_id = _spec_error_task(site, project)
    detail = site.task(tid)["task"]
    assert detail["status"] == "needs_human" and detail["needs_human"]["suggested"] == "revise_spec"

    sign_in(page, site, f"?project={project}&task={tid}")
    drawer = page.locator("#drawer")
    banner = drawer.get_by_role("note", name="Why it needs a human")
    expect(banner).to_contain_text(f"Needs a human: {detail['needs_human']['reason']}")
    expect(banner).to_contain_text("matches 71 tests")
    actions = drawer.get_by_role("group", name="Actions").get_by_role("button")
    expect(actions.first).to_have_text("Revise spec")
    expect(actions.first).to_have_class(re.compile(r"\bprimary\b"))
    expect(drawer.get_by_role("button", name="Requeue")).not_to_have_class(re.compile(r"\bprimary\b"))
    # The spec error is the spec's, not the agent's: no mismatch flag for the agent's "pass".
    expect(drawer.locator(".flag-mismatch")).to_have_count(0)
    row = drawer.locator("table.criteria-table tr.criterion")
    expect(row.locator("td").nth(1)).to_have_text("ambiguous")
    expect(row.locator("td.criterion-detail")).to_contain_text("matches 71 tests")

    actions.first.click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(f"Send {spec_id} back to draft?")
    dialog.get_by_role("button", name="Revise spec").click()
    expect(drawer.locator(".status-pill")).to_have_text("backlog")
    expect(drawer.get_by_role("note", name="Why it needs a human")).to_have_count(0)
    assert site.ok("GET", f"/api/projects/{project}/specs/{spec_id}")["status"] == "draft"


def test_an_escalated_task_shows_its_question_and_suggests_nothing(
    page: Page, site: Site, scene: Scene
) -> None:
    tid = scene.ids["database"]
    sign_in(page, site, f"?project={scene.project}&task={tid}")
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("note", name="Why it needs a human")).to_contain_text(
        "Postgres or SQLite? The spec does not say."
    )
    expect(drawer.get_by_role("group", name="Actions").locator("button.primary")).to_have_count(0)


def test_a_failed_run_shows_each_failing_tests_message_and_the_end_of_the_output(
    page: Page, site: Site
) -> None:
    project = site.project("failing-output", verification=True)
    tid = long_failure(site, project, site.agent_key(f"ada-{project}"))
    strict = f"AC-{tid}.2"
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer = page.locator("#drawer")

    # The criteria table: the failing criterion first, its failing test under it.
    rows = drawer.locator("table.criteria-table tbody tr.criterion")
    expect(rows).to_have_count(2)
    expect(rows.first.locator("th")).to_have_text(strict)
    failures = drawer.locator(f'table.criteria-table tr.criterion-failures[data-criterion="{strict}"]')
    expect(failures.locator(".test-name")).to_have_text(FAILING_TEST)
    expect(failures.locator("pre")).to_have_text(FAILING_MESSAGE)

    # The finding of attempt 1, as the next brief carries it: criteria first, then the check
    # with the end of its output (the summary and the last error), not its start.
    finding = attempt(drawer, 1).locator("li.finding")
    crit = finding.locator(f'.failed-criterion[data-criterion="{strict}"]')
    expect(crit).to_contain_text("fail")
    expect(crit.locator(".test-name")).to_have_text(FAILING_TEST)
    expect(crit.locator("pre")).to_have_text(FAILING_MESSAGE)
    check = finding.locator('.failed-check[data-check="unit"]')
    expect(check).to_contain_text("check unit exited 1")
    out = check.locator("pre.output-end")
    expect(out).to_be_visible()  # not hidden behind a click
    text = out.inner_text()
    assert text.rstrip().endswith(FAILING_SUMMARY), text[-200:]
    assert f"FAILED {FAILING_TEST}" in text
    assert FAILING_FIRST_LINE not in text  # the start of a long output is what gets cut
    order = finding.evaluate(
        "el => [...el.querySelectorAll('.failed-criterion, .failed-check')].map(e => e.className)"
    )
    assert [c.split()[0] for c in order] == ["failed-criterion", "failed-check"], order
    expect(attempt(drawer, 1).locator(".flag-mismatch")).to_have_text(
        f"self-report mismatch in attempt 1: {strict}"
    )


_LINES = """el => {
  const r = document.createRange();
  r.selectNodeContents(el);
  return new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size;
}"""


def _lines(loc: Locator) -> int:
    """How many lines an element's text takes: the distinct tops of its text's boxes."""
    return int(loc.evaluate(_LINES))


@pytest.mark.parametrize("width", WIDTHS)
def test_card_ids_stay_on_one_line_beside_the_checkbox(page: Page, site: Site, width: int) -> None:
    project = site.project(f"shop-{width}", verification=True)
    ada = site.agent_key(f"ada-{project}")
    tids = [site.rest_task(project, f"Task {n}") for n in range(3)]
    for tid in tids:
        submit(site, ada, project, tid)
        site.verify(project, tid)
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, site, f"?project={project}")
    for tid in tids:
        head = card(page, tid).locator(".card-head")
        expect(head.get_by_role("checkbox")).to_be_visible()
        cid = head.locator(".card-id")
        expect(cid).to_have_text(tid)
        assert _lines(cid) == 1, (tid, _lines(cid))
        assert cid.evaluate("el => el.scrollWidth <= el.clientWidth"), f"{tid} is cut"
        box, ident = head.get_by_role("checkbox").bounding_box(), cid.bounding_box()
        assert box is not None and ident is not None
        assert abs((box["y"] + box["height"] / 2) - (ident["y"] + ident["height"] / 2)) < 4  # beside it
    # With the drawer open the columns narrow: the ids still do not wrap.
    open_drawer(page, tids[0])
    for tid in tids:
        assert _lines(card(page, tid).locator(".card-id")) == 1, tid


@pytest.mark.parametrize("width", WIDTHS)
def test_the_drawers_criterion_and_output_columns_have_room(page: Page, site: Site, width: int) -> None:
    project = site.project(f"room-{width}", verification=True)
    tid = long_failure(site, project, site.agent_key(f"ada-{project}"))
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer = page.locator("#drawer")
    expect(drawer.locator("table.criteria-table")).to_be_visible()
    section = drawer.locator("section.drawer-section").first.bounding_box()
    assert section is not None
    for wrap in drawer.locator(".table-wrap").all():
        assert wrap.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), wrap.evaluate(
            "el => [el.clientWidth, ...[...el.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > el.getBoundingClientRect().right + 1).map(e => e.tagName + '.' + e.className + ':' + Math.round(e.getBoundingClientRect().width) + ':' + e.textContent.slice(0, 40))]"
        )
    # The criterion's text: one line at these widths, the id never broken.
    row = drawer.locator("table.criteria-table tr.criterion").first
    assert _lines(row.locator("th")) == 1
    text = row.locator("td.criterion-text")
    assert (text.bounding_box() or {"width": 0})["width"] >= 180
    # A failing test's message and a check's output use (nearly) the drawer's whole width.
    for pre in [
        drawer.locator("tr.criterion-failures pre").first,
        drawer.locator("pre.output-end").first,
    ]:
        b = pre.bounding_box()
        assert b is not None and b["width"] >= 0.85 * section["width"], (b, section)
    run_row = drawer.locator("table.checks tr.check-output").first
    run_row.get_by_text("Show output").click()
    b = run_row.locator("pre").bounding_box()
    assert b is not None and b["width"] >= 0.85 * section["width"], (b, section)


def test_history_shows_warnings_and_config_changes_as_text(page: Page, site: Site) -> None:
    project = site.project("readable-history")
    ref = "tests.test_dup.test_same"
    site.rest_task(project, "First", criteria=[{"text": "same test", "kind": "test", "verify_ref": ref}])
    second = site.ok(
        "POST",
        f"/api/projects/{project}/tasks",
        {"title": "Second", "criteria": [{"text": "same test", "kind": "test", "verify_ref": ref}]},
    )
    assert second["warnings"], second
    warning = second["warnings"][0]
    tid = second["task"]["id"]
    site.ok("PUT", f"/api/projects/{project}/verifier-config", CONFIG)
    changed = {
        "checks": {
            "unit": {
                "command": "pytest -q --junitxml=reports/junit.xml",
                "report": {"path": "reports/junit.xml"},
            }
        },
        "check_timeout_minutes": 45,
    }
    site.ok("PUT", f"/api/projects/{project}/verifier-config", changed)

    sign_in(page, site, f"?project={project}&task={tid}")
    created = page.locator("#drawer ol.timeline li").first
    expect(created.locator("ul.warnings li")).to_have_text(f"warning: {warning}")
    assert "[" not in created.inner_text() and "{" not in created.inner_text()

    page.get_by_role("button", name="History", exact=True).click()
    rows = page.locator("table.history tbody tr").filter(has_text="verifier config changed")
    expect(rows).to_have_count(2)
    latest = rows.first.get_by_role("list", name="Config changes")
    old_cmd, new_cmd = CONFIG["checks"]["unit"]["command"], changed["checks"]["unit"]["command"]
    expect(latest.locator("li.diff-del")).to_contain_text([f"checks.unit.command: {old_cmd}"])
    expect(latest.locator("li.diff-add").filter(has_text="checks.unit.command")).to_have_text(
        f"+new checks.unit.command: {new_cmd}"
    )
    expect(latest.locator("li.diff-add").filter(has_text="check_timeout_minutes")).to_have_text(
        "+new check_timeout_minutes: 45"
    )
    # Settings that did not change are not listed.
    expect(latest).not_to_contain_text("checks.unit.report.path")
    first = rows.nth(1).get_by_role("list", name="Config changes")
    expect(first.locator("li.diff-del")).to_have_count(0)
    expect(rows.nth(1)).not_to_contain_text("not loaded")  # it replaced nothing, and says so
    expect(first.locator("li.diff-add").filter(has_text="checks.unit.command")).to_have_text(
        f"+new checks.unit.command: {old_cmd}"
    )
    for cell in page.locator("table.history tbody td.detail").all():
        assert "{" not in cell.inner_text() and '["' not in cell.inner_text(), cell.inner_text()


def test_a_failed_run_lists_its_ambiguous_refs_as_spec_errors(page: Page, site: Site) -> None:
    project = site.project("mixed-spec-error", verification=True)
    tid = site.rest_task(
        project,
        "Two refs",
        criteria=[
            {"text": "basics", "kind": "test", "verify_ref": "tests.test_basic"},
            {"text": "extras", "kind": "test", "verify_ref": "tests.test_extra.test_one"},
        ],
    )
    basic, extra = f"AC-{tid}.1", f"AC-{tid}.2"
    submit(site, site.agent_key(f"ada-{project}"), project, tid)
    src = {"check": "unit", "report": "reports/junit.xml"}
    site.verify(
        project,
        tid,
        results={
            basic: {
                "result": "ambiguous",
                "detail": "`tests.test_basic` matches 71 tests",
                "source": {**src, "ref": "tests.test_basic"},
            },
            extra: {
                "result": "fail",
                "detail": "1 test failed",
                "source": {**src, "ref": "tests.test_extra.test_one"},
                "failures": [{"name": "tests/test_extra.py::test_one", "message": "assert 1 == 2"}],
            },
        },
    )
    assert site.status(tid) == "ready"  # a real failure too: a failed attempt, as before
    sign_in(page, site, f"?project={project}&task={tid}")
    finding = attempt(page.locator("#drawer"), 1).locator("li.finding")
    ambiguous = finding.locator(f'.failed-criterion[data-criterion="{basic}"]')
    expect(ambiguous).to_have_class(re.compile(r"\bspec-error\b"))
    expect(ambiguous.locator(".badge")).to_have_text("spec error")
    expect(ambiguous).to_contain_text("matches 71 tests")
    failed = finding.locator(f'.failed-criterion[data-criterion="{extra}"]')
    expect(failed.locator(".badge")).to_have_text("fail")
    expect(failed.locator("pre")).to_have_text("assert 1 == 2")
