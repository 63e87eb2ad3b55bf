// Small views of a task shared by the board's cards and the drawer.

import { h } from "./dom.js";

export function maxAttempts(task, project) {
  return task.max_attempts ?? project.max_attempts;
}

export function riskBadge(risk) {
  return h("span", { class: `badge risk-${risk}` }, `${risk} risk`);
}

// The flags of the task's current attempt, as the server words them (task.flags): an earlier
// attempt's mismatch stays with that attempt (the drawer shows it there), not on the card.
const FLAG_CLASS = { self_report_mismatch: "mismatch", verifier_errors: "verifier-errors" };

// A stale verdict is flagged with the attempt's own flags: the server's words say where the base
// branch is now (task.stale_note).
export function flagsOf(task) {
  const out = (task.flags || []).map((f) => [FLAG_CLASS[f.kind] || f.kind, f.text]);
  if (task.stale) out.push(["stale", task.stale_note || "stale: the base branch has moved since"]);
  return out;
}

// A run's or a verdict's base in words, as the server's held_for says it: "the commit merged onto
// main at 0123456789ab", "... rebased onto ...", or the commit alone (and why).
export function baseWords(base) {
  if (!base) return "the commit alone";
  if (base.mode === "none" || !base.tip) return `the commit alone${base.why ? ` (${base.why})` : ""}`;
  return `the commit ${base.mode === "rebase" ? "rebased" : "merged"} onto ${base.branch} at ${base.tip.slice(0, 12)}`;
}

// The same, short enough for a card: "main @ 0123456".
export function baseShort(base) {
  if (!base || base.mode === "none" || !base.tip) return "commit alone";
  return `${base.branch} @ ${base.tip.slice(0, 7)}`;
}
