// Small views of a task shared by the board's cards and the drawer.

import { h } from "./dom.js";

export function maxAttempts(task, project) {
  return task.max_attempts ?? project.max_attempts;
}

export function riskBadge(risk) {
  return h("span", { class: `badge risk-${risk}` }, `${risk} risk`);
}

export function flagsOf(task) {
  const flags = [];
  const mismatch = task.findings.filter((f) => f.self_report_mismatch && f.self_report_mismatch.length);
  if (mismatch.length) {
    const ids = [...new Set(mismatch.flatMap((f) => f.self_report_mismatch))];
    flags.push(["mismatch", `self-report mismatch: ${ids.join(", ")}`]);
  }
  if (task.verifier_errors_in_row > 0) flags.push(["verifier-errors", `verifier errors in a row: ${task.verifier_errors_in_row}`]);
  return flags;
}
