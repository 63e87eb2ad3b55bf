"""Signing in: locally with the one-time link of the banner or of `taskgate board` (or the
admin token pasted), signing out; in the cloud through Cognito's hosted UI with PKCE, checked
here against a local page whose Cognito endpoints the test answers itself."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Browser, Page, Route, expect

from tests.browser.support import Guard, Site, sign_in, until

SESSION = "JSON.parse(sessionStorage.getItem('taskgate.session') || 'null')"


def test_the_banner_link_signs_in_once_and_leaves_no_trace_in_the_url(
    browser: Browser, page: Page, site: Site
) -> None:
    [line] = [b for b in site.banner if b.strip().startswith("sign in:")]
    link = line.split()[-1]
    assert re.fullmatch(rf"{re.escape(site.url)}/#sign-in=[A-Za-z0-9_-]{{32}}", link), link
    assert site.token not in "\n".join(site.banner)  # the token itself is never printed

    page.goto(link)
    expect(page.locator(".who strong")).to_have_text("human:alice")
    assert "#" not in page.url and "sign-in" not in page.url
    # a board session the link's code was redeemed for, never the admin token itself
    held = page.evaluate(SESSION)
    assert set(held) == {"token"} and held["token"].startswith("tgb_") and held["token"] != site.token

    other = browser.new_context()
    guard = Guard(other, site.url)
    guard.expect(401)
    again = other.new_page()
    again.goto(link)
    alert = again.get_by_role("alert")
    expect(alert.locator(".code")).to_have_text("E_UNAUTHORIZED")
    expect(alert).to_contain_text("this sign-in link was used already")
    expect(alert.locator(".hint")).to_contain_text("taskgate board")
    assert again.evaluate(SESSION) is None
    other.close()
    guard.check()


def test_taskgate_board_prints_a_fresh_link(page: Page, site: Site) -> None:
    out = site.server.cli("board")
    assert out.returncode == 0, out.stderr
    url = out.stdout.splitlines()[0]
    assert url.startswith(f"{site.url}/#sign-in=")
    page.goto(url)
    expect(page.locator(".who strong")).to_have_text("human:alice")


def test_signing_out_ends_the_session_and_the_token_can_be_pasted(
    page: Page, guard: Guard, site: Site, project: str
) -> None:
    sign_in(page, site, f"?project={project}")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in to taskgate")).to_be_visible()
    assert page.evaluate(SESSION) is None
    page.reload()
    expect(page.get_by_role("heading", name="Sign in to taskgate")).to_be_visible()

    guard.expect(401)
    page.get_by_label("Admin token").fill("tgh_not-the-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("That token was not accepted.")
    assert page.evaluate(SESSION) is None
    page.get_by_label("Admin token").fill(site.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".who strong")).to_have_text("human:alice")
    # the pasted token was exchanged: the tab holds a board session, not the admin token
    held = page.evaluate(SESSION)["token"]
    assert held.startswith("tgb_") and held != site.token, held


def test_an_ended_session_goes_back_to_sign_in(page: Page, guard: Guard, site: Site, project: str) -> None:
    sign_in(page, site, f"?project={project}")
    page.evaluate("sessionStorage.setItem('taskgate.session', JSON.stringify({token: 'tgh_revoked'}))")
    guard.expect(401)
    page.reload()
    expect(page.get_by_role("alert")).to_contain_text("Your session has ended: sign in again.")
    assert page.evaluate(SESSION) is None


# -- Cognito: authorization code + PKCE ----------------------------------------------------

COGNITO = "https://taskgate-test.auth.eu-west-1.amazoncognito.com"
CLOUD_CONFIG = {
    "auth": "cognito",
    "api_base": "",
    "cognito_domain": COGNITO,
    "client_id": "client-123",
    "scopes": "openid email profile",
}


class FakeCloud:
    """What the test stands in for: the stack's config.json, CloudFront's policy (which lets the
    board reach the token endpoint), the Cognito hosted UI and token endpoint, and API Gateway
    behind its JWT authorizer. The board's own code, the thing under test, runs unchanged."""

    def __init__(self, page: Page, site: Site) -> None:
        self.site = site
        self.authorize: list[str] = []
        self.logout: list[str] = []
        self.grants: list[dict[str, list[str]]] = []
        self.api_auth: list[str] = []
        page.route(f"{site.url}/config.json", lambda r: r.fulfill(json=CLOUD_CONFIG))
        page.route(re.compile(rf"^{re.escape(site.url)}/(\?.*)?$"), self._document)
        page.route(f"{COGNITO}/**", self._cognito)
        page.route(f"{site.url}/api/**", self._api)

    def _document(self, route: Route) -> None:
        resp = route.fetch()
        csp = resp.headers["content-security-policy"]
        assert "connect-src 'self'" in csp
        headers = {
            **resp.headers,
            "content-security-policy": csp.replace("connect-src 'self'", f"connect-src 'self' {COGNITO}"),
        }
        route.fulfill(response=resp, headers=headers)

    def _cognito(self, route: Route) -> None:
        req = route.request
        path = urlsplit(req.url).path
        if path == "/oauth2/authorize":
            self.authorize.append(req.url)
            route.fulfill(content_type="text/html", body="<h1>Hosted UI</h1>")
        elif path == "/logout":
            self.logout.append(req.url)
            route.fulfill(content_type="text/html", body="<h1>Signed out</h1>")
        elif path == "/oauth2/token":
            assert req.method == "POST"
            assert req.headers["content-type"] == "application/x-www-form-urlencoded"
            self.grants.append(parse_qs(req.post_data or ""))
            n = len(self.grants)
            body: dict[str, Any] = {
                "access_token": f"at-{n}",
                "id_token": f"it-{n}",
                "expires_in": 61 if n == 1 else 3600,  # the first is renewed at once, the next not
                "token_type": "Bearer",
            }
            if n == 1:
                body["refresh_token"] = "rt-1"
            route.fulfill(json=body, headers={"access-control-allow-origin": self.site.url})
        else:
            raise AssertionError(f"unexpected Cognito request {req.url}")

    def _api(self, route: Route) -> None:
        self.api_auth.append(route.request.headers.get("authorization", ""))
        path = urlsplit(route.request.url).path
        answers: dict[str, Any] = {
            "/api/me": {"actor": "human:carol"},
            "/api/projects": {"items": [{"name": "cloudy", "max_attempts": 3, "verification_on": False}]},
            "/api/projects/cloudy": {"name": "cloudy", "max_attempts": 3, "verification_on": False},
            "/api/projects/cloudy/tasks": {"items": [], "cursor": None},
        }
        route.fulfill(json=answers[path])


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def test_cognito_sign_in_uses_pkce_refreshes_and_signs_out(page: Page, guard: Guard, site: Site) -> None:
    cloud = FakeCloud(page, site)
    page.goto(f"{site.url}/?view=board")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Hosted UI").wait_for()
    [authorize] = cloud.authorize
    params = {k: v[0] for k, v in parse_qs(urlsplit(authorize).query).items()}
    assert authorize.startswith(f"{COGNITO}/oauth2/authorize?")
    assert {
        k: params[k] for k in ("response_type", "client_id", "redirect_uri", "scope", "code_challenge_method")
    } == {
        "response_type": "code",
        "client_id": "client-123",
        "redirect_uri": f"{site.url}/",
        "scope": "openid email profile",
        "code_challenge_method": "S256",
    }
    assert len(params["state"]) >= 22 and re.fullmatch(r"[A-Za-z0-9_-]{43}", params["code_challenge"])

    # Cognito redirects back with a code: the board trades it, with the verifier, for tokens.
    page.goto(f"{site.url}/?code=the-code&state={params['state']}")
    expect(page.locator(".who strong")).to_have_text("human:carol")
    first = {k: v[0] for k, v in cloud.grants[0].items()}
    assert {k: first[k] for k in ("grant_type", "client_id", "code", "redirect_uri")} == {
        "grant_type": "authorization_code",
        "client_id": "client-123",
        "code": "the-code",
        "redirect_uri": f"{site.url}/",
    }
    assert _challenge(first["code_verifier"]) == params["code_challenge"]  # RFC 7636 S256
    assert re.fullmatch(r"[A-Za-z0-9_-]{43,128}", first["code_verifier"])
    assert "code=" not in page.url and "state=" not in page.url
    assert page.url == f"{site.url}/?view=board&project=cloudy"  # where the user started
    assert cloud.api_auth[:2] == ["Bearer at-1", "Bearer at-1"]  # /api/me, /api/projects

    # expires_in 61 s: renewed with the refresh token a minute before expiry, i.e. at once.
    until(page, lambda: page.evaluate(SESSION)["access_token"] == "at-2", "the refreshed token")
    refresh = {k: v[0] for k, v in cloud.grants[1].items()}
    assert refresh == {"grant_type": "refresh_token", "client_id": "client-123", "refresh_token": "rt-1"}
    assert page.evaluate(SESSION)["refresh_token"] == "rt-1"  # kept: Cognito sends no new one
    until(page, lambda: "Bearer at-2" in cloud.api_auth, "a poll with the new token")
    assert set(cloud.api_auth) == {"Bearer at-1", "Bearer at-2"}

    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("heading", name="Signed out").wait_for()
    [logout] = cloud.logout
    assert parse_qs(urlsplit(logout).query) == {"client_id": ["client-123"], "logout_uri": [f"{site.url}/"]}
    page.goto(f"{site.url}/")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert page.evaluate(SESSION) is None
    seen = guard.allow_origin(COGNITO)
    assert len(seen) == 4, seen  # authorize, two token grants, logout: nothing else left the origin


def test_a_forged_cognito_callback_is_refused(page: Page, guard: Guard, site: Site) -> None:
    cloud = FakeCloud(page, site)
    page.goto(f"{site.url}/")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Hosted UI").wait_for()
    page.goto(f"{site.url}/?code=stolen&state=forged")
    expect(page.get_by_role("alert").locator(".code")).to_have_text("invalid_state")
    assert cloud.grants == [] and cloud.api_auth == []
    assert "code=" not in page.url
    guard.allow_origin(COGNITO)


def test_the_pkce_challenge_matches_rfc_7636(page: Page, site: Site) -> None:
    sign_in(page, site)
    got = page.evaluate(
        """async () => {
          const p = await import('/js/pkce.js');
          const verifier = p.randomString(32);
          return {
            vector: await p.challengeOf('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'),
            verifier, challenge: await p.challengeOf(verifier),
          };
        }"""
    )
    assert got["vector"] == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"  # RFC 7636 appendix B
    assert got["challenge"] == _challenge(got["verifier"]) and len(got["verifier"]) == 43
