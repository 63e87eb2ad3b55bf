"""One Chromium and one `taskgate serve` per test process; a fresh browser context (its own
sessionStorage) and a guarded page per test. Each test works in a project of its own."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from tests.browser.scene import Scene, build
from tests.browser.support import CHROMIUM, FLAGS, Guard, Site
from tests.support.server import start

os.environ["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"  # never fetch a browser of its own
_names = itertools.count(1)


class _Chromium:
    """One Chromium per test process, started when a browser test needs it and stopped as soon
    as the next test is not a browser test: Playwright's sync API keeps its event loop marked
    running on this thread, which would break every later test that calls asyncio.run()."""

    def __init__(self) -> None:
        self._pw: Playwright | None = None
        self._browser: Browser | None = None

    def get(self) -> Browser:
        if self._browser is None:
            assert Path(CHROMIUM).is_file(), (
                f"{CHROMIUM} is missing: `apt-get install -y chromium` (.ci/run does)"
            )
            self._pw = sync_playwright().start()
            self._browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        return self._browser

    def stop(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._browser = None
        if self._pw is not None:
            self._pw.stop()
            self._pw = None


_CHROMIUM = _Chromium()
_HERE = Path(__file__).resolve().parent


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield  # the test's own fixtures (its browser context) are closed first
    if nextitem is None or _HERE not in Path(nextitem.path).resolve().parents:
        _CHROMIUM.stop()


@pytest.fixture
def browser() -> Browser:
    return _CHROMIUM.get()


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    server = start(tmp_path_factory.mktemp("board") / "data", extra=["--admin-name", "alice"])
    assert server.proc.stdout is not None
    banner = []
    while not banner or not banner[-1].startswith("  store:"):
        banner.append(server.proc.stdout.readline().rstrip("\n"))
    try:
        yield Site(server, banner)
    finally:
        server.stop()


@pytest.fixture
def guard_and_page(browser: Browser, site: Site) -> Iterator[tuple[Guard, Page]]:
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    context.set_default_timeout(10_000)
    guard = Guard(context, site.url)
    page = context.new_page()
    try:
        yield guard, page
    finally:
        context.close()
    guard.check()


@pytest.fixture
def page(guard_and_page: tuple[Guard, Page]) -> Page:
    return guard_and_page[1]


@pytest.fixture
def guard(guard_and_page: tuple[Guard, Page]) -> Guard:
    return guard_and_page[0]


@pytest.fixture
def project(site: Site) -> str:
    """A fresh project for this test."""
    return site.project(f"p{next(_names)}-{os.getpid() % 10000}")


@pytest.fixture(scope="session")
def scene(site: Site) -> Scene:
    """A project in every state the board shows (see scene.py); tests only read it."""
    return build(site, f"scene-{os.getpid() % 10000}")
