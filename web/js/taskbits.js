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

export function flagsOf(task) {
  return (task.flags || []).map((f) => [FLAG_CLASS[f.kind] || f.kind, f.text]);
}
