// An editor for a list of acceptance criteria: one row per criterion (kind, text, what to run),
// rows added and removed with buttons. Used for specs (revise) and for a task's own criteria.

import { h, nextId } from "./dom.js";

const KINDS = [
  ["review", "review (judged by the reviewer)"],
  ["test", "test (a test or group in a report)"],
  ["command", "command (run in the checkout)"],
];

export function criteriaEditor(initial, { legend = "Acceptance criteria" } = {}) {
  const list = h("ol", { class: "criteria-editor" });
  const rows = [];

  function addRow(c = { text: "", kind: "review", verify_ref: "" }) {
    const n = nextId("crit");
    const kind = h("select", { id: `${n}-kind`, name: "kind" }, KINDS.map(([v, t]) => h("option", { value: v, selected: v === c.kind }, t)));
    const text = h("input", { id: `${n}-text`, name: "text", type: "text", value: c.text || "", required: true });
    const ref = h("input", { id: `${n}-ref`, name: "verify_ref", type: "text", value: c.verify_ref || "" });
    const row = { kind, text, ref };
    const li = h(
      "li",
      { class: "criterion-row" },
      h("div", { class: "field" }, h("label", { for: text.id }, "Criterion"), text),
      h("div", { class: "field" }, h("label", { for: kind.id }, "Kind"), kind),
      h("div", { class: "field" }, h("label", { for: ref.id }, "Test or command (verify_ref)"), ref),
      h("button", {
        type: "button",
        class: "secondary small",
        onClick: () => {
          rows.splice(rows.indexOf(row), 1);
          li.remove();
        },
      }, "Remove criterion"),
    );
    rows.push(row);
    list.append(li);
    return text;
  }

  for (const c of initial) addRow(c);
  const el = h(
    "fieldset",
    { class: "criteria" },
    h("legend", {}, legend),
    list,
    h("button", { type: "button", class: "secondary small", onClick: () => addRow().focus() }, "Add criterion"),
  );
  return {
    el,
    value() {
      return rows.map((r) => {
        const out = { text: r.text.value.trim(), kind: r.kind.value };
        if (r.ref.value.trim()) out.verify_ref = r.ref.value.trim();
        return out;
      });
    },
  };
}

export function criteriaInput(criteria) {
  return criteria.map((c) => ({ text: c.text, kind: c.kind, ...(c.verify_ref ? { verify_ref: c.verify_ref } : {}) }));
}
