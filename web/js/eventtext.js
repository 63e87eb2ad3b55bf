// A history event's detail as text a person reads: lists as lists, warnings each on a line of
// their own, a verifier config change as a diff of the settings that changed (old vs new),
// nested values as dotted paths. Never raw JSON.

import { h } from "./dom.js";

function scalar(v) {
  if (v === null || v === undefined) return "none";
  if (typeof v === "string") return v === "" ? '""' : v;
  return String(v);
}

// {checks: {unit: {command: "x"}}} -> [["checks.unit.command", "x"]]; a list of scalars stays
// one value ("a, b"), a list of objects is numbered ("include[1].path").
export function flatten(value, prefix = "") {
  if (value === null || value === undefined || typeof value !== "object") return [[prefix, scalar(value)]];
  if (Array.isArray(value)) {
    if (!value.length) return [[prefix, "none"]];
    if (value.every((v) => v === null || typeof v !== "object")) return [[prefix, value.map(scalar).join(", ")]];
    return value.flatMap((v, i) => flatten(v, `${prefix}[${i + 1}]`));
  }
  const entries = Object.entries(value);
  if (!entries.length) return [[prefix, "none"]];
  return entries.flatMap(([k, v]) => flatten(v, prefix ? `${prefix}.${k}` : k));
}

// The settings that differ between two configs: [sign, path, value] with "-" for the old value
// and "+" for the new, in the new config's order (removed settings last).
const empty = (c) => !c || !Object.keys(c).length;

export function configDiff(before, after) {
  const old = new Map(empty(before) ? [] : flatten(before));
  const now = new Map(empty(after) ? [] : flatten(after));
  const lines = [];
  for (const [path, v] of now) {
    if (old.get(path) === v) continue;
    if (!old.has(path) && v === "none") continue; // an unset setting that was not there before
    if (old.has(path)) lines.push(["-", path, old.get(path)]);
    lines.push(["+", path, v]);
  }
  for (const [path, v] of old) if (!now.has(path)) lines.push(["-", path, v]);
  return lines;
}

function diffList(before, after) {
  const lines = configDiff(before, after);
  if (!lines.length) return h("p", { class: "muted" }, "no setting changed");
  return h(
    "ul",
    { class: "diff", "aria-label": "Config changes" },
    lines.map(([sign, path, v]) =>
      h("li", { class: sign === "+" ? "diff-add" : "diff-del" }, h("span", { class: "diff-sign", "aria-hidden": "true" }, sign), h("span", { class: "sr-only" }, sign === "+" ? "new " : "old "), `${path}: ${v}`),
    ),
  );
}

function plainParts(detail) {
  const parts = [];
  for (const [k, v] of Object.entries(detail)) {
    if (v === null || v === undefined) continue;
    for (const [path, text] of flatten(v, k)) parts.push(`${path.replaceAll("_", " ")}: ${text}`);
  }
  return parts;
}

// `previous`: the config before this change, when the event does not carry it (events written
// before the server recorded it): the next older config event the caller has loaded.
export function eventDetail(action, detail, previous) {
  const d = { ...(detail || {}) };
  const out = [];
  const warnings = Array.isArray(d.warnings) ? d.warnings : d.warnings ? [d.warnings] : [];
  delete d.warnings;
  if (action === "verifier_config_changed" && "config" in d) {
    const before = "previous" in d ? d.previous : previous;
    out.push(before === undefined ? h("p", { class: "muted" }, "config set (the earlier config is not loaded):") : null);
    out.push(diffList(before === undefined ? null : before, d.config));
    delete d.config;
    delete d.previous;
  }
  const parts = plainParts(d);
  if (parts.length) out.push(h("p", { class: "muted detail" }, parts.join(" · ")));
  if (warnings.length) out.push(h("ul", { class: "warnings" }, warnings.map((w) => h("li", {}, `warning: ${w}`))));
  return out.filter(Boolean);
}
