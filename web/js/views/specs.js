// Specs: the list, one spec to read, approve (a draft), revise (back to draft with new
// content), and download as SPEC-<n>.md.

import { all, enc, get, post } from "../api.js";
import { h, replace, when } from "../dom.js";
import { criteriaEditor, criteriaInput } from "../criteria.js";
import * as url from "../state.js";
import { actionDialog, notify, refusal } from "../ui.js";
import { riskBadge } from "../taskbits.js";

export function mountSpecs(root, app) {
  const base = () => `/api/projects/${enc(app.project)}/specs`;
  const listEl = h("div", { class: "spec-list" });
  const detailEl = h("div", { class: "spec-detail", tabindex: "-1" });
  replace(root, h("h1", {}, "Specs"), h("div", { class: "split" }, listEl, detailEl));

  async function refresh() {
    try {
      const specs = await all(base());
      replace(
        listEl,
        specs.length
          ? h(
              "table",
              { class: "list" },
              h("thead", {}, h("tr", {}, ["Spec", "Title", "Risk", "Status", "Revision"].map((c) => h("th", { scope: "col" }, c)))),
              h(
                "tbody",
                {},
                specs.map((s) =>
                  h(
                    "tr",
                    { class: s.id === url.param("spec") ? "current" : "" },
                    h("th", { scope: "row" }, h("button", { type: "button", class: "link", onClick: () => url.set({ spec: s.id }, { push: true }) }, `Open ${s.id}`)),
                    h("td", {}, s.title),
                    h("td", {}, riskBadge(s.risk)),
                    h("td", {}, s.status),
                    h("td", {}, String(s.revision)),
                  ),
                ),
              ),
            )
          : h("p", { class: "muted" }, "No specs yet. Agents create them over MCP (create_spec)."),
      );
      await showDetail();
    } catch (err) {
      replace(listEl, refusal(err));
    }
  }

  async function showDetail() {
    const id = url.param("spec");
    if (!id) {
      replace(detailEl, h("p", { class: "muted" }, "Open a spec to read it."));
      return;
    }
    let spec;
    try {
      spec = await get(`${base()}/${enc(id)}`);
    } catch (err) {
      replace(detailEl, refusal(err));
      return;
    }
    const buttons = [];
    if (spec.status === "draft") {
      buttons.push(
        h("button", {
          type: "button",
          class: "primary",
          onClick: async () => {
            const out = await actionDialog({
              title: `Approve ${spec.id}?`,
              body: `${spec.id} (${spec.risk} risk) becomes approved; its backlog tasks become ready (or blocked, if they wait for others).`,
              confirm: "Approve",
              run: () => post(`${base()}/${enc(spec.id)}/approve`),
            });
            if (out) {
              notify(`${spec.id} approved${out.moved.length ? `; moved ${out.moved.join(", ")}` : ""}.`);
              refresh();
            }
          },
        }, "Approve"),
      );
    }
    buttons.push(
      h("button", {
        type: "button",
        onClick: async () => {
          const editor = criteriaEditor(criteriaInput(spec.criteria));
          const out = await actionDialog({
            title: `Revise ${spec.id}`,
            body: spec.status === "approved" ? "It goes back to draft as a new revision; its unclaimed tasks wait in backlog until it is approved again." : "It stays a draft.",
            fields: [
              { name: "title", label: "Title", value: spec.title, required: true },
              { name: "body", label: "Text", type: "textarea", value: spec.body, rows: 8 },
              { name: "risk", label: "Risk", type: "select", value: spec.risk, options: [["low", "low"], ["medium", "medium"], ["high", "high"]] },
            ],
            extra: editor.el,
            confirm: "Save revision",
            run: (v) => post(`${base()}/${enc(spec.id)}/revise`, { title: v.title, body: v.body, risk: v.risk, criteria: editor.value() }),
          });
          if (out) {
            notify(`${spec.id} revised (revision ${out.revision}, ${out.status}).`);
            refresh();
          }
        },
      }, "Revise…"),
    );
    buttons.push(
      h("button", {
        type: "button",
        onClick: async () => {
          try {
            const md = await get(`${base()}/${enc(spec.id)}/markdown`);
            const blob = new Blob([md.markdown], { type: "text/markdown" });
            const href = URL.createObjectURL(blob);
            const a = h("a", { href, download: md.path.split("/").pop() });
            document.body.append(a);
            a.click();
            a.remove();
            setTimeout(() => URL.revokeObjectURL(href), 10_000);
            notify(`Downloaded ${md.path.split("/").pop()} (commit it as ${md.path}).`);
          } catch (err) {
            replace(detailEl.querySelector(".spec-error"), refusal(err));
          }
        },
      }, `Download ${spec.id}.md`),
    );
    replace(
      detailEl,
      h("h2", {}, `${spec.id}: ${spec.title}`),
      h("p", {}, riskBadge(spec.risk), ` ${spec.status} · revision ${spec.revision} · by ${spec.created_by} ${when(spec.created_at)}`, spec.approved_by ? ` · approved by ${spec.approved_by} ${when(spec.approved_at)}` : ""),
      h("div", { class: "actions", role: "group", "aria-label": "Spec actions" }, buttons),
      h("div", { class: "spec-error" }),
      h("h3", {}, "Text"),
      h("p", { class: "pre" }, spec.body || "(empty)"),
      h("h3", {}, "Acceptance criteria"),
      h("ul", { class: "spec-criteria" }, spec.criteria.map((c) => h("li", {}, h("strong", {}, c.id), " ", h("span", { class: "kind" }, c.kind), " ", c.text, c.verify_ref ? [" ", h("code", {}, c.verify_ref)] : null))),
    );
  }

  const unlisten = url.onChange(() => refresh());
  refresh();
  return { refresh, unmount: () => unlisten() };
}
