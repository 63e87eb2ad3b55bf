// Agent keys: who may work over MCP. Minted here (the secret shown once), revoked here.

import { get, post } from "../api.js";
import { field, h, replace } from "../dom.js";
import { notify, refusal, secretOnce } from "../ui.js";
import { keyTable, revokeKey } from "./verifiers.js";

export function mountKeys(root, app) {
  const secretEl = h("div", {});
  const tableEl = h("div", {});
  const name = h("input", { id: "ak-name", type: "text", required: true, pattern: "[a-z0-9][a-z0-9._\\-]{0,63}" });
  const role = h("select", { id: "ak-role" }, h("option", { value: "executor" }, "executor: claims and does tasks"), h("option", { value: "architect" }, "architect: may also approve low-risk specs"));
  const scope = h("select", { id: "ak-scope" });
  const delegate = h("input", { id: "ak-delegate", type: "checkbox" });
  const error = h("div", {});
  const form = h(
    "form",
    { class: "inline-form" },
    h("h2", {}, "Create an agent key"),
    field("Agent name", name, "lowercase letters, digits, '.', '_' or '-'"),
    field("Role", role),
    field("Covers", scope),
    h("div", { class: "field check" }, delegate, h("label", { for: delegate.id }, `May act for ${app.me.actor} (on_behalf_of: low-risk accepts and approvals; never the board-only switches)`)),
    h("button", { type: "submit", class: "primary" }, "Create key"),
    error,
  );
  replace(root, h("h1", {}, "Agent keys"), secretEl, tableEl, form);

  async function refresh() {
    replace(scope, h("option", { value: "project" }, `this project (${app.project})`), h("option", { value: "all" }, "every project"));
    try {
      const keys = (await get("/api/keys")).items.filter((k) => k.kind === "agent");
      replace(
        tableEl,
        keyTable(keys, {
          columns: [
            ["Agent", (k) => `agent:${k.name}`],
            ["Id", (k) => k.id],
            ["Role", (k) => k.role],
            ["Projects", (k) => (k.projects.length ? k.projects.join(", ") : "every project")],
            ["May act for", (k) => k.delegations.join(", ") || "nobody"],
          ],
          onRevoke: async (k) => {
            if (await revokeKey(k)) {
              notify(`Revoked ${k.id}.`);
              refresh();
            }
          },
        }),
      );
    } catch (err) {
      replace(tableEl, refusal(err));
    }
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!form.reportValidity()) return;
    replace(error);
    try {
      const out = await post("/api/keys", {
        kind: "agent",
        name: name.value.trim(),
        role: role.value,
        projects: scope.value === "all" ? [] : [app.project],
        delegations: delegate.checked ? [app.me.actor] : [],
      });
      secretOnce(secretEl, { title: `New key for agent:${out.credential.name} (${out.credential.id})`, secret: out.key });
      notify(`Agent key ${out.credential.id} created.`);
      form.reset();
      refresh();
    } catch (err) {
      replace(error, refusal(err));
    }
  });

  refresh();
  return { refresh, unmount() {} };
}
