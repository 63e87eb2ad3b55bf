// Project history: every switch, key, config and spec change, with who and when, newest first.

import { enc, get } from "../api.js";
import { h, replace, when } from "../dom.js";
import { refusal } from "../ui.js";

function detailText(detail) {
  return Object.entries(detail || {})
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" · ");
}

export function mountHistory(root, app) {
  const body = h("tbody", {});
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Load more");
  const error = h("div", {});
  let cursor = null;
  replace(
    root,
    h("h1", {}, "Project history"),
    h(
      "div",
      { class: "table-wrap" },
      h("table", { class: "list history" }, h("thead", {}, h("tr", {}, ["When", "Who", "On behalf of", "What", "Detail"].map((c) => h("th", { scope: "col" }, c)))), body),
    ),
    more,
    error,
  );

  async function page(reset) {
    try {
      const out = await get(`/api/projects/${enc(app.project)}/history`, { limit: 50, cursor: reset ? null : cursor });
      if (reset) replace(body);
      for (const e of out.items) {
        body.append(
          h(
            "tr",
            {},
            h("td", {}, h("time", { datetime: e.at }, when(e.at))),
            h("td", {}, e.actor),
            h("td", {}, e.on_behalf_of || ""),
            h("th", { scope: "row" }, e.action.replaceAll("_", " "), e.task_id ? ` ${e.task_id}` : ""),
            h("td", { class: "detail" }, detailText(e.detail)),
          ),
        );
      }
      cursor = out.cursor;
      more.hidden = !cursor;
    } catch (err) {
      replace(error, refusal(err));
    }
  }
  more.addEventListener("click", () => page(false));
  page(true);
  return { refresh: () => page(true), unmount() {} };
}
