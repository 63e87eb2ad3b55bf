// Decisions: the log (superseded ones marked), logging a new one, superseding one, and search
// across the project's live decisions, specs and tasks.

import { enc, get, post } from "../api.js";
import { field, h, replace, when } from "../dom.js";
import * as url from "../state.js";
import { actionDialog, notify, refusal } from "../ui.js";

export function mountDecisions(root, app) {
  const base = () => `/api/projects/${enc(app.project)}`;
  const listEl = h("div", {});
  const resultsEl = h("div", { "aria-live": "polite" });
  const q = h("input", { id: "dec-q", type: "search", required: true });
  const searchForm = h("form", { class: "inline-form", role: "search" }, field("Search decisions, specs and tasks", q), h("button", { type: "submit" }, "Search"));
  const title = h("input", { id: "dec-title", type: "text", required: true });
  const body = h("textarea", { id: "dec-body", rows: 4 });
  const specSel = h("select", { id: "dec-spec" });
  const error = h("div", {});
  const logForm = h("form", { class: "inline-form" }, h("h2", {}, "Log a decision"), field("Title", title), field("Why, and what it means", body), field("About spec", specSel), h("button", { type: "submit", class: "primary" }, "Log decision"), error);
  replace(root, h("h1", {}, "Decisions"), searchForm, resultsEl, listEl, logForm);

  searchForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!searchForm.reportValidity()) return;
    url.set({ dq: q.value });
    try {
      const hits = (await get(`${base()}/search`, { q: q.value })).items;
      replace(
        resultsEl,
        h("h2", {}, `Results for “${q.value}”`),
        hits.length
          ? h("ol", { class: "hits" }, hits.map((x) => h("li", {}, h("span", { class: "kind" }, x.kind), " ", h("strong", {}, x.id), ` ${x.title}`, x.status ? ` (${x.status})` : "")))
          : h("p", { class: "muted" }, "Nothing matches."),
      );
    } catch (err) {
      replace(resultsEl, refusal(err));
    }
  });

  logForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!logForm.reportValidity()) return;
    replace(error);
    try {
      const d = await post(`${base()}/decisions`, { title: title.value, body: body.value, spec_id: specSel.value || null });
      notify(`${d.id} logged.`);
      logForm.reset();
      refresh();
    } catch (err) {
      replace(error, refusal(err));
    }
  });

  async function supersede(old) {
    const out = await actionDialog({
      title: `Supersede ${old.id}`,
      body: `“${old.title}” is marked superseded by the new decision, and leaves agents' briefs.`,
      fields: [
        { name: "title", label: "New decision", value: old.title, required: true },
        { name: "body", label: "Why, and what it means", type: "textarea", value: old.body },
      ],
      confirm: "Log new decision",
      run: (v) => post(`${base()}/decisions`, { title: v.title, body: v.body, spec_id: old.spec_id, supersedes: old.id }),
    });
    if (out) {
      notify(`${out.id} supersedes ${old.id}.`);
      refresh();
    }
  }

  async function refresh() {
    try {
      const [decisions, specs] = await Promise.all([get(`${base()}/decisions`, { include_superseded: true }), get(`${base()}/specs`, { limit: 200 })]);
      const chosen = specSel.value;
      replace(specSel, h("option", { value: "" }, "no spec"), specs.items.map((s) => h("option", { value: s.id }, `${s.id}: ${s.title}`)));
      specSel.value = chosen;
      replace(
        listEl,
        h("h2", {}, "Log"),
        decisions.items.length
          ? h(
              "ol",
              { class: "decisions" },
              [...decisions.items].reverse().map((d) =>
                h(
                  "li",
                  { class: d.superseded_by ? "superseded" : "" },
                  h("p", {}, h("strong", {}, d.id), ` ${d.title}`, d.superseded_by ? h("span", { class: "badge superseded-badge" }, `superseded by ${d.superseded_by}`) : null, d.supersedes ? h("span", { class: "muted" }, ` (supersedes ${d.supersedes})`) : null),
                  d.body ? h("p", { class: "pre" }, d.body) : null,
                  h("p", { class: "muted" }, `${d.created_by} · ${when(d.created_at)}${d.spec_id ? ` · ${d.spec_id}` : ""}`),
                  d.superseded_by ? null : h("button", { type: "button", class: "small", onClick: () => supersede(d) }, `Supersede ${d.id}…`),
                ),
              ),
            )
          : h("p", { class: "muted" }, "No decisions yet."),
      );
    } catch (err) {
      replace(listEl, refusal(err));
    }
  }

  q.value = url.param("dq");
  refresh();
  return { refresh, unmount() {} };
}
