"""Screenshots of the board for the README, taken from a real `taskgate serve` seeded with the
browser tests' scene: `.venv/bin/python -m tests.browser.screenshots [docs]`."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from tests.browser.scene import FAILING_SUMMARY, build, long_failure
from tests.browser.support import CHROMIUM, FLAGS, Guard, Site, sign_in
from tests.support.server import start


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = start(Path(tmp) / "data", extra=["--admin-name", "alice"])
        try:
            site = Site(server, [])
            scene = build(site, "shop")
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                context = browser.new_context(viewport={"width": 1720, "height": 640}, color_scheme="light")
                guard = Guard(context, site.url)
                page = context.new_page()
                sign_in(page, site, f"?project={scene.project}")
                expect(page.locator("li.card")).to_have_count(len(scene.ids))
                page.screenshot(path=out / "board.png")

                page.set_viewport_size({"width": 1720, "height": 1300})
                page.locator(f'li.card[data-task="{scene.ids["logging"]}"]').get_by_role("button").click()
                drawer = page.locator("#drawer")
                expect(drawer.locator("table.checks")).to_be_visible()
                drawer.get_by_text("Show output").click()
                page.screenshot(path=out / "drawer.png")

                page.set_viewport_size({"width": 1300, "height": 1200})
                page.get_by_role("button", name="Verifiers", exact=True).click()
                expect(page.get_by_label("Verifier config (JSON)")).not_to_be_empty()
                page.screenshot(path=out / "verifiers.png", full_page=True)

                page.set_viewport_size({"width": 1300, "height": 700})
                page.get_by_role("button", name="Metrics", exact=True).click()
                expect(
                    page.get_by_role("img", name="First-pass verification rate", exact=False)
                ).to_be_visible()
                page.screenshot(path=out / "metrics.png", full_page=True)

                # A failed run with a long output, in the drawer at 1,280 px: the failing test's
                # own message under its criterion, the end of the check's output in the finding.
                failing = long_failure(site, scene.project, scene.keys["ada"])
                page.set_viewport_size({"width": 1280, "height": 1400})
                page.get_by_role("button", name="Board", exact=True).click()
                page.locator(f'li.card[data-task="{failing}"]').locator(".card-title").click()
                expect(drawer.locator("pre.output-end")).to_contain_text(FAILING_SUMMARY)
                # From the criteria on: the drawer's head stays in view above them.
                drawer.evaluate(
                    "d => { d.scrollTop += d.querySelector('#ds-criteria').getBoundingClientRect().top"
                    " - d.getBoundingClientRect().top - 56; }"
                )
                page.screenshot(path=out / "drawer-failing.png")
                context.close()
                guard.check()
                browser.close()
        finally:
            server.stop()
    for name in ("board", "drawer", "verifiers", "metrics", "drawer-failing"):
        print(out / f"{name}.png")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs"))
