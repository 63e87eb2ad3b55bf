"""The board under test: a real `taskgate serve`, seeded the way its users would (agents over
MCP with the SDK's Client, humans and verifiers over REST), and a real Chromium driven by
Playwright, watched for requests to any other origin and for console errors.

Chromium is Debian's (/usr/bin/chromium); Playwright never downloads a browser. A missing
Chromium fails the tests (it is installed by .ci/run), it never skips them.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, Request, expect

from tests.support.server import Server

CHROMIUM = "/usr/bin/chromium"
# Flags that work in this sandbox and keep Chromium from calling home (background networking,
# component updates, sync) while it runs headless.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHA = "0123456789abcdef0123456789abcdef01234567"
ADMIN = "alice"
CONFIG = {
    "checks": {
        "unit": {"command": "pytest --junitxml=reports/junit.xml", "report": {"path": "reports/junit.xml"}}
    }
}
T = TypeVar("T")
_LOAD_FAILED = re.compile(r"^Failed to load resource: the server responded with a status of (\d{3})")


# -- the server and its users ---------------------------------------------------------------


@dataclass
class Site:
    """One `taskgate serve`, and REST / MCP access to it as its users."""

    server: Server
    banner: list[str]
    _keys: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def token(self) -> str:
        return self.server.admin_token

    def rest(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> httpx2.Response:
        return httpx2.request(
            method,
            f"{self.url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {token or self.token}"},
            timeout=30,
        )

    def ok(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> Any:
        r = self.rest(method, path, body, token=token)
        assert r.status_code in (200, 201), (method, path, r.status_code, r.text)
        return r.json()

    def task(self, tid: str) -> dict[str, Any]:
        out: dict[str, Any] = self.ok("GET", f"/api/tasks/{tid}")
        return out

    def status(self, tid: str) -> str:
        return str(self.task(tid)["task"]["status"])

    def sign_in_link(self) -> str:
        r = httpx2.post(
            f"{self.url}/local/sign-in-link", headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )
        assert r.status_code == 201, r.text
        return str(r.json()["url"])

    def project(self, name: str, *, verification: bool = False) -> str:
        self.ok("POST", "/api/projects", {"name": name, "repo": f"/srv/{name}.git"})
        if verification:
            self.verifier_key(name)
            self.ok("PUT", f"/api/projects/{name}/verifier-config", CONFIG)
            self.ok("PUT", f"/api/projects/{name}/verification", {"on": True})
        return name

    def agent_key(self, name: str, *, delegate: bool = False, role: str = "executor") -> str:
        body = {
            "kind": "agent",
            "name": name,
            "role": role,
            "delegations": [f"human:{ADMIN}"] if delegate else [],
        }
        key: str = self.ok("POST", "/api/keys", body)["key"]
        return key

    def verifier_key(self, project: str, kind: str = "local") -> str:
        name = f"{project}/{kind}"
        if name not in self._keys:
            body = {"kind": "verifier", "name": f"ci-{kind}", "verifier_kind": kind, "projects": [project]}
            self._keys[name] = self.ok("POST", "/api/keys", body)["key"]
        return self._keys[name]

    def rest_task(self, project: str, title: str, **kw: Any) -> str:
        body = {"title": title, "criteria": [{"text": "it works"}], **kw}
        return str(self.ok("POST", f"/api/projects/{project}/tasks", body)["task"]["id"])

    # -- verifier endpoints --------------------------------------------------------------

    def verify(
        self,
        project: str,
        tid: str,
        *,
        results: dict[str, dict[str, Any]] | None = None,
        exit_code: int = 0,
        error: str | None = None,
        output: str = "",
    ) -> dict[str, Any]:
        key = self.verifier_key(project)
        work = self.ok("POST", "/api/verifier/runs", {"task_id": tid}, token=key)
        run = f"/api/verifier/runs/{tid}/{work['run_id']}"
        reviewed = [c["id"] for c in work["criteria"] if c["kind"] == "review"]
        checked = {c["id"]: c["verify_ref"] for c in work["criteria"] if c["kind"] != "review"}
        body: dict[str, Any] = {}
        if error is not None:
            body["error"] = error
        else:
            if reviewed:
                verdicts = {
                    c: {"result": "pass", "rationale": "the diff does what it says"} for c in reviewed
                }
                self.ok(
                    "POST",
                    f"{run}/review",
                    {"results": verdicts},
                    token=self.verifier_key(project, "reviewer"),
                )
            body["checks"] = {
                "unit": {
                    "exit_code": exit_code,
                    "output_tail": output,
                    "duration_ms": 4210,
                    "timed_out": False,
                }
            }
            # Evidence as the verifier reads it: from the configured check's report, for the
            # criterion's own verify_ref (the server trusts nothing else).
            body["results"] = results or {
                c: {
                    "result": "pass",
                    "detail": "1 passed",
                    "source": {"check": "unit", "report": "reports/junit.xml", "ref": ref},
                }
                for c, ref in checked.items()
            }
        out: dict[str, Any] = self.ok("POST", f"{run}/finish", body, token=key)
        return out


# -- agents over MCP -------------------------------------------------------------------------


@asynccontextmanager
async def _session(url: str, key: str) -> Any:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as c:
        yield c


async def _calls(url: str, key: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    async with _session(url, key) as c:
        for tool, args in calls:
            result = await c.call_tool(tool, args)
            assert not result.is_error, f"{tool}: {result.content}"
            assert result.structured_content is not None
            out.append(result.structured_content)
    return out


_LOOP = ThreadPoolExecutor(1, thread_name_prefix="mcp-agent")


def mcp(site: Site, key: str, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls made by one agent, in order, over one MCP session; each must succeed. They run
    on a thread of their own: Playwright's sync API owns an event loop on the test's thread."""
    return _LOOP.submit(asyncio.run, _calls(site.url, key, list(calls))).result(timeout=60)


def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on the agents' thread: code that runs its own event loop (an MCP session)
    cannot run on the test's thread, where Playwright's sync API keeps one."""
    return _LOOP.submit(fn, *args).result(timeout=60)


def claim(site: Site, key: str, project: str, tid: str) -> str:
    token: str = mcp(site, key, ("claim_task", {"project": project, "task_id": tid}))[0]["claim_token"]
    return token


async def _submit(url: str, key: str, project: str, tid: str, self_report: dict[str, str] | None) -> None:
    async with _session(url, key) as c:
        claimed = await c.call_tool("claim_task", {"project": project, "task_id": tid})
        assert not claimed.is_error and claimed.structured_content is not None, claimed.content
        args: dict[str, Any] = {
            "task_id": tid,
            "claim_token": claimed.structured_content["claim_token"],
            "commit_sha": SHA,
            "evidence": "tests pass",
        }
        if self_report:
            args["self_report"] = self_report
        done = await c.call_tool("submit_task", args)
        assert not done.is_error, done.content


def submit(
    site: Site, key: str, project: str, tid: str, *, self_report: dict[str, str] | None = None
) -> None:
    """An agent claims a task and submits it, over one MCP session."""
    _LOOP.submit(asyncio.run, _submit(site.url, key, project, tid, self_report)).result(timeout=60)


# -- the browser -----------------------------------------------------------------------------


class Guard:
    """Fails the test on a request to another origin, an uncaught error, or a console error.
    A refused API call is logged by Chromium as 'Failed to load resource: ... status of N': a
    test that provokes one says so with `expect(N)`, and the count must then match exactly."""

    def __init__(self, context: BrowserContext, origin: str) -> None:
        self.origin = origin
        self.foreign: list[str] = []
        self.errors: list[str] = []
        self.refused: Counter[int] = Counter()
        self.expected: Counter[int] = Counter()
        context.on("request", self._request)
        context.on("console", self._console)
        context.on("weberror", lambda e: self.errors.append(f"uncaught: {e.error}"))

    def _request(self, request: Request) -> None:
        url = request.url.removeprefix("blob:")
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            self.foreign.append(request.url)

    def _console(self, msg: ConsoleMessage) -> None:
        if msg.type != "error":
            return
        m = _LOAD_FAILED.match(msg.text)
        if m and msg.location.get("url", "").startswith(self.origin):
            self.refused[int(m.group(1))] += 1
        else:
            self.errors.append(f"{msg.text} at {msg.location}")

    def expect(self, status: int, times: int = 1) -> None:
        self.expected[status] += times

    def allow_origin(self, origin: str) -> list[str]:
        """Requests to `origin` a test routes itself (the Cognito test): kept apart, not failed."""
        seen = [u for u in self.foreign if u.startswith(origin)]
        self.foreign = [u for u in self.foreign if not u.startswith(origin)]
        return seen

    def check(self) -> None:
        assert not self.foreign, f"requests to another origin: {self.foreign}"
        assert not self.errors, f"console errors: {self.errors}"
        assert self.refused == self.expected, (
            f"refused responses {dict(self.refused)} but the test expected {dict(self.expected)}"
        )


def sign_in(page: Page, site: Site, query: str = "") -> None:
    """Open the board through a fresh one-time link, as a user clicking the banner's would."""
    link = site.sign_in_link()
    base, _, fragment = link.partition("#")
    page.goto(f"{base}{query}#{fragment}")
    expect(page.locator(".who strong")).to_have_text(f"human:{ADMIN}")


def until(page: Page, condition: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    """Poll `condition` (which may evaluate in the page) until true or the deadline passes.
    (Playwright's wait_for_function evaluates a string, which the board's CSP forbids.)"""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(50)


def no_unlabelled_controls(page: Page) -> list[str]:
    """Every button has its name as text, every form control a label."""
    out: list[str] = page.evaluate(
        """() => {
          const bad = [];
          for (const b of document.querySelectorAll('button')) {
            if (!b.textContent.trim()) bad.push('button without text: ' + b.outerHTML.slice(0, 120));
          }
          for (const c of document.querySelectorAll('input, select, textarea')) {
            if (c.type === 'hidden') continue;
            if (!(c.labels && c.labels.length) && !c.getAttribute('aria-label')) {
              bad.push('control without label: ' + c.outerHTML.slice(0, 120));
            }
          }
          return bad;
        }"""
    )
    return out


def dump_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]
