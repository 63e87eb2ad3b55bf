// The verifiers tab: the verification switch (and what is missing to turn it on), verifier
// keys (register: shown once; revoke), and the verifier config as a JSON editor whose
// validation errors, the browser's or the server's, show next to it; and the protected paths
// (the config's `protect`) on a form of their own, saved alone.

import { enc, get, post, put } from "../api.js";
import { field, h, replace, when } from "../dom.js";
import { actionDialog, notify, refusal, secretOnce } from "../ui.js";

// The config as a person would write it: unset (null) fields left out.
function pruned(value) {
  if (Array.isArray(value)) return value.map(pruned);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null).map(([k, v]) => [k, pruned(v)]));
  }
  return value;
}

export function covers(key, project) {
  return !key.projects.length || key.projects.includes(project);
}

export function keyTable(keys, { onRevoke, columns }) {
  if (!keys.length) return h("p", { class: "muted" }, "No keys.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "list keys" },
      h("thead", {}, h("tr", {}, [...columns.map(([c]) => c), "Created", "State", ""].map((c) => h("th", { scope: "col" }, c)))),
      h(
        "tbody",
        {},
        keys.map((k) =>
          h(
            "tr",
            { class: k.live ? "" : "revoked" },
            columns.map(([, f], i) => (i === 0 ? h("th", { scope: "row" }, f(k)) : h("td", {}, f(k)))),
            h("td", {}, `${when(k.created_at)} by ${k.created_by}`),
            h("td", {}, k.live ? "live" : `revoked ${when(k.revoked_at)}`),
            h("td", {}, k.live ? h("button", { type: "button", class: "danger small", onClick: () => onRevoke(k) }, `Revoke ${k.name}`) : ""),
          ),
        ),
      ),
    ),
  );
}

export async function revokeKey(k) {
  return actionDialog({
    title: `Revoke ${k.name} (${k.id})?`,
    body: "It stops working at once, everywhere. This cannot be undone.",
    confirm: "Revoke",
    danger: true,
    run: () => post(`/api/keys/${enc(k.id)}/revoke`),
  });
}

export function mountVerifiers(root, app) {
  const p = () => app.project;
  const switchEl = h("section", { class: "panel", "aria-labelledby": "v-switch" });
  const keysEl = h("section", { class: "panel", "aria-labelledby": "v-keys" });
  const configEl = h("section", { class: "panel", "aria-labelledby": "v-config" });
  const protectEl = h("section", { class: "panel", "aria-labelledby": "v-protect" });
  const secretEl = h("div", {});
  replace(root, h("h1", {}, "Verifiers"), switchEl, keysEl, protectEl, configEl);

  async function renderSwitch() {
    let state;
    try {
      state = await get(`/api/projects/${enc(p())}/verification`);
    } catch (err) {
      replace(switchEl, h("h2", { id: "v-switch" }, "Verification"), refusal(err));
      return;
    }
    const errorBox = h("div", {});
    const btn = h("button", { type: "button", class: state.on ? "danger" : "primary" }, state.on ? "Turn verification off" : "Turn verification on");
    btn.addEventListener("click", async () => {
      replace(errorBox);
      const turningOn = !state.on;
      const out = await actionDialog({
        title: turningOn ? `Turn verification on for ${p()}?` : `Turn verification off for ${p()}?`,
        body: turningOn
          ? "Submitted work then waits for a verifier run before anyone can accept it."
          : "Work waiting for verification becomes acceptable directly; runs in progress on work that is accepted or reopened are superseded.",
        confirm: turningOn ? "Turn on" : "Turn off",
        danger: !turningOn,
        run: () => put(`/api/projects/${enc(p())}/verification`, { on: turningOn }),
      });
      if (out) {
        notify(`Verification is ${out.on ? "on" : "off"} for ${p()}.`);
        await app.reloadProject();
        renderSwitch();
      }
    });
    replace(
      switchEl,
      h("h2", { id: "v-switch" }, "Verification"),
      h("p", { class: "switch-state" }, "Verification is ", h("strong", {}, state.on ? "on" : "off"), ` for ${p()}.`),
      state.missing.length
        ? [h("p", {}, state.on ? "It is on, but the project lacks:" : "Before it can be turned on, the project needs:"), h("ul", { class: "missing" }, state.missing.map((m) => h("li", {}, m)))]
        : null,
      state.warnings.length ? h("ul", { class: "warnings" }, state.warnings.map((w) => h("li", {}, w))) : null,
      btn,
      errorBox,
    );
  }

  async function renderKeys() {
    const name = h("input", { id: "vk-name", type: "text", required: true, value: "verifier" });
    const kind = h("select", { id: "vk-kind" }, h("option", { value: "local" }, "local: runs the checks"), h("option", { value: "reviewer" }, "reviewer: judges review criteria"));
    const scope = h("select", { id: "vk-scope" }, h("option", { value: "project" }, `this project (${p()})`), h("option", { value: "all" }, "every project"));
    const error = h("div", {});
    const form = h(
      "form",
      { class: "inline-form" },
      h("h3", {}, "Register a verifier key"),
      field("Name", name),
      field("Kind", kind),
      field("Covers", scope),
      h("button", { type: "submit", class: "primary" }, "Register key"),
      error,
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (!form.reportValidity()) return;
      replace(error);
      try {
        const out = await post("/api/keys", {
          kind: "verifier",
          name: name.value.trim(),
          verifier_kind: kind.value,
          projects: scope.value === "all" ? [] : [p()],
        });
        secretOnce(secretEl, {
          title: `New ${out.credential.verifier_kind} verifier key ${out.credential.id}`,
          secret: out.key,
          onDone: () => renderKeys(),
        });
        notify(`Verifier key ${out.credential.id} registered.`);
        renderSwitch();
        renderKeysTable();
      } catch (err) {
        replace(error, refusal(err));
      }
    });
    const tableEl = h("div", {});
    async function renderKeysTable() {
      const fresh = (await get("/api/keys")).items.filter((k) => k.kind === "verifier" && covers(k, p()));
      replace(
        tableEl,
        keyTable(fresh, {
          columns: [
            ["Name", (k) => k.name],
            ["Id", (k) => k.id],
            ["Kind", (k) => k.verifier_kind],
            ["Projects", (k) => (k.projects.length ? k.projects.join(", ") : "every project")],
          ],
          onRevoke: async (k) => {
            const out = await revokeKey(k);
            if (out) {
              notify(`Revoked ${k.id}.${out.warnings.length ? ` Warning: ${out.warnings.join("; ")}` : ""}`);
              renderKeysTable();
              renderSwitch();
            }
          },
        }),
      );
    }
    replace(keysEl, h("h2", { id: "v-keys" }, "Verifier keys"), secretEl, tableEl, form);
    try {
      await renderKeysTable();
    } catch (err) {
      replace(tableEl, refusal(err));
    }
  }

  async function renderConfig() {
    let cfg;
    try {
      cfg = (await get(`/api/projects/${enc(p())}/verifier-config`)).config;
    } catch (err) {
      replace(configEl, h("h2", { id: "v-config" }, "Verifier config"), refusal(err));
      return;
    }
    const area = h("textarea", { id: "vc-json", rows: 16, spellcheck: "false", class: "code-editor", "aria-describedby": "vc-help" });
    area.value = cfg ? JSON.stringify(pruned(cfg), null, 2) : "";
    const errors = h("div", { id: "vc-errors" });
    const notes = h("div", {});
    const save = h("button", { type: "submit", class: "primary" }, "Save config");
    const draft = h("button", { type: "button" }, "Start from project commands");
    const form = h(
      "form",
      { class: "config-form" },
      h("div", { class: "field" }, h("label", { for: area.id }, "Verifier config (JSON)"), area),
      h(
        "p",
        { id: "vc-help", class: "field-hint" },
        'The only commands a verifier runs: {"check_timeout_minutes": 15, "checks": {"unit": {"command": "...", "report": {"path": "...", "format": "junit"}}}, "reviewer": {"command": "claude -p", "base_branch": "main"}, "base_branch": "main", "protect": ["**/conftest.py", "pytest.ini", "..."]}. protect: the paths a submission may not change without a human (absent: the default harness of pytest and the JavaScript runners; []: off).',
      ),
      errors,
      notes,
      h("div", { class: "actions" }, save, draft),
    );
    draft.addEventListener("click", async () => {
      replace(errors);
      try {
        const out = await get(`/api/projects/${enc(p())}/verifier-config/draft`);
        area.value = JSON.stringify(pruned(out.config), null, 2);
        replace(
          notes,
          h("p", {}, "A draft from the project's verification commands; it is not saved until you save it."),
          out.notes.length ? h("ul", { class: "notes" }, out.notes.map((n) => h("li", {}, n))) : null,
        );
        area.focus();
      } catch (err) {
        replace(errors, refusal(err));
      }
    });
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      replace(errors);
      let parsed;
      try {
        parsed = JSON.parse(area.value);
      } catch (exc) {
        area.setAttribute("aria-invalid", "true");
        replace(errors, h("div", { role: "alert", class: "refusal" }, h("p", {}, h("strong", {}, "Not valid JSON: "), exc.message)));
        return;
      }
      try {
        const out = await put(`/api/projects/${enc(p())}/verifier-config`, parsed);
        area.removeAttribute("aria-invalid");
        area.value = JSON.stringify(pruned(out.config), null, 2);
        replace(notes);
        notify(`Verifier config of ${p()} saved.`);
        renderSwitch();
        renderProtect();
      } catch (err) {
        area.setAttribute("aria-invalid", "true");
        replace(errors, refusal(err));
      }
    });
    replace(configEl, h("h2", { id: "v-config" }, "Verifier config"), form);
  }

  // protect: absent (null) applies the default harness, [] switches protection off, a list is
  // the project's own. Saved through its own route, which changes protect alone on the config as
  // stored, so the JSON editor's copy is never written back over it.
  async function renderProtect() {
    const title = h("h2", { id: "v-protect" }, "Protected paths");
    let out;
    try {
      out = await get(`/api/projects/${enc(p())}/verifier-config`);
    } catch (err) {
      replace(protectEl, title, refusal(err));
      return;
    }
    if (!out.config) {
      replace(protectEl, title, h("p", { class: "muted" }, "Save a verifier config with its checks first; the default protected paths then apply."));
      return;
    }
    const own = out.config.protect;
    const mode = own === null || own === undefined ? "default" : own.length ? "own" : "off";
    const said = { default: "the default (the test harness of pytest and the JavaScript runners)", own: "this project's own list", off: "off: a submission may change any path" };
    const radio = (value, text) => {
      const input = h("input", { type: "radio", name: "protect-mode", id: `protect-${value}`, value, checked: mode === value });
      return h("label", { class: "check", for: input.id }, input, ` ${text}`);
    };
    const choices = [radio("default", "The default"), radio("own", "Our own list"), radio("off", "Off")];
    const area = h("textarea", { id: "protect-globs", rows: 8, spellcheck: "false", class: "code-editor small", "aria-describedby": "protect-help" });
    area.value = (mode === "own" ? own : out.protect_default).join("\n");
    const sync = () => {
      area.disabled = protectEl.querySelector('input[name="protect-mode"]:checked').value !== "own";
    };
    const errors = h("div", { id: "protect-errors" });
    const form = h(
      "form",
      { class: "protect-form" },
      h("fieldset", {}, h("legend", {}, "Which paths a submission may not change without a human"), choices),
      h("div", { class: "field" }, h("label", { for: area.id }, "Our own globs, one per line"), area),
      h("p", { id: "protect-help", class: "field-hint" }, "Relative to the checkout: * and ? stay within a path segment, **/ is any number of directories, a trailing / names a directory and everything under it. The files a check runs by path are protected as well, unless protection is off."),
      errors,
      h("button", { type: "submit", class: "primary" }, "Save protected paths"),
    );
    form.addEventListener("change", sync);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      replace(errors);
      const chosen = form.querySelector('input[name="protect-mode"]:checked').value;
      const globs = area.value.split("\n").map((g) => g.trim()).filter(Boolean);
      const body = { protect: chosen === "default" ? null : chosen === "off" ? [] : globs };
      if (chosen === "own" && !globs.length) {
        replace(errors, h("div", { role: "alert", class: "refusal" }, h("p", {}, "Name at least one glob, or choose Off.")));
        return;
      }
      try {
        await put(`/api/projects/${enc(p())}/verifier-config/protect`, body);
        notify(`Protected paths of ${p()} saved.`);
        await Promise.all([renderProtect(), renderConfig()]);
      } catch (err) {
        area.setAttribute("aria-invalid", "true");
        replace(errors, refusal(err));
      }
    });
    replace(
      protectEl,
      title,
      h("p", { class: "protect-state" }, "Protection is ", h("strong", {}, said[mode]), "."),
      out.protect_in_force.length
        ? [h("p", {}, "In force now (with the files the checks run by path):"), h("ul", { class: "protect-list", "aria-label": "Protected paths in force" }, out.protect_in_force.map((g) => h("li", {}, h("code", {}, g))))]
        : h("p", { class: "muted" }, "No path is protected."),
      form,
    );
    sync();
  }

  async function refresh() {
    await Promise.all([renderSwitch(), renderKeys(), renderProtect(), renderConfig()]);
  }
  refresh();
  return { refresh, unmount() {} };
}
