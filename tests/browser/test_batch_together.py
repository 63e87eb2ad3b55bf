"""The board's "Verify together, then accept": a human selects verified low-risk tasks, the
batch is queued (nothing accepted yet), and once the verifier's run passes the tasks are done,
accepted as that human at the board. Checked through the API."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.browser.support import Site, sign_in, submit


def verified(site: Site, project: str, title: str, ref: str) -> str:
    criteria = [{"text": f"{title} works", "kind": "test", "verify_ref": ref}]
    tid = site.rest_task(project, title, criteria=criteria)
    submit(site, site.agent_key(f"a-{tid}"), project, tid)
    site.verify(project, tid)
    assert site.status(tid) == "verified"
    return tid


def run_batch(site: Site, project: str, batch_id: str) -> dict[str, Any]:
    """The verifier's one run of the batch, passing, as `taskgate verify` would send it."""
    key = site.verifier_key(project)
    path = f"/api/verifier/projects/{project}/batches/{batch_id}/runs"
    work = site.ok("POST", path, token=key)
    results = {
        t["task_id"]: {c["id"]: {"result": "pass", "detail": "1 passed"} for c in t["criteria"]}
        for t in work["tasks"]
    }
    body = {"branch": "main", "tip": "a" * 40, "checks": {"unit": {"exit_code": 0}}, "results": results}
    out: dict[str, Any] = site.ok("POST", f"{path}/{work['run_id']}/finish", body, token=key)
    return out


def test_verify_together_then_accept_from_the_board(page: Page, site: Site) -> None:
    project = site.project("together", verification=True)
    ids = [verified(site, project, f"Part {i}", f"tests.test_part{i}") for i in range(2)]
    waiting = site.rest_task(project, "Not yet")
    sign_in(page, site, f"?project={project}")
    together = page.get_by_role("button", name="Verify together, then accept (0)")
    expect(together).to_be_visible()
    expect(together).to_be_disabled()
    for tid in ids:
        page.get_by_label(f"Select {tid} for batch accept").check()
    expect(page.locator(f'li.card[data-task="{waiting}"] input[type=checkbox]')).to_have_count(0)
    page.get_by_role("button", name="Verify together, then accept (2)").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator("ol li")).to_have_text(ids)
    dialog.get_by_role("button", name="Verify together").click()
    expect(dialog).to_have_count(0)
    expect(page.get_by_role("status").filter(has_text="Batch B1 queued")).to_be_visible()
    batch = site.ok("GET", f"/api/projects/{project}/batches/B1")
    assert [e["task_id"] for e in batch["entries"]] == ids and batch["status"] == "queued"
    assert batch["requested_by"]["via"] == "board"
    # nothing is accepted until the verifier has run them together
    assert [site.status(t) for t in ids] == ["verified", "verified"]
    done = run_batch(site, project, "B1")
    assert done["status"] == "done" and done["accepted"] == ids
    for tid in ids:
        history = site.rest("GET", f"/api/tasks/{tid}").json()["history"]
        accepted = next(e for e in history if e["action"] == "accept")
        assert accepted["actor"] == "human:alice" and accepted["detail"]["via"] == "board"
    expect(page.locator(f'section[data-status="done"] li.card[data-task="{ids[0]}"]')).to_be_visible()


def test_the_button_is_not_offered_without_verification(page: Page, site: Site) -> None:
    project = site.project("no-verifier")
    sign_in(page, site, f"?project={project}")
    expect(page.get_by_role("button", name="Accept selected (0)")).to_be_visible()
    expect(page.get_by_role("button", name="Verify together, then accept (0)")).to_have_count(0)
