"""The verifiers tab: the switch refused with what is missing and then allowed, a key shown
once and never again, revoking, and the config editor with the server's errors inline."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, expect

from tests.browser.support import Guard, Site, sign_in


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def keys_of(site: Site, project: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = site.ok("GET", "/api/keys")["items"]
    return [k for k in items if k["kind"] == "verifier" and project in k["projects"]]


def test_the_switch_is_refused_with_what_is_missing_then_allowed(
    page: Page, guard: Guard, site: Site, project: str
) -> None:
    sign_in(page, site, f"?project={project}&view=verifiers")
    panel = page.locator("section", has=page.get_by_role("heading", name="Verification", exact=True))
    expect(panel.locator("ul.missing li")).to_have_text(
        [
            "a live local verifier key that covers this project",
            "a saved verifier config with at least one check",
        ]
    )
    guard.expect(422)
    panel.get_by_role("button", name="Turn verification on").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_role("button", name="Turn on").click()
    alert = dialog.get_by_role("alert")
    expect(alert.locator(".code")).to_have_text("E_VALIDATION")
    expect(alert.locator("ul.missing li")).to_have_text(
        [
            "a live local verifier key that covers this project",
            "a saved verifier config with at least one check",
        ]
    )
    dialog.get_by_role("button", name="Back").click()
    assert site.ok("GET", f"/api/projects/{project}/verification")["on"] is False

    page.get_by_label("Name", exact=True).fill("ci")
    page.get_by_label("Kind", exact=True).select_option("local")
    page.get_by_role("button", name="Register key").click()
    expect(page.locator(".secret-once")).to_be_visible()
    page.get_by_role("button", name="Done: I have stored it").click()
    expect(panel.locator("ul.missing li")).to_have_text(["a saved verifier config with at least one check"])

    page.get_by_label("Verifier config (JSON)").fill('{"checks": {"unit": {"command": "pytest -q"}}}')
    page.get_by_role("button", name="Save config").click()
    expect(page.get_by_role("status").filter(has_text="saved")).to_be_visible()
    expect(panel.locator("ul.missing")).to_have_count(0)

    panel.get_by_role("button", name="Turn verification on").click()
    page.get_by_role("dialog").get_by_role("button", name="Turn on").click()
    expect(panel).to_contain_text("Verification is on")
    assert site.ok("GET", f"/api/projects/{project}/verification")["on"] is True
    events = [e["action"] for e in site.ok("GET", f"/api/projects/{project}/history")["items"]]
    assert events[:3] == ["verification_on", "verifier_config_changed", "key_created"]


def test_a_new_key_is_shown_once_copied_and_never_again(page: Page, site: Site, project: str) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.url)
    sign_in(page, site, f"?project={project}&view=verifiers")
    page.get_by_label("Name", exact=True).fill("reviewer-1")
    page.get_by_label("Kind", exact=True).select_option("reviewer")
    page.get_by_role("button", name="Register key").click()
    once = page.locator(".secret-once")
    expect(once).to_contain_text("It will not be shown again")
    secret = page.get_by_label("Secret of the new key").input_value()
    assert secret.startswith("tgv_")
    [key] = keys_of(site, project)
    assert (key["name"], key["verifier_kind"], key["live"]) == ("reviewer-1", "reviewer", True)
    assert secret not in str(site.ok("GET", "/api/keys"))  # only the hash is kept
    # The key works, as a reviewer (the verifier work queue is for local keys only).
    assert site.rest("GET", f"/api/verifier/work?project={project}", token=secret).status_code == 403
    assert site.rest("GET", "/api/projects", token=secret).status_code == 403

    once.get_by_role("button", name="Copy").click()
    expect(once).to_contain_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    once.get_by_role("button", name="Done: I have stored it").click()
    expect(once).to_have_count(0)
    assert secret not in page.content()
    page.reload()
    expect(page.get_by_role("heading", name="Verifier keys")).to_be_visible()
    expect(page.get_by_role("button", name="Revoke reviewer-1")).to_be_visible()
    assert secret not in page.content()
    assert secret not in page.evaluate("JSON.stringify(sessionStorage) + document.cookie")


def test_revoking_the_last_local_key_while_on_warns(page: Page, site: Site, project: str) -> None:
    site.verifier_key(project)
    site.ok("PUT", f"/api/projects/{project}/verifier-config", {"checks": {"unit": {"command": "pytest"}}})
    site.ok("PUT", f"/api/projects/{project}/verification", {"on": True})
    sign_in(page, site, f"?project={project}&view=verifiers")
    page.get_by_role("button", name="Revoke ci-local").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("status").filter(has_text="Warning:")).to_contain_text(
        "no live local verifier key"
    )
    [key] = keys_of(site, project)
    assert key["live"] is False
    panel = page.locator("section", has=page.get_by_role("heading", name="Verification", exact=True))
    expect(panel.locator("ul.missing li")).to_have_text(
        ["a live local verifier key that covers this project"]
    )


def test_the_config_editor_shows_errors_in_place_and_saves(
    page: Page, guard: Guard, site: Site, project: str
) -> None:
    sign_in(page, site, f"?project={project}&view=verifiers")
    editor = page.get_by_label("Verifier config (JSON)")
    errors = page.locator("#vc-errors")
    editor.fill('{"checks": {')
    page.get_by_role("button", name="Save config").click()
    expect(errors.get_by_role("alert")).to_contain_text("Not valid JSON")
    expect(editor).to_have_attribute("aria-invalid", "true")

    guard.expect(422)
    editor.fill(
        '{"check_timeout_minutes": 0, "checks": {"unit": {"command": "", "report": {"path": "../x"}}}}'
    )
    page.get_by_role("button", name="Save config").click()
    items = errors.locator("ul.field-errors li")
    expect(items.filter(has_text="body.check_timeout_minutes")).to_have_count(1)
    expect(items.filter(has_text="body.checks.unit.command")).to_have_count(1)
    expect(items.filter(has_text="body.checks.unit.report.path")).to_contain_text("inside the checkout")
    assert site.ok("GET", f"/api/projects/{project}/verifier-config")["config"] is None

    editor.fill('{"checks": {"unit": {"command": "pytest -q", "timeout_minutes": 20}}}')
    page.get_by_role("button", name="Save config").click()
    expect(errors).to_be_empty()
    expect(editor).not_to_have_attribute("aria-invalid", "true")
    saved = site.ok("GET", f"/api/projects/{project}/verifier-config")["config"]
    assert (
        saved["checks"]["unit"]["command"] == "pytest -q" and saved["checks"]["unit"]["timeout_minutes"] == 20
    )


def test_start_from_project_commands_fills_the_editor_and_saves_nothing(
    page: Page, site: Site, project: str
) -> None:
    site.ok(
        "PUT",
        f"/api/projects/{project}/execution-defaults",
        {"verification_commands": ["pytest --junitxml=reports/junit.xml", "ruff check ."]},
    )
    sign_in(page, site, f"?project={project}&view=verifiers")
    page.get_by_role("button", name="Start from project commands").click()
    editor = page.get_by_label("Verifier config (JSON)")
    expect(editor).to_be_focused()
    draft = json.loads(editor.input_value())
    assert draft == _without_nulls(site.ok("GET", f"/api/projects/{project}/verifier-config/draft")["config"])
    commands = [c["command"] for c in draft["checks"].values()]
    assert commands == ["pytest --junitxml=reports/junit.xml", "ruff check ."]
    notes = page.locator("form.config-form ul.notes li")
    expect(notes.first).to_contain_text("Review every command before saving")
    assert site.ok("GET", f"/api/projects/{project}/verifier-config")["config"] is None  # not saved
    page.get_by_role("button", name="Save config").click()
    expect(page.get_by_role("status").filter(has_text="saved")).to_be_visible()
    saved = site.ok("GET", f"/api/projects/{project}/verifier-config")["config"]
    assert [c["command"] for c in saved["checks"].values()] == commands
