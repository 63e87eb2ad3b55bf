// The board's shell: configuration, sign-in, the project picker, the views, and notices.

import { ApiError, connect, get } from "./api.js";
import { CognitoAuth, LocalAuth, loadConfig } from "./auth.js";
import { h, replace } from "./dom.js";
import * as url from "./state.js";
import { clearNotices, mountNotices, refusal } from "./ui.js";
import { mountBoard } from "./views/board.js";
import { mountDecisions } from "./views/decisions.js";
import { mountHistory } from "./views/history.js";
import { mountKeys } from "./views/keys.js";
import { mountMetrics } from "./views/metrics.js";
import { mountSpecs } from "./views/specs.js";
import { mountVerifiers } from "./views/verifiers.js";

const VIEWS = [
  ["board", "Board", mountBoard],
  ["specs", "Specs", mountSpecs],
  ["verifiers", "Verifiers", mountVerifiers],
  ["keys", "Agent keys", mountKeys],
  ["decisions", "Decisions", mountDecisions],
  ["history", "History", mountHistory],
  ["metrics", "Metrics", mountMetrics],
];

const root = document.getElementById("app");
let auth = null;
let mounted = null; // {project, view, handle}
let signingIn = false;

const app = {
  project: "",
  projectRecord: null,
  me: null,
  projects: [],
  async reloadProject() {
    app.projectRecord = await get(`/api/projects/${encodeURIComponent(app.project)}`);
    return app.projectRecord;
  },
  online(ok) {
    const el = document.getElementById("offline");
    if (el) el.hidden = ok;
  },
  showBatchRefusals(refused) {
    const alerts = document.getElementById("alerts");
    replace(
      alerts,
      h(
        "div",
        { role: "alert", class: "refusal" },
        h("p", {}, h("strong", {}, `Refused ${refused.length}:`)),
        h(
          "ul",
          {},
          refused.map((r) => h("li", {}, h("strong", {}, r.task_id), " ", h("code", { class: "code" }, r.code), ` ${r.message}`, r.hint ? h("span", { class: "hint" }, ` ${r.hint}`) : null)),
        ),
      ),
      h("button", { type: "button", class: "secondary", onClick: () => replace(alerts) }, "Dismiss"),
    );
  },
};

function signInScreen(error) {
  signingIn = true;
  if (mounted) mounted.handle.unmount();
  mounted = null;
  const errorBox = error ? refusal(new ApiError(401, error)) : null;
  if (auth.kind === "cognito") {
    replace(
      root,
      h(
        "main",
        { class: "sign-in" },
        h("h1", {}, "Sign in to taskgate"),
        errorBox,
        h("button", { type: "button", class: "primary", onClick: () => auth.beginSignIn() }, "Sign in"),
      ),
    );
    return;
  }
  const token = h("input", { id: "admin-token", type: "password", autocomplete: "off", required: true });
  const problem = h("div", {});
  const form = h(
    "form",
    { class: "sign-in-form" },
    h("div", { class: "field" }, h("label", { for: token.id }, "Admin token"), token),
    h("button", { type: "submit", class: "primary" }, "Sign in"),
    problem,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!form.reportValidity()) return;
    const ok = (await auth.useToken(token.value)) && (await enter());
    if (!ok) {
      auth.signOut();
      replace(problem, h("p", { role: "alert", class: "refusal" }, "That token was not accepted."));
    }
  });
  replace(
    root,
    h(
      "main",
      { class: "sign-in" },
      h("h1", {}, "Sign in to taskgate"),
      errorBox,
      h("p", {}, "Open the one-time sign-in link that ", h("code", {}, "taskgate serve"), " printed, or run ", h("code", {}, "taskgate board"), " on this machine for a new one."),
      h("p", {}, "Or paste the admin token (the file ", h("code", {}, "admin-token"), " in the data directory):"),
      form,
    ),
  );
  token.focus();
}

function whoAmI() {
  return h(
    "div",
    { class: "who" },
    h("span", {}, "Signed in as ", h("strong", {}, app.me.actor)),
    h("button", { type: "button", class: "secondary", onClick: () => signOut() }, "Sign out"),
  );
}

function shell() {
  const picker = h(
    "select",
    { id: "project-picker" },
    app.projects.map((p) => h("option", { value: p.name, selected: p.name === app.project }, p.name)),
  );
  picker.addEventListener("change", () => url.set({ project: picker.value, task: null, spec: null }, { push: true }));
  const view = url.param("view") || "board";
  const nav = h(
    "nav",
    { "aria-label": "Views" },
    h(
      "ul",
      {},
      VIEWS.map(([key, name]) =>
        h("li", {}, h("button", { type: "button", class: "tab", "aria-current": key === view ? "page" : null, dataset: { view: key }, onClick: () => url.set({ view: key, task: null, spec: null }, { push: true }) }, name)),
      ),
    ),
  );
  const statusArea = h("div", { id: "notices", role: "status", "aria-live": "polite" });
  const alertArea = h("div", { id: "alerts" });
  replace(
    root,
    h("a", { href: "#view", class: "skip" }, "Skip to content"),
    h(
      "header",
      { class: "topbar" },
      h("span", { class: "brand" }, "taskgate"),
      h("div", { class: "field inline" }, h("label", { for: picker.id }, "Project"), picker),
      nav,
      whoAmI(),
    ),
    h("p", { id: "offline", role: "status", hidden: true }, "The server is not answering; retrying."),
    statusArea,
    alertArea,
    h("main", { id: "view", tabindex: "-1" }),
  );
  mountNotices(statusArea, alertArea);
}

function signOut() {
  if (mounted) mounted.handle.unmount();
  mounted = null;
  auth.signOut();
  if (auth.kind === "local") signInScreen(null);
}

// The project the board opens on without one in the URL: the one this browser showed last
// (localStorage: a preference of this browser, not a secret), else the newest (the one a person
// setting up has just made), never merely the first by name.
const LAST_PROJECT = "taskgate.project";

function openingProject(wanted, projects) {
  const known = (name) => name && projects.some((p) => p.name === name);
  if (known(wanted)) return wanted;
  let last = null;
  try {
    last = localStorage.getItem(LAST_PROJECT);
  } catch {
    last = null; // storage switched off: fall through to the newest
  }
  if (known(last)) return last;
  return projects.reduce((a, b) => (String(b.created_at) > String(a.created_at) ? b : a)).name;
}

function rememberProject(name) {
  try {
    localStorage.setItem(LAST_PROJECT, name);
  } catch {
    // storage switched off: the board still opens on the newest project
  }
}

async function mountView() {
  const project = url.param("project");
  if (project) rememberProject(project);
  const view = url.param("view") || "board";
  if (mounted && mounted.project === project && mounted.view === view) return;
  const entry = VIEWS.find(([key]) => key === view) || VIEWS[0];
  if (mounted && mounted.project !== project) {
    app.project = project;
    await app.reloadProject();
    shell();
  } else if (!mounted) {
    shell();
  } else {
    for (const b of document.querySelectorAll("nav .tab")) b.setAttribute("aria-current", b.dataset.view === entry[0] ? "page" : "false");
    for (const b of document.querySelectorAll("nav .tab[aria-current=false]")) b.removeAttribute("aria-current");
  }
  if (mounted) mounted.handle.unmount();
  clearNotices();
  const main = document.getElementById("view");
  document.title = `${entry[1]} · ${project} · taskgate`;
  mounted = { project, view, handle: entry[2](main, app) };
}

async function enter() {
  try {
    app.me = await get("/api/me");
    app.projects = (await get("/api/projects")).items;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return false;
    replace(root, h("main", { class: "sign-in" }, h("h1", {}, "taskgate"), refusal(err)));
    return true;
  }
  signingIn = false;
  if (!app.projects.length) {
    replace(
      root,
      h("header", { class: "topbar" }, h("span", { class: "brand" }, "taskgate"), whoAmI()),
      h(
        "main",
        { class: "sign-in" },
        h("h1", {}, "No projects yet"),
        h("p", {}, "Create one: ", h("code", {}, "taskgate project create NAME --repo PATH"), ", then reload."),
      ),
    );
    return true;
  }
  app.project = openingProject(url.param("project"), app.projects);
  url.set({ project: app.project }, { silent: true });
  await app.reloadProject();
  if (mounted) mounted.handle.unmount();
  mounted = null;
  await mountView();
  return true;
}

url.onChange(() => {
  if (!signingIn && app.me) mountView();
});

async function boot() {
  let cfg;
  try {
    cfg = await loadConfig();
  } catch (err) {
    replace(root, h("main", { class: "sign-in" }, h("h1", {}, "taskgate"), h("p", { role: "alert" }, String(err.message))));
    return;
  }
  auth = cfg.auth === "cognito" ? new CognitoAuth(cfg) : new LocalAuth();
  connect({
    base: cfg.api_base || "",
    token: () => auth.token(),
    refresh: () => auth.refresh(),
    signedOut: (err) => {
      if (signingIn) return;
      if (auth.kind === "local") auth.signOut();
      signInScreen({ code: err.code, message: "Your session has ended: sign in again.", hint: err.hint });
    },
  });
  const started = await auth.start();
  if (!started.ok) {
    signInScreen(started.error || null);
    return;
  }
  signingIn = true; // a stale session answers 401 once: say so on the sign-in screen, once
  if (!(await enter())) {
    if (auth.kind === "local") auth.signOut();
    signInScreen({ code: "E_UNAUTHORIZED", message: "Your session has ended: sign in again." });
  }
}

boot();
