"""Human edits by clicking, each checked through the API: a task (title, description,
priority, blockers, criteria), a note, decisions (log, supersede, search), specs (approve,
revise, download), agent keys; and the history and metrics views."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.scene import Scene
from tests.browser.support import Guard, Site, mcp, sign_in, submit


def test_a_task_is_edited_while_nobody_holds_it(page: Page, guard: Guard, site: Site, project: str) -> None:
    blocker = site.rest_task(project, "Pick the schema")
    tid = site.rest_task(project, "Add /healthz", priority=1)
    sign_in(page, site, f"?project={project}&task={tid}")
    page.locator("#drawer").get_by_role("button", name="Edit…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Title").fill("Add /healthz and /readyz")
    dialog.get_by_label("Description").fill("Both answer JSON.")
    dialog.get_by_label("Priority (0-1000, higher is taken first)").fill("40")
    dialog.get_by_label("Blocked by (task ids, comma-separated)").fill(blocker)
    dialog.get_by_role("button", name="Add criterion").click()
    rows = dialog.locator("li.criterion-row")
    expect(rows).to_have_count(2)
    rows.nth(1).get_by_label("Criterion").fill("readyz answers 503 while starting")
    rows.nth(1).get_by_label("Kind").select_option("test")
    rows.nth(1).get_by_label("Test or command (verify_ref)").fill("tests.test_ready")
    dialog.get_by_role("button", name="Save changes").click()
    expect(dialog).to_have_count(0)
    task = site.task(tid)["task"]
    assert (task["title"], task["description"], task["priority"], task["blocked_by"], task["status"]) == (
        "Add /healthz and /readyz",
        "Both answer JSON.",
        40,
        [blocker],
        "blocked",
    )
    assert [(c["text"], c["kind"], c["verify_ref"]) for c in task["criteria"]] == [
        ("it works", "review", None),
        ("readyz answers 503 while starting", "test", "tests.test_ready"),
    ]
    expect(page.locator(f'section[data-status="blocked"] li.card[data-task="{tid}"]')).to_be_visible()

    # An edit the server refuses (the last criterion removed) is shown in the dialog.
    before = site.task(tid)
    page.locator("#drawer").get_by_role("button", name="Edit…").click()
    for _ in range(2):
        dialog.get_by_role("button", name="Remove criterion").first.click()
    guard.expect(422)
    dialog.get_by_role("button", name="Save changes").click()
    expect(dialog.get_by_role("alert").locator(".code")).to_have_text("E_EMPTY_CRITERIA")
    expect(dialog.get_by_role("alert")).to_contain_text("at least one acceptance criterion")
    dialog.get_by_role("button", name="Back").click()
    assert site.task(tid) == before


def test_a_note_is_added(page: Page, site: Site, project: str) -> None:
    tid = site.rest_task(project, "Add /healthz")
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer = page.locator("#drawer")
    drawer.get_by_label("New note").fill("Spoke with ops: keep it under 50 ms.")
    drawer.get_by_role("button", name="Add note").click()
    expect(drawer.locator("ul.notes li")).to_contain_text("Spoke with ops: keep it under 50 ms.")
    expect(drawer.get_by_label("New note")).to_have_value("")
    notes = site.task(tid)["notes"]
    assert [(n["author"], n["body"]) for n in notes] == [
        ("human:alice", "Spoke with ops: keep it under 50 ms.")
    ]


def test_decisions_are_logged_superseded_and_searched(page: Page, site: Site, project: str) -> None:
    key = site.agent_key(f"arch-{project}", role="architect")
    mcp(site, key, ("log_decision", {"project": project, "title": "Health answers XML", "body": "legacy"}))
    sign_in(page, site, f"?project={project}&view=decisions")
    page.get_by_label("Title", exact=True).fill("Queue on SQS")
    page.get_by_label("Why, and what it means").fill("Managed, and we are on AWS.")
    page.get_by_role("button", name="Log decision").click()
    expect(page.locator("ol.decisions")).to_contain_text("DEC-2 Queue on SQS")

    page.get_by_role("button", name="Supersede DEC-1…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("New decision").fill("Health answers JSON")
    dialog.get_by_label("Why, and what it means").fill("XML clients are gone.")
    dialog.get_by_role("button", name="Log new decision").click()
    old = page.locator("ol.decisions li.superseded")
    expect(old).to_contain_text("DEC-1 Health answers XML")
    expect(old.locator(".superseded-badge")).to_have_text("superseded by DEC-3")
    expect(page.get_by_role("button", name="Supersede DEC-1…")).to_have_count(0)
    listed = site.ok("GET", f"/api/projects/{project}/decisions?include_superseded=true")["items"]
    assert [(d["id"], d["superseded_by"], d["created_by"]) for d in listed] == [
        ("DEC-1", "DEC-3", f"agent:arch-{project}"),
        ("DEC-2", None, "human:alice"),
        ("DEC-3", None, "human:alice"),
    ]

    page.get_by_label("Search decisions, specs and tasks").fill("health json")
    page.get_by_role("button", name="Search").click()
    hits = page.locator("ol.hits li")
    expect(hits.first).to_contain_text("DEC-3 Health answers JSON")
    expect(page.locator("ol.hits")).not_to_contain_text("DEC-1")


def test_specs_are_read_approved_revised_and_downloaded(page: Page, site: Site, project: str) -> None:
    key = site.agent_key(f"writer-{project}")
    spec = mcp(
        site,
        key,
        (
            "create_spec",
            {
                "project": project,
                "title": "Health endpoint",
                "body": "GET /healthz answers 200.",
                "risk": "high",
                "criteria": [{"text": "200 OK", "kind": "test", "verify_ref": "tests.test_health"}],
            },
        ),
    )[0]
    task = mcp(
        site, key, ("create_task", {"project": project, "title": "Implement it", "spec_id": spec["id"]})
    )[0]
    sign_in(page, site, f"?project={project}&view=specs")
    page.get_by_role("button", name=f"Open {spec['id']}").click()
    detail = page.locator(".spec-detail")
    expect(detail.get_by_role("heading", level=2)).to_have_text(f"{spec['id']}: Health endpoint")
    expect(detail).to_contain_text("GET /healthz answers 200.")
    expect(detail.locator(".spec-criteria")).to_contain_text("AC-1.1")

    detail.get_by_role("button", name="Approve").click()
    page.get_by_role("dialog").get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status").filter(has_text=f"moved {task['task']['id']}")).to_be_visible()
    assert site.ok("GET", f"/api/projects/{project}/specs/{spec['id']}")["approved_by"] == "human:alice"
    assert site.status(task["task"]["id"]) == "ready"

    with page.expect_download() as download:
        detail.get_by_role("button", name=f"Download {spec['id']}.md").click()
    assert download.value.suggested_filename == f"{spec['id']}.md"
    md = site.ok("GET", f"/api/projects/{project}/specs/{spec['id']}/markdown")["markdown"]
    assert Path(download.value.path()).read_text() == md

    detail.get_by_role("button", name="Revise…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Text").fill("GET /healthz answers 200 with JSON.")
    dialog.get_by_role("button", name="Save revision").click()
    expect(detail).to_contain_text("draft · revision 2")
    revised = site.ok("GET", f"/api/projects/{project}/specs/{spec['id']}")
    assert (revised["status"], revised["revision"], revised["body"]) == (
        "draft",
        2,
        "GET /healthz answers 200 with JSON.",
    )
    assert site.status(task["task"]["id"]) == "backlog"


def test_agent_keys_are_created_once_and_revoked(page: Page, site: Site, project: str) -> None:
    sign_in(page, site, f"?project={project}&view=keys")
    page.get_by_label("Agent name").fill(f"zed-{project}")
    page.get_by_label("Role").select_option("architect")
    page.get_by_label("May act for human:alice", exact=False).check()
    page.get_by_role("button", name="Create key").click()
    secret = page.get_by_label("Secret of the new key").input_value()
    assert secret.startswith("tga_")
    [key] = [k for k in site.ok("GET", "/api/keys")["items"] if k["name"] == f"zed-{project}"]
    assert (key["role"], key["projects"], key["delegations"]) == ("architect", [project], ["human:alice"])
    listed = mcp(site, secret, ("list_projects", {}))[0]
    assert [p["name"] for p in listed["projects"]] == [project]
    page.get_by_role("button", name="Done: I have stored it").click()
    assert secret not in page.content()

    page.get_by_role("button", name=f"Revoke zed-{project}").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("status").filter(has_text=f"Revoked {key['id']}")).to_be_visible()
    [key] = [k for k in site.ok("GET", "/api/keys")["items"] if k["name"] == f"zed-{project}"]
    assert key["live"] is False


def test_history_lists_who_changed_what(page: Page, site: Site, scene: Scene) -> None:
    sign_in(page, site, f"?project={scene.project}&view=history")
    rows = page.locator("table.history tbody tr")
    expect(rows.first).to_contain_text("human:alice")
    expect(rows.filter(has_text="verification on")).to_have_count(1)
    expect(rows.filter(has_text="verifier config changed")).to_contain_text(
        "pytest --junitxml=reports/junit.xml"
    )
    # Keys for every project that other tests minted are in this history too (newest first):
    # the project's own first event is its creation, further down.
    more = page.get_by_role("button", name="Load more")
    while more.is_visible():
        shown = rows.count()
        more.click()
        expect(rows).not_to_have_count(shown)
    expect(rows.filter(has_text="project created")).to_have_count(1)


def test_metrics_are_drawn_as_inline_svg(page: Page, site: Site, scene: Scene) -> None:
    sign_in(page, site, f"?project={scene.project}&view=metrics")
    throughput = page.get_by_role("img", name=re.compile(r"^Tasks done per day\. "))
    expect(throughput.locator("rect.bar")).to_have_count(14)
    first_pass = page.get_by_role("img", name=re.compile("First-pass verification rate"))
    expect(first_pass).to_have_attribute("aria-label", "First-pass verification rate: 67% (2 of 3)")
    expect(page.get_by_role("img", name=re.compile("^Cycle time"))).to_be_visible()
    expect(page.locator(".metrics")).to_contain_text(
        f"Tasks with self-report mismatches: {scene.ids['logging']}."
    )
    page.get_by_label("Window").select_option("7")
    expect(throughput.locator("rect.bar")).to_have_count(7)
    expect(page).to_have_url(re.compile(r"[?&]days=7"))


def test_a_submitted_task_shows_its_submission(page: Page, site: Site, project: str) -> None:
    tid = site.rest_task(project, "Add /healthz")
    submit(site, site.agent_key(f"sub-{project}"), project, tid, self_report={f"AC-{tid}.1": "pass"})
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer = page.locator("#drawer")
    drawer.get_by_text("Submitted 0123456789ab").click()
    expect(drawer.locator(".attempt pre")).to_have_text("tests pass")
    expect(drawer.locator("table.criteria-table td").nth(3)).to_have_text("pass")


def test_the_drawer_follows_the_pages_of_a_long_past(page: Page, site: Site, project: str) -> None:
    """GET /api/tasks/{id} pages history and notes; the drawer shows all of both."""
    tid = site.rest_task(project, "Long-lived")
    for i in range(55):
        site.ok("POST", f"/api/tasks/{tid}/notes", {"body": f"note {i}"})
    for i in range(52):
        site.ok("PATCH", f"/api/tasks/{tid}", {"priority": i + 1})
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer = page.locator("#drawer")
    notes = drawer.locator("ul.notes > li")
    expect(notes).to_have_count(55)
    expect(notes.first).to_contain_text("note 0")
    expect(notes.last).to_contain_text("note 54")
    events = drawer.locator("ol.timeline > li")
    expect(events).to_have_count(53)  # created, then 52 edits
    expect(events.last).to_contain_text("fields: priority")  # a list as text, not JSON
