// Project history: every switch, key, config and spec change, with who and when, newest first.
// A key that covers every project is recorded under project "*"; the server merges those events
// into each project's history, and "Keys for every project" shows them alone.

import { enc, get } from "../api.js";
import { field, h, replace, when } from "../dom.js";
import { eventDetail } from "../eventtext.js";
import * as url from "../state.js";
import { refusal } from "../ui.js";

const ALL = "*";


export function mountHistory(root, app) {
  const scope = h(
    "select",
    { id: "history-scope" },
    h("option", { value: "" }, `${app.project}, with keys for every project`),
    h("option", { value: "all" }, "Keys for every project (*)"),
  );
  scope.value = url.param("history") === "all" ? "all" : "";
  const title = h("h1", {}, "");
  const body = h("tbody", {});
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Load more");
  const error = h("div", {});
  let cursor = null;
  let configs = []; // every verifier config event loaded so far, newest first
  // The config a change replaced, for events written before the server recorded it: the next
  // older config event loaded (undefined when that one is not loaded yet).
  function olderConfig(e) {
    const i = configs.indexOf(e);
    return i >= 0 && i + 1 < configs.length ? configs[i + 1].detail.config : undefined;
  }
  let generation = 0; // a page that arrives after the scope changed is dropped
  replace(
    root,
    title,
    h("div", { class: "toolbar" }, field("Show", scope)),
    h(
      "div",
      { class: "table-wrap" },
      h("table", { class: "list history" }, h("thead", {}, h("tr", {}, ["When", "Who", "On behalf of", "What", "Detail"].map((c) => h("th", { scope: "col" }, c)))), body),
    ),
    more,
    error,
  );

  function target() {
    return scope.value === "all" ? ALL : app.project;
  }

  async function page(reset) {
    const mine = reset ? ++generation : generation;
    const project = target();
    replace(title, project === ALL ? "History of keys for every project" : "Project history");
    try {
      const out = await get(`/api/projects/${enc(project)}/history`, { limit: 50, cursor: reset ? null : cursor });
      if (mine !== generation) return;
      if (reset) {
        replace(body);
        configs = [];
      }
      replace(error);
      configs.push(...out.items.filter((e) => e.action === "verifier_config_changed"));
      for (const e of out.items) {
        const everyProject = e.project === ALL ? h("span", { class: "badge" }, "every project") : null;
        body.append(
          h(
            "tr",
            {},
            h("td", {}, h("time", { datetime: e.at }, when(e.at))),
            h("td", {}, e.actor),
            h("td", {}, e.on_behalf_of || ""),
            h("th", { scope: "row" }, e.action.replaceAll("_", " "), e.task_id ? ` ${e.task_id}` : "", everyProject ? " " : "", everyProject),
            h("td", { class: "detail" }, eventDetail(e.action, e.detail, olderConfig(e))),
          ),
        );
      }
      cursor = out.cursor;
      more.hidden = !cursor;
    } catch (err) {
      if (mine === generation) replace(error, refusal(err));
    }
  }
  scope.addEventListener("change", () => {
    url.set({ history: scope.value }, { silent: true });
    page(true);
  });
  more.addEventListener("click", () => page(false));
  page(true);
  return { refresh: () => page(true), unmount() {} };
}
