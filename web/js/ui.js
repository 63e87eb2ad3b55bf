// Shared pieces: refusals shown with the server's code and hint, notices, and dialogs that
// confirm an action, run it, and keep a refusal in view until the user goes back.

import { ApiError } from "./api.js";
import { field, h, replace } from "./dom.js";

export function refusal(err) {
  if (!(err instanceof ApiError)) {
    return h("div", { role: "alert", class: "refusal" }, h("p", {}, h("strong", {}, "Something went wrong: "), String(err && err.message ? err.message : err)));
  }
  return h(
    "div",
    { role: "alert", class: "refusal" },
    h("p", { class: "refusal-head" }, h("strong", {}, "Refused"), " ", h("code", { class: "code" }, err.code), " ", err.message),
    err.hint ? h("p", { class: "hint" }, err.hint) : null,
    err.currentStatus ? h("p", {}, "Its status now: ", h("strong", {}, err.currentStatus.replaceAll("_", " "))) : null,
    err.missing && err.missing.length
      ? [h("p", {}, "What is missing:"), h("ul", { class: "missing" }, err.missing.map((m) => h("li", {}, m)))]
      : null,
    err.errors && err.errors.length
      ? h("ul", { class: "field-errors" }, err.errors.map((e) => h("li", {}, h("code", {}, e.loc), ": ", e.msg)))
      : null,
  );
}

let noticeArea = null;
let alertArea = null;

export function mountNotices(statusEl, alertEl) {
  noticeArea = statusEl;
  alertArea = alertEl;
}

export function notify(message) {
  if (alertArea) replace(alertArea);
  if (noticeArea) replace(noticeArea, h("p", { class: "notice" }, message));
}

export function showRefusal(err) {
  if (noticeArea) replace(noticeArea);
  if (!alertArea) return;
  replace(alertArea, refusal(err), h("button", { type: "button", class: "secondary", onClick: () => replace(alertArea) }, "Dismiss"));
}

export function clearNotices() {
  if (noticeArea) replace(noticeArea);
  if (alertArea) replace(alertArea);
}

function control(spec) {
  const common = { name: spec.name, required: spec.required || null };
  if (spec.type === "textarea") {
    const el = h("textarea", { ...common, rows: spec.rows || 4 });
    el.value = spec.value || "";
    return el;
  }
  if (spec.type === "select") {
    return h(
      "select",
      common,
      spec.options.map(([value, text]) => h("option", { value, selected: value === spec.value }, text)),
    );
  }
  if (spec.type === "checkbox") {
    return h("input", { ...common, type: "checkbox", checked: Boolean(spec.value) });
  }
  return h("input", { ...common, type: spec.type || "text", value: spec.value ?? "", inputmode: spec.inputmode || null });
}

// A modal dialog: title, explanation, optional fields, and one confirming button. `run(values)`
// does the work; a refusal stays in the dialog (with code and hint) until the user goes back.
// Resolves with run's result, or null when the user went back.
export function actionDialog({ title, body, fields = [], confirm, run, danger = false, extra = null }) {
  return new Promise((resolve) => {
    const controls = fields.map((f) => [f, control(f)]);
    const errorBox = h("div", { class: "dialog-error" });
    const confirmBtn = h("button", { type: "submit", class: danger ? "danger" : "primary" }, confirm);
    const back = h("button", { type: "button", class: "secondary", value: "back" }, "Back");
    const form = h(
      "form",
      { method: "dialog", novalidate: false },
      h("h2", { id: "dialog-title" }, title),
      body ? (Array.isArray(body) ? body : h("p", {}, body)) : null,
      controls.map(([f, el]) => field(f.label, el, f.hint)),
      extra,
      errorBox,
      h("div", { class: "dialog-buttons" }, confirmBtn, back),
    );
    const dialog = h("dialog", { "aria-labelledby": "dialog-title", class: "action-dialog" }, form);
    let result = null;
    back.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(result);
    });
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (!form.reportValidity()) return;
      const values = {};
      for (const [f, el] of controls) values[f.name] = f.type === "checkbox" ? el.checked : el.value;
      confirmBtn.disabled = true;
      replace(errorBox);
      try {
        result = (await run(values)) ?? true;
        dialog.close();
      } catch (err) {
        replace(errorBox, refusal(err));
        confirmBtn.disabled = false;
      }
    });
    document.body.append(dialog);
    dialog.showModal();
    const first = controls.length ? controls[0][1] : confirmBtn;
    first.focus();
  });
}

// The secret of a newly minted key: shown once, with a copy button and a warning; "Done"
// removes it from the page (and from memory: nothing else keeps it).
export function secretOnce(container, { title, secret, onDone }) {
  const input = h("input", { type: "text", readonly: true, value: secret, class: "secret", "aria-label": "Secret of the new key" });
  const copied = h("span", { role: "status", class: "copied" });
  const box = h(
    "section",
    { class: "secret-once", "aria-labelledby": "secret-title" },
    h("h3", { id: "secret-title" }, title),
    h("p", { class: "warning" }, "Copy this key now. It will not be shown again: only its hash is stored."),
    h("div", { class: "secret-row" }, input,
      h("button", {
        type: "button",
        onClick: async () => {
          try {
            await navigator.clipboard.writeText(secret);
            copied.textContent = "Copied.";
          } catch {
            input.select();
            copied.textContent = "Select the key and copy it (the browser refused clipboard access).";
          }
        },
      }, "Copy"),
    ),
    copied,
    h("button", {
      type: "button",
      class: "secondary",
      onClick: () => {
        box.remove();
        if (onDone) onDone();
      },
    }, "Done: I have stored it"),
  );
  replace(container, box);
  input.focus();
  input.select();
}
