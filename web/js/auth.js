// Signing in. The same files serve two shapes:
//  - local (`taskgate serve`, config.json absent or {"auth": "local"}): a board session token,
//    got by redeeming the one-time code of the link `taskgate serve` / `taskgate board` prints
//    (it sits in the URL fragment, which is never sent to a server; it is stripped from the
//    address bar before anything else runs), or for the admin token pasted by hand;
//  - cognito ({"auth": "cognito", ...} written by the stack): the hosted UI with the
//    authorization code flow and PKCE, refreshed before expiry, signed out at /logout.
// The session lives in sessionStorage: this tab only, gone when it closes.

import { authorizeUrl, challengeOf, logoutUrl, randomString, tokenRequest } from "./pkce.js";

const SESSION = "taskgate.session";
const PENDING = "taskgate.pkce";
const RETURN = "taskgate.return";
const REFRESH_MARGIN_S = 60;

function load(key) {
  try {
    return JSON.parse(sessionStorage.getItem(key) || "null");
  } catch {
    return null;
  }
}

function save(key, value) {
  if (value === null) sessionStorage.removeItem(key);
  else sessionStorage.setItem(key, JSON.stringify(value));
}

export async function loadConfig() {
  const res = await fetch("/config.json", { cache: "no-store", credentials: "omit" });
  if (res.status === 404) return { auth: "local", api_base: "" };
  if (!res.ok) throw new Error(`config.json: HTTP ${res.status}`);
  const cfg = await res.json();
  return { api_base: "", ...cfg };
}

export class LocalAuth {
  constructor() {
    this.kind = "local";
  }

  // Returns {ok: true} or {ok: false, error?: {code, message, hint}}.
  async start() {
    const m = location.hash.match(/^#sign-in=([A-Za-z0-9_-]{1,256})$/);
    if (location.hash) history.replaceState(history.state, "", location.pathname + location.search);
    if (m) {
      const res = await fetch("/local/sign-in", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code: m[1] }),
        cache: "no-store",
        credentials: "omit",
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) return { ok: false, error: body };
      save(SESSION, { token: body.token });
      return { ok: true };
    }
    return { ok: Boolean(this.token()) };
  }

  token() {
    const s = load(SESSION);
    return s ? s.token : null;
  }

  // The pasted admin token is exchanged for a board session, as a sign-in link's code is: the
  // server then knows what this tab does comes from the board. False when it was refused.
  async useToken(token) {
    const res = await fetch("/local/sign-in", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ admin_token: token.trim() }),
      cache: "no-store",
      credentials: "omit",
    });
    const body = await res.json().catch(() => ({}));
    if (!res.ok || !body.token) return false;
    save(SESSION, { token: body.token });
    return true;
  }

  async refresh() {
    return false;
  }

  signOut() {
    save(SESSION, null);
  }
}

export class CognitoAuth {
  constructor(cfg) {
    this.kind = "cognito";
    this.cfg = cfg;
    this.timer = null;
    this.redirectUri = `${location.origin}/`;
  }

  async start() {
    const params = new URLSearchParams(location.search);
    if (params.has("error")) {
      const error = { code: params.get("error"), message: params.get("error_description") || "" };
      this.restoreUrl();
      return { ok: false, error };
    }
    if (params.has("code") && params.has("state")) {
      const pending = load(PENDING);
      save(PENDING, null);
      const code = params.get("code");
      const stateOk = pending && pending.state === params.get("state");
      this.restoreUrl();
      if (!stateOk) return { ok: false, error: { code: "invalid_state", message: "sign-in response did not match" } };
      const ok = await this.grant({
        grant_type: "authorization_code",
        code,
        redirect_uri: this.redirectUri,
        code_verifier: pending.verifier,
      });
      return ok ? { ok: true } : { ok: false, error: this.lastError };
    }
    const s = load(SESSION);
    if (!s) return { ok: false };
    if (s.expires_at - Date.now() / 1000 > REFRESH_MARGIN_S) {
      this.schedule();
      return { ok: true };
    }
    return { ok: await this.refresh() };
  }

  restoreUrl() {
    const back = sessionStorage.getItem(RETURN) || "";
    sessionStorage.removeItem(RETURN);
    history.replaceState(null, "", `/${back}`);
  }

  async beginSignIn() {
    const verifier = randomString(32);
    const state = randomString(16);
    save(PENDING, { verifier, state });
    sessionStorage.setItem(RETURN, location.search);
    const challenge = await challengeOf(verifier);
    location.assign(authorizeUrl(this.cfg, { redirectUri: this.redirectUri, state, challenge }));
  }

  async grant(fields) {
    const req = tokenRequest(this.cfg, fields);
    let res;
    try {
      res = await fetch(req.url, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: req.body,
        cache: "no-store",
        credentials: "omit",
      });
    } catch (exc) {
      this.lastError = { code: "network", message: String(exc) };
      return false;
    }
    const body = await res.json().catch(() => ({}));
    if (!res.ok || !body.access_token) {
      this.lastError = { code: body.error || `HTTP_${res.status}`, message: body.error_description || "" };
      return false;
    }
    const old = load(SESSION) || {};
    save(SESSION, {
      access_token: body.access_token,
      id_token: body.id_token || old.id_token,
      refresh_token: body.refresh_token || old.refresh_token,
      expires_at: Math.floor(Date.now() / 1000) + Number(body.expires_in || 3600),
    });
    this.schedule();
    return true;
  }

  schedule() {
    clearTimeout(this.timer);
    const s = load(SESSION);
    if (!s || !s.refresh_token) return;
    const inS = Math.max(1, s.expires_at - Date.now() / 1000 - REFRESH_MARGIN_S);
    this.timer = setTimeout(() => this.refresh(), inS * 1000);
  }

  token() {
    const s = load(SESSION);
    return s ? s.access_token : null;
  }

  async refresh() {
    const s = load(SESSION);
    if (!s || !s.refresh_token) return false;
    const ok = await this.grant({ grant_type: "refresh_token", refresh_token: s.refresh_token });
    if (!ok) save(SESSION, null);
    return ok;
  }

  signOut() {
    clearTimeout(this.timer);
    save(SESSION, null);
    location.assign(logoutUrl(this.cfg, this.redirectUri));
  }
}
