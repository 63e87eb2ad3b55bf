"""What a human does with submitted work, by clicking, each checked through the API: accept
one, batch accept low risk, reopen with findings, cancel, resolve needs_human, verify again;
and a refusal shown with the server's code and hint."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect

from tests.browser.support import Guard, Site, claim, mcp, sign_in, submit


def drawer(page: Page) -> Locator:
    return page.locator("#drawer")


def dialog(page: Page) -> Locator:
    return page.get_by_role("dialog")


def submitted(site: Site, project: str, title: str, **kw: object) -> str:
    tid = site.rest_task(project, title, **kw)
    submit(site, site.agent_key(f"a-{tid}"), project, tid)
    return tid


def escalated(site: Site, project: str, title: str) -> str:
    tid = site.rest_task(project, title)
    key = site.agent_key(f"a-{tid}")
    token = claim(site, key, project, tid)
    mcp(site, key, ("escalate", {"task_id": tid, "claim_token": token, "question": "which API?"}))
    return tid


def _accepted_via(site: Site, tid: str) -> dict[str, object]:
    """How the task's acceptance is recorded in its history (the event's via and batch)."""
    history = site.rest("GET", f"/api/tasks/{tid}").json()["history"]
    detail = next(e for e in history if e["action"] == "accept")["detail"]
    return {k: v for k, v in detail.items() if k in ("via", "batch")}


def test_a_medium_risk_task_is_accepted_on_its_own(page: Page, site: Site, project: str) -> None:
    tid = submitted(site, project, "Add /healthz", risk="medium")
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer(page).get_by_role("button", name="Accept").click()
    expect(dialog(page)).to_contain_text("medium risk: it is accepted on its own")
    dialog(page).get_by_role("button", name="Accept").click()
    expect(dialog(page)).to_have_count(0)
    expect(page.get_by_role("status").filter(has_text=f"{tid} accepted.")).to_be_visible()
    assert site.status(tid) == "done"
    assert _accepted_via(site, tid) == {"via": "board"}  # the board's session, so the board's
    expect(page.locator(f'section[data-status="done"] li.card[data-task="{tid}"]')).to_be_visible()


def test_low_risk_tasks_are_accepted_in_a_batch(page: Page, site: Site, project: str) -> None:
    low = [submitted(site, project, f"Low {i}") for i in range(2)]
    medium = submitted(site, project, "Medium", risk="medium")
    sign_in(page, site, f"?project={project}")
    expect(page.locator(f'li.card[data-task="{medium}"] input[type=checkbox]')).to_have_count(0)
    batch = page.get_by_role("button", name="Accept selected (0)")
    expect(batch).to_be_disabled()
    for tid in low:
        page.get_by_label(f"Select {tid} for batch accept").check()
    page.get_by_role("button", name="Accept selected (2)").click()
    expect(dialog(page)).to_contain_text(low[0])
    expect(dialog(page)).to_contain_text(low[1])
    dialog(page).get_by_role("button", name="Accept all selected").click()
    expect(page.get_by_role("status").filter(has_text=f"Accepted: {low[0]}, {low[1]}.")).to_be_visible()
    assert [site.status(t) for t in low] == ["done", "done"]
    assert [_accepted_via(site, t) for t in low] == [{"via": "board", "batch": True}] * 2
    assert site.status(medium) == "needs_verification"
    expect(page.get_by_role("button", name="Accept selected (0)")).to_be_disabled()


def test_reopen_needs_findings_and_hands_them_to_the_next_attempt(
    page: Page, site: Site, project: str
) -> None:
    tid = submitted(site, project, "Add /healthz")
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer(page).get_by_role("button", name="Reopen…").click()
    dialog(page).get_by_role("button", name="Reopen").click()  # empty findings: the form refuses
    expect(dialog(page).get_by_label("Findings (one per line)")).to_be_focused()
    assert site.status(tid) == "needs_verification"
    dialog(page).get_by_label("Findings (one per line)").fill("no test for the 503 case\nlog the probe")
    dialog(page).get_by_role("button", name="Reopen").click()
    expect(dialog(page)).to_have_count(0)
    task = site.task(tid)["task"]
    assert task["status"] == "ready" and task["attempts_used"] == 1
    assert (task["findings"][-1]["summary"], task["findings"][-1]["details"]) == (
        "no test for the 503 case",
        ["log the probe"],
    )
    expect(drawer(page).locator(".findings-list")).to_contain_text("no test for the 503 case")


def test_cancel_asks_first_and_records_the_reason(page: Page, site: Site, project: str) -> None:
    tid = site.rest_task(project, "Drop XML")
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer(page).get_by_role("button", name="Cancel task…").click()
    dialog(page).get_by_role("button", name="Back").click()
    expect(dialog(page)).to_have_count(0)
    assert site.status(tid) == "ready"
    drawer(page).get_by_role("button", name="Cancel task…").click()
    dialog(page).get_by_label("Reason (optional)").fill("no XML clients left")
    dialog(page).get_by_role("button", name="Cancel task").click()
    expect(dialog(page)).to_have_count(0)
    detail = site.task(tid)
    assert detail["task"]["status"] == "cancelled"
    assert detail["history"][-1]["detail"]["reason"] == "no XML clients left"
    assert detail["history"][-1]["actor"] == "human:alice"


def test_needs_human_is_requeued_or_blocked(page: Page, site: Site, project: str) -> None:
    first = escalated(site, project, "Pick a database")
    second = escalated(site, project, "Pick a queue")
    sign_in(page, site, f"?project={project}&task={first}")
    drawer(page).get_by_role("button", name="Requeue").click()
    dialog(page).get_by_label("Note (optional)").fill("Postgres")
    dialog(page).get_by_role("button", name="Requeue").click()
    expect(dialog(page)).to_have_count(0)
    detail = site.task(first)
    assert detail["task"]["status"] == "ready"
    assert detail["history"][-1]["detail"]["note"] == "Postgres"

    page.locator(f'li.card[data-task="{second}"]').get_by_role("button").click()
    drawer(page).get_by_role("button", name="Block…").click()
    dialog(page).get_by_label("Blocked by (task ids)").fill(first)
    dialog(page).get_by_role("button", name="Block").click()
    expect(dialog(page)).to_have_count(0)
    task = site.task(second)["task"]
    assert (task["status"], task["blocked_by"]) == ("blocked", [first])


def test_verify_again_after_three_verifier_errors(page: Page, site: Site, project: str) -> None:
    site.verifier_key(project)
    site.ok("PUT", f"/api/projects/{project}/verifier-config", {"checks": {"unit": {"command": "pytest"}}})
    site.ok("PUT", f"/api/projects/{project}/verification", {"on": True})
    tid = submitted(site, project, "Add /healthz")
    for _ in range(3):
        site.verify(project, tid, error="checkout failed")
    assert site.status(tid) == "needs_human"
    sign_in(page, site, f"?project={project}&task={tid}")
    expect(page.locator(f'li.card[data-task="{tid}"] .flag-verifier-errors')).to_have_text(
        "3 verifier errors in a row"
    )
    expect(drawer(page).get_by_role("note", name="Why it needs a human")).to_contain_text(
        "3 verifier errors in a row; the last: checkout failed"
    )
    again = drawer(page).get_by_role("button", name="Verify again")
    expect(again).to_have_class(re.compile(r"\bprimary\b"))  # what answers the reason
    again.click()
    dialog(page).get_by_role("button", name="Verify again").click()
    expect(dialog(page)).to_have_count(0)
    task = site.task(tid)["task"]
    assert (task["status"], task["verifier_errors_in_row"]) == ("needs_verification", 0)


def test_a_refusal_shows_the_servers_code_and_hint(
    page: Page, guard: Guard, site: Site, project: str
) -> None:
    """The human opens the edit dialog; an agent claims the task meanwhile; saving is refused,
    and the dialog says why, with the server's code, hint and the task's status now."""
    tid = site.rest_task(project, "Add /healthz")
    sign_in(page, site, f"?project={project}&task={tid}")
    drawer(page).get_by_role("button", name="Edit…").click()
    dialog(page).get_by_label("Title").fill("Add /healthz and /readyz")
    claim(site, site.agent_key(f"fast-{tid}"), project, tid)
    before = site.task(tid)
    guard.expect(409)
    dialog(page).get_by_role("button", name="Save changes").click()
    alert = dialog(page).get_by_role("alert")
    expect(alert.locator(".code")).to_have_text("E_WRONG_STATE")
    expect(alert).to_contain_text(
        f"{tid} is claimed; it can be edited only in backlog, ready, blocked or needs_human"
    )
    expect(alert.locator(".hint")).to_have_text("Reload, and act on the record's current status.")
    expect(alert).to_contain_text("Its status now: claimed")
    dialog(page).get_by_role("button", name="Back").click()
    expect(dialog(page)).to_have_count(0)
    assert site.task(tid) == before


def test_work_waiting_for_the_verifier_offers_no_accept(page: Page, site: Site, project: str) -> None:
    site.verifier_key(project)
    site.ok("PUT", f"/api/projects/{project}/verifier-config", {"checks": {"unit": {"command": "pytest"}}})
    site.ok("PUT", f"/api/projects/{project}/verification", {"on": True})
    tid = submitted(site, project, "Add /healthz")
    sign_in(page, site, f"?project={project}&task={tid}")
    expect(drawer(page)).to_contain_text("Waiting for the verifier")
    expect(drawer(page).get_by_role("button", name="Accept")).to_have_count(0)
    expect(drawer(page).get_by_role("button", name="Reopen…")).to_have_count(0)
    expect(page.get_by_label(f"Select {tid} for batch accept")).to_have_count(0)
