// Metrics of a project over a window of days: throughput, cycle time, first-pass verification
// rate, attempts, verifier errors and self-report mismatches, drawn as inline SVG.

import { enc, get } from "../api.js";
import { duration, field, h, replace } from "../dom.js";
import { barChart, figure, hBars, ring } from "../charts.js";
import * as url from "../state.js";
import { refusal } from "../ui.js";

export function mountMetrics(root, app) {
  const days = h("select", { id: "m-days" }, [7, 14, 30, 90].map((d) => h("option", { value: String(d) }, `last ${d} days`)));
  days.value = url.param("days") || "14";
  const body = h("div", { class: "metrics" });
  replace(root, h("h1", {}, "Metrics"), h("div", { class: "toolbar" }, field("Window", days)), body);
  days.addEventListener("change", () => {
    url.set({ days: days.value });
    refresh();
  });

  async function refresh() {
    let m;
    try {
      m = await get(`/api/projects/${enc(app.project)}/metrics`, { days: days.value });
    } catch (err) {
      replace(body, refusal(err));
      return;
    }
    const ct = m.cycle_time;
    const fp = m.first_pass_verification;
    const hist = Object.entries(m.attempts_per_task.histogram).map(([n, count]) => ({ label: `${n} attempt${n === "1" ? "" : "s"}`, value: count }));
    replace(
      body,
      h(
        "div",
        { class: "stats" },
        h("p", {}, h("strong", {}, String(m.done)), " done"),
        h("p", {}, h("strong", {}, fp.rate === null ? "–" : `${Math.round(fp.rate * 100)}%`), " first-pass verification"),
        h("p", {}, h("strong", {}, duration(ct.median_seconds)), " median cycle time"),
        h("p", {}, h("strong", {}, m.verifier_errors.rate === null ? "–" : `${Math.round(m.verifier_errors.rate * 100)}%`), " verifier errors"),
        h("p", {}, h("strong", {}, String(m.self_report_mismatches.criteria)), " self-report mismatches"),
      ),
      figure(
        "Throughput: tasks done per day",
        barChart(
          m.throughput_per_day.map((d) => ({ label: d.date.slice(5), value: d.done })),
          { title: "Tasks done per day" },
        ),
      ),
      figure(
        `Cycle time, first claim to done (${ct.count} task${ct.count === 1 ? "" : "s"})`,
        ct.count
          ? hBars(
              [
                { label: "mean", value: ct.mean_seconds, text: duration(ct.mean_seconds) },
                { label: "median", value: ct.median_seconds, text: duration(ct.median_seconds) },
                { label: "90th percentile", value: ct.p90_seconds, text: duration(ct.p90_seconds) },
              ],
              { title: "Cycle time" },
            )
          : h("p", { class: "muted" }, "No task was done in this window."),
      ),
      figure(
        `First-pass verification: ${fp.passed} of ${fp.tasks} passed their first decisive run`,
        ring(fp.passed, fp.tasks, { title: "First-pass verification rate" }),
      ),
      figure(
        `Attempts per task done (mean ${m.attempts_per_task.mean ?? "–"}, max ${m.attempts_per_task.max ?? "–"})`,
        hist.length ? barChart(hist, { title: "Tasks by number of attempts", height: 160 }) : h("p", { class: "muted" }, "No task was done in this window."),
      ),
      h(
        "p",
        {},
        `Verifier runs finished: ${m.verifier_errors.runs}, of which errors: ${m.verifier_errors.errors}. `,
        m.self_report_mismatches.tasks.length ? `Tasks with self-report mismatches: ${m.self_report_mismatches.tasks.join(", ")}.` : "No self-report mismatches.",
      ),
    );
  }
  refresh();
  return { refresh, unmount() {} };
}
