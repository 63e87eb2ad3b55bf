"""The drawer's proof of verification: a verified run shows "signed" (its statement verifies with
the server's key), and the task's signed statements download as the bundle `taskgate attest
verify` checks."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

from taskgate.signing import bundle
from taskgate.signing.keys import PublicKey
from tests.browser.scene import Scene
from tests.browser.support import Site, sign_in


def test_a_verified_run_is_signed_and_its_statements_download(
    page: Page, site: Site, scene: Scene, tmp_path: Path
) -> None:
    tid = scene.ids["health"]
    sign_in(page, site, f"?project={scene.project}&task={tid}")
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("heading", level=2)).to_have_text(f"{tid}: Implement /healthz")
    passed = drawer.locator("li.run-passed")
    expect(passed.locator(".signed-badge")).to_have_text("signed")
    with page.expect_download() as info:
        drawer.get_by_role("button", name="Download signed statements (.intoto.jsonl)").click()
    download = info.value
    assert download.suggested_filename == f"{tid}.intoto.jsonl"
    path = tmp_path / download.suggested_filename
    download.save_as(path)
    key = PublicKey.from_pem(site.ok("GET", "/api/attestations/key")["pem"].encode())
    done = bundle.verify(path.read_text().splitlines(), key)
    last = done.statements[-1]
    assert last["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    assert last["predicate"]["result"] == "PASSED"
    assert json.dumps(last).count(tid) >= 1


def test_a_failed_run_is_signed_too(page: Page, site: Site, scene: Scene) -> None:
    tid = scene.ids["logging"]  # its run failed
    sign_in(page, site, f"?project={scene.project}&task={tid}")
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("heading", level=2)).to_have_text(f"{tid}: Add request logging")
    expect(drawer.locator("li.run-failed .signed-badge")).to_have_text("signed")
    expect(drawer.locator("li.run-passed")).to_have_count(0)
