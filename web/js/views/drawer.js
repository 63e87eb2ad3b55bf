// The task drawer: everything about one task (description, spec, criteria with the evidence of
// the last run, attempts and findings, verification runs with each check, notes, the full
// history with actor and on_behalf_of), and what a human can do with it from here.

import { enc, get, patch, post, text } from "../api.js";
import { countdown, duration, h, label, rerender, when } from "../dom.js";
import { criteriaEditor, criteriaInput } from "../criteria.js";
import { actionDialog, notify, refusal, showRefusal } from "../ui.js";
import { baseWords, flagsOf, maxAttempts, riskBadge } from "../taskbits.js";
import { eventDetail } from "../eventtext.js";

// What a human may do to the task now, as the server says (its `actions`): the board never
// re-derives the rules it enforces.
const can = (task, action) => (task.actions || []).includes(action);
const PAGE = 50;
const MAX_PAGES = 40;

function lastFinishedRun(runs) {
  for (let i = runs.length - 1; i >= 0; i -= 1) if (runs[i].status !== "running") return runs[i];
  return null;
}

function kv(pairs) {
  return h("dl", { class: "kv" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

// Flags the verifier or the server set on a criterion's evidence, whatever their name: an array
// `flags` (strings, or {kind, text}) and any field that is exactly true. One the board does not
// know yet is still shown, in words made from its name. Flags the drawer says in a sentence of
// their own are left out here.
const SAID_ELSEWHERE = new Set(["passes_without_change"]);
function evidenceFlags(ev) {
  const out = [];
  for (const f of Array.isArray(ev.flags) ? ev.flags : []) {
    if (typeof f === "string") out.push([f, f.replaceAll("_", " ")]);
    else if (f && typeof f.kind === "string") out.push([f.kind, typeof f.text === "string" ? f.text : f.kind.replaceAll("_", " ")]);
  }
  for (const [k, v] of Object.entries(ev)) if (v === true && !SAID_ELSEWHERE.has(k)) out.push([k, k.replaceAll("_", " ")]);
  return out.length ? h("ul", { class: "flags evidence-flags" }, out.map(([kind, words]) => h("li", { class: "flag evidence-flag", dataset: { flag: kind } }, words))) : null;
}

function resultBadge(result) {
  return h("span", { class: `badge result-${result}` }, result);
}

function section(title, key, ...children) {
  return h("section", { class: "drawer-section", "aria-labelledby": `ds-${key}` }, h("h3", { id: `ds-${key}` }, title), ...children);
}

function flagList(flags) {
  return flags.length ? h("ul", { class: "flags" }, flags.map(([kind, text]) => h("li", { class: `flag flag-${kind}` }, text))) : null;
}

// Why the task waits for a human, as the move that put it there said (task.needs_human).
function needsHumanBanner(task) {
  const why = task.needs_human;
  if (task.status !== "needs_human" || !why) return null;
  return h(
    "div",
    { class: `banner banner-${why.why.replaceAll("_", "-")}`, role: "note", "aria-label": "Why it needs a human" },
    h("p", {}, h("strong", {}, "Needs a human: "), why.reason),
    h("p", { class: "muted" }, `${why.by} · ${when(why.at)}${why.attempt ? ` · attempt ${why.attempt}` : ""}${why.failure_kind ? ` · ${why.failure_kind}` : ""}`),
    why.why === "held" && why.paths && why.paths.length
      ? [
          h("ul", { class: "held-paths", "aria-label": "Protected paths the submission changes" }, why.paths.map((p) => h("li", {}, h("code", {}, p)))),
          why.diff ? h("details", { dataset: { key: "held-diff" } }, h("summary", {}, "Their diff"), h("pre", { class: "output" }, why.diff)) : null,
        ]
      : null,
  );
}

// Whether taskgate lands the project's accepted work, and on which branch.
function landsOn(project) {
  return Boolean(project.verification_on && project.verifier_config && project.verifier_config.land);
}

function landBranch(project, task) {
  const cfg = project.verifier_config || {};
  return cfg.base_branch || (cfg.reviewer && cfg.reviewer.base_branch) || (task.verified_base && task.verified_base.branch) || (project.base_tip && project.base_tip.branch) || "main";
}

// Where the work lands: the branch, the merge tree its verdict was reached on, its place in the
// landing queue, and once landed the commit on the branch.
function landingBanner(task, project) {
  if (!task.landed && task.status !== "landing" && !(task.status === "verified" && landsOn(project))) return null;
  const rows = [["Branch", task.landed ? task.landed.branch : landBranch(project, task)]];
  if (task.verified_base && task.verified_base.tree) rows.push(["Verified merge tree", task.verified_base.tree]);
  if (task.queue) rows.push(["Landing queue", `${task.queue.position} of ${task.queue.of}, ${task.queue.state}`]);
  if (task.landed) {
    rows.push(["Landed commit", task.landed.commit]);
    if (task.landed.tree) rows.push(["Landed tree", task.landed.tree]);
    rows.push(["Moved from", task.landed.from_tip]);
  }
  return h(
    "div",
    { class: "banner landing", role: "note", "aria-label": "Where it lands" },
    h("dl", {}, rows.map(([k, v]) => [h("dt", {}, k), h("dd", { dataset: { key: `landing-${k.toLowerCase().replaceAll(" ", "-")}` } }, h("code", {}, v))])),
  );
}

// The base the task's verdict holds for, and whether it is stale (the base branch moved since).
function verdictBase(task) {
  if (task.status !== "verified" || !task.verified_on) return null;
  return h(
    "div",
    { class: `banner verdict-base${task.stale ? " banner-stale" : ""}`, role: "note", "aria-label": "What the verdict holds for" },
    h("p", {}, h("strong", {}, "Verified on: "), task.verified_on),
    task.stale
      ? h("p", { class: "stale-note" }, `${task.stale_note || "stale: the base branch has moved since"}. The verifier checks it again by itself; accepting it before then is recorded as accepting a stale verdict.`)
      : null,
  );
}

// A verifier's finding as the next brief carries it: each failing criterion with its failing
// tests (full name and the test's own message), then each failing check with the end of its
// output. Failing criteria first: they are what the executor fixes.
function failedCriteriaList(f) {
  if (!f.criteria || !f.criteria.length) return null;
  return h(
    "ul",
    { class: "failed-criteria", "aria-label": "Failing criteria" },
    f.criteria.map((c) =>
      h(
        "li",
        { class: `failed-criterion${c.spec_error ? " spec-error" : ""}`, dataset: { criterion: c.id } },
        h("p", {}, h("strong", {}, c.id), " ", resultBadge(c.spec_error ? "spec error" : c.result), c.detail ? ` ${c.detail}` : ""),
        c.tests.length
          ? h(
              "ul",
              { class: "failed-tests" },
              c.tests.map((t) => h("li", { class: "failed-test" }, h("code", { class: "test-name" }, t.name), t.message ? h("pre", { class: "output message" }, t.message) : null)),
            )
          : null,
      ),
    ),
  );
}

function failedChecksList(f) {
  if (!f.checks || !f.checks.length) return null;
  return h(
    "ul",
    { class: "failed-checks", "aria-label": "Failing checks" },
    f.checks.map((c) =>
      h(
        "li",
        { class: "failed-check", dataset: { check: c.name } },
        h("p", {}, "check ", h("strong", {}, c.name), ` exited ${c.exit_code ?? "without an exit code"}`, c.output_end ? " · the end of its output:" : ""),
        // Its own scroll box, which opens at the bottom (column-reverse): the end is what matters.
        c.output_end ? h("div", { class: "output-end-box" }, h("pre", { class: "output output-end" }, c.output_end)) : null,
      ),
    ),
  );
}

function failedHiddenList(f) {
  if (!f.hidden_tests || !f.hidden_tests.length) return null;
  return h(
    "ul",
    { class: "failed-hidden", "aria-label": "Failing hidden tests" },
    f.hidden_tests.map((t) => h("li", { class: "failed-hidden-test" }, "hidden test ", h("code", {}, t.name), t.message ? h("pre", { class: "output message" }, t.message) : null)),
  );
}

function findingItem(f) {
  const structured = (f.criteria && f.criteria.length) || (f.checks && f.checks.length) || (f.hidden_tests && f.hidden_tests.length);
  return h(
    "li",
    { class: `finding${f.self_report_mismatch.length ? " mismatch" : ""}` },
    h("p", {}, h("strong", {}, f.source === "verifier" ? "Verifier" : "Reviewer"), ` ${f.by} · ${when(f.at)}${f.attempt ? ` · attempt ${f.attempt}` : ""}: `, f.summary),
    structured ? [failedCriteriaList(f), failedHiddenList(f), failedChecksList(f)] : f.details.length ? h("ul", {}, f.details.map((d) => h("li", {}, d))) : null,
  );
}

export function mountDrawer(el, app, { onClose, onChanged }) {
  let current = null; // {id, sig}
  let data = null;
  let spec = null;
  let noteDraft = "";

  function close() {
    current = null;
    data = null;
    el.hidden = true;
    el.replaceChildren();
  }

  // The task with all of its history and notes: GET /api/tasks/{id} pages both (oldest first),
  // so follow each cursor until it ends (bounded, for a task with a very long past).
  async function load(id) {
    const path = `/api/tasks/${enc(id)}`;
    const first = await get(path, { limit: PAGE });
    const history = [...first.history];
    const notes = [...first.notes];
    let hc = first.history_cursor;
    let nc = first.notes_cursor;
    for (let pages = 1; (hc || nc) && pages < MAX_PAGES; pages += 1) {
      const more = await get(path, { limit: PAGE, history_cursor: hc, notes_cursor: nc });
      if (hc) {
        history.push(...more.history);
        hc = more.history_cursor;
      }
      if (nc) {
        notes.push(...more.notes);
        nc = more.notes_cursor;
      }
    }
    const detail = { ...first, history, notes, truncated: Boolean(hc || nc) };
    let s = null;
    if (detail.task.spec_id) s = await get(`/api/projects/${enc(detail.task.project)}/specs/${enc(detail.task.spec_id)}`);
    return [detail, s];
  }

  async function show(id) {
    const opening = !current || current.id !== id;
    let detail;
    let s;
    try {
      [detail, s] = await load(id);
    } catch (err) {
      el.hidden = false;
      current = { id, sig: "" };
      rerender(el, () => [header(id, null), refusal(err)]);
      return;
    }
    const sig = JSON.stringify([detail, s]);
    if (!opening && current && current.sig === sig) return;
    data = detail;
    spec = s;
    current = { id, sig };
    el.hidden = false;
    rerender(el, render);
    if (opening) el.focus({ preventScroll: true });
  }

  function header(id, task) {
    return h(
      "header",
      { class: "drawer-head" },
      h("h2", { id: "drawer-title" }, task ? `${task.id}: ${task.title}` : id),
      h("button", { type: "button", class: "secondary", dataset: { key: "close" }, onClick: onClose }, "Close"),
    );
  }

  async function act(options) {
    const out = await actionDialog(options);
    if (out) {
      // What the server said of the move, e.g. an accept of a stale verdict (the tip it read may
      // be newer than the one this drawer showed).
      const warnings = Array.isArray(out.warnings) ? out.warnings : [];
      notify([options.done || "Done.", ...warnings.map((w) => `Warning: ${w}.`)].join(" "));
      onChanged();
    }
    return out;
  }

  function actions(task) {
    const id = task.id;
    const base = `/api/tasks/${enc(id)}`;
    const buttons = [];
    const risky = task.risk !== "low";
    const waiting = task.status === "needs_verification" && app.projectRecord.verification_on;
    if (waiting) {
      buttons.push(h("p", { class: "muted" }, "Waiting for the verifier: it can be accepted once verified."));
    }
    if (can(task, "accept")) {
      buttons.push(
        h("button", {
          type: "button",
          class: "primary",
          dataset: { key: "accept" },
          onClick: () =>
            act({
              title: `Accept ${id}?`,
              body: [
                task.stale ? h("p", { class: "stale-warning" }, `Its verdict is stale (${task.stale_note || "the base branch has moved since"}): it was verified on ${task.verified_on}.`) : null,
                h("p", {}, risky ? `${id} is ${task.risk} risk: it is accepted on its own, by you. Check its evidence first.` : task.status === "verified" && landsOn(app.projectRecord) ? `${id} joins the landing queue.` : `${id} moves to done.`),
                task.status === "verified" && landsOn(app.projectRecord)
                  ? h("p", { class: "lands-where" }, `taskgate lands it on ${landBranch(app.projectRecord, task)} of ${app.projectRecord.repo}: tested on top of the tasks ahead of it, the branch moves by fast-forward to exactly the commit it tested. It is done once it is there.`)
                  : h("p", { class: "lands-where" }, `Landing is yours: merge its commit into ${landBranch(app.projectRecord, task)} yourself.`),
              ],
              confirm: "Accept",
              done: `${id} accepted.`,
              run: () => post(`${base}/accept`),
            }),
        }, "Accept"),
      );
    }
    if (can(task, "queue_head")) {
      buttons.push(
        h("button", {
          type: "button",
          dataset: { key: "queue-head" },
          onClick: () =>
            act({
              title: `Move ${id} to the head of the landing queue?`,
              body: [h("p", {}, "A hotfix: it is the next to land, behind a push already under way.")],
              confirm: "Move to head",
              done: `${id} lands next.`,
              run: () => post(`${base}/queue/head`),
            }),
        }, "Move to head"),
      );
    }
    if (can(task, "leave_queue")) {
      buttons.push(
        h("button", {
          type: "button",
          dataset: { key: "queue-leave" },
          onClick: () =>
            act({
              title: `Take ${id} out of the landing queue?`,
              body: [h("p", {}, `${id} goes back to verified: not accepted, not landed.`)],
              confirm: "Take out",
              done: `${id} left the landing queue.`,
              run: () => post(`${base}/queue/leave`),
            }),
        }, "Take out of the queue"),
      );
    }
    if (can(task, "reopen")) {
      buttons.push(
        h("button", {
          type: "button",
          dataset: { key: "reopen" },
          onClick: () =>
            act({
              title: `Reopen ${id} with findings`,
              body: "The findings go to the next attempt's brief; reopening uses an attempt.",
              fields: [{ name: "findings", label: "Findings (one per line)", type: "textarea", required: true }],
              confirm: "Reopen",
              done: `${id} reopened.`,
              run: (v) => post(`${base}/reopen`, { findings: v.findings.split("\n").map((s) => s.trim()).filter(Boolean) }),
            }),
        }, "Reopen…"),
      );
    }
    if (task.status === "needs_human") {
      const suggested = task.needs_human ? task.needs_human.suggested : null;
      const resolve = (resolution, title, confirm, extraFields = [], body = "") =>
        h("button", {
          type: "button",
          class: resolution === suggested ? "primary suggested" : null,
          dataset: { key: `resolve-${resolution}` },
          onClick: () =>
            act({
              title,
              body,
              fields: [...extraFields, { name: "note", label: "Note (optional)", type: "textarea", rows: 2 }],
              confirm,
              done: `${id}: ${confirm.toLowerCase()} done.`,
              run: (v) => {
                const body2 = { resolution, note: v.note };
                if (v.blocked_by !== undefined) body2.blocked_by = v.blocked_by.split(/[\s,]+/).filter(Boolean);
                return post(`${base}/resolve`, body2);
              },
            }),
        }, confirm === "Block" ? "Block…" : confirm);
      const resolutions = [];
      if (can(task, "requeue")) resolutions.push(resolve("requeue", `Requeue ${id}?`, "Requeue", [], "It goes back to ready for the next agent."));
      if (can(task, "block")) resolutions.push(resolve("block", `Block ${id} on other tasks`, "Block", [{ name: "blocked_by", label: "Blocked by (task ids)", required: true }]));
      if (can(task, "revise_spec")) resolutions.push(resolve("revise_spec", `Send ${task.spec_id} back to draft?`, "Revise spec", [], `${id} waits in backlog until the spec is approved again.`));
      if (can(task, "allow") && task.needs_human.why === "held") {
        // The submission changes protected paths: allowing it verifies it again with the change allowed, signed as yours.
        resolutions.push(resolve("allow", `Allow ${id}'s change to ${task.needs_human.paths.join(", ")}?`, "Allow the change", [], "The submission is verified again with these protected paths allowed; the allowance is recorded in history and signed as yours."));
      }
      if (can(task, "allow") && task.needs_human.why === "passes_without_change") {
        // New named tests pass on the baseline's code too: allowing them verifies it again with them counted, signed as yours.
        resolutions.push(resolve("allow", `Allow ${task.needs_human.criteria.join(", ")} to pass without the change?`, "Allow the tests", [], "The submission is verified again with these criteria's new tests counted as evidence though they pass on the baseline's code too; the allowance is recorded in history and signed as yours."));
      }
      if (can(task, "reverify")) {
        resolutions.push(resolve("reverify", `Verify ${id} again?`, "Verify again", [], "The last submission is verified again (verifier errors start from zero)."));
      }
      // What answers the reason (a spec error: revise the spec) comes first, as the primary action.
      resolutions.sort((a, b) => Number(b.classList.contains("suggested")) - Number(a.classList.contains("suggested")));
      buttons.push(...resolutions);
    }
    if (can(task, "cancel")) {
      buttons.push(
        h("button", {
          type: "button",
          class: "danger",
          dataset: { key: "cancel" },
          onClick: () =>
            act({
              title: `Cancel ${id}?`,
              body: "A cancelled task is never worked on again.",
              fields: [{ name: "reason", label: "Reason (optional)", type: "textarea", rows: 2 }],
              confirm: "Cancel task",
              danger: true,
              done: `${id} cancelled.`,
              run: (v) => post(`${base}/cancel`, { reason: v.reason }),
            }),
        }, "Cancel task…"),
      );
    }
    if (can(task, "edit")) {
      buttons.push(h("button", { type: "button", dataset: { key: "edit" }, onClick: () => edit(task) }, "Edit…"));
    }
    return h("div", { class: "actions", role: "group", "aria-label": "Actions" }, buttons);
  }

  async function edit(task) {
    const editor = criteriaEditor(criteriaInput(task.criteria), { legend: "The task's own criteria" });
    const specBoxes = [];
    let specPart = null;
    if (spec) {
      const held = new Set(task.spec_criteria.length ? task.spec_criteria : spec.criteria.map((c) => c.id));
      specPart = h(
        "fieldset",
        { class: "criteria" },
        h("legend", {}, `Criteria held from ${spec.id}`),
        spec.criteria.map((c) => {
          const box = h("input", { type: "checkbox", checked: held.has(c.id), value: c.id });
          specBoxes.push(box);
          return h("label", { class: "check" }, box, ` ${c.id} ${c.text}`);
        }),
      );
    }
    await act({
      title: `Edit ${task.id}`,
      fields: [
        { name: "title", label: "Title", value: task.title, required: true },
        { name: "description", label: "Description", type: "textarea", value: task.description, rows: 5 },
        { name: "priority", label: "Priority (0-1000, higher is taken first)", type: "number", value: String(task.priority) },
        { name: "blocked_by", label: "Blocked by (task ids, comma-separated)", value: task.blocked_by.join(", ") },
      ],
      extra: [specPart, editor.el],
      confirm: "Save changes",
      done: `${task.id} saved.`,
      run: async (v) => {
        const body = {};
        if (v.title !== task.title) body.title = v.title;
        if (v.description !== task.description) body.description = v.description;
        if (Number(v.priority) !== task.priority) body.priority = Number(v.priority);
        const blockers = v.blocked_by.split(/[\s,]+/).filter(Boolean);
        if (JSON.stringify(blockers) !== JSON.stringify(task.blocked_by)) body.blocked_by = blockers;
        const crit = editor.value();
        if (JSON.stringify(crit) !== JSON.stringify(criteriaInput(task.criteria))) body.criteria = crit;
        if (spec) {
          const held = specBoxes.filter((b) => b.checked).map((b) => b.value);
          const before = task.spec_criteria.length ? task.spec_criteria : spec.criteria.map((c) => c.id);
          if (JSON.stringify(held) !== JSON.stringify(before)) body.spec_criteria = held;
        }
        const out = await patch(`/api/tasks/${enc(task.id)}`, body);
        if (out.warnings.length) notify(`Saved with warnings: ${out.warnings.join("; ")}`);
        return out;
      },
    });
  }

  function criteriaSection(task, runs) {
    const run = lastFinishedRun(runs);
    const live = runs.length && runs[runs.length - 1].status === "running" ? runs[runs.length - 1] : null;
    const own = task.criteria;
    const held = spec ? spec.criteria.filter((c) => !task.spec_criteria.length || task.spec_criteria.includes(c.id)) : [];
    const submission = [...task.attempts].reverse().find((a) => a.submission)?.submission;
    const all = [...held, ...own];
    const failing = (c) => Boolean(run && run.evidence && run.evidence[c.id] && run.evidence[c.id].result !== "pass");
    // Failing criteria first, as in the next brief (a stable sort keeps the spec's order).
    const ordered = [...all.filter(failing), ...all.filter((c) => !failing(c))];
    const rows = ordered.flatMap((c) => {
      const ev = run && run.evidence ? run.evidence[c.id] : null;
      const said = submission && submission.self_report ? submission.self_report[c.id] : null;
      const src = ev && ev.source ? [ev.source.check, ev.source.report, ev.source.ref].filter(Boolean).join(" · ") : "";
      const row = h(
        "tr",
        { class: "criterion", dataset: { criterion: c.id } },
        h("th", { scope: "row", class: "nowrap" }, c.id),
        h("td", { class: "criterion-text" }, h("span", { class: "kind" }, c.guard ? `${c.kind}, guard` : c.kind), " ", c.text, c.verify_ref ? [" ", h("code", {}, c.verify_ref)] : null),
        h("td", {}, ev ? resultBadge(ev.result) : h("span", { class: "muted" }, run ? "no evidence" : "not verified yet")),
        h("td", { class: "criterion-detail" }, ev ? [ev.detail || "", evidenceFlags(ev), ev.rationale ? h("p", { class: "rationale" }, ev.rationale) : null, src ? h("p", { class: "muted" }, src) : null, withoutChange(ev)] : ""),
        h("td", {}, said ? resultBadge(said) : ""),
      );
      return [row, evidenceFailuresRow(c, ev)];
    });
    return section(
      "Criteria and evidence",
      "criteria",
      run ? h("p", { class: "muted" }, `Evidence of run ${run.id} (${run.status}, attempt ${run.attempt}).`) : null,
      live ? h("p", { class: "muted" }, `A verifier run is in progress: ${live.id}.`) : null,
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "criteria-table" },
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Id"), h("th", { scope: "col" }, "Criterion"), h("th", { scope: "col" }, "Last run"), h("th", { scope: "col" }, "Detail"), h("th", { scope: "col" }, "Agent said"))),
          h("tbody", {}, rows),
        ),
      ),
    );
  }

  // How a criterion whose named test the submission wrote did on the baseline's code.
  function withoutChange(ev) {
    if (ev.passes_without_change) return h("p", { class: "without-change" }, "Passes without the change: its new test passes on the baseline's code too.");
    return ev.without_change ? h("p", { class: "muted" }, `On the baseline's code: ${ev.without_change.result}.`) : null;
  }

  // A failing criterion's failing tests, each with its full name and its own message, on a row
  // of its own under the criterion: the messages get the table's whole width.
  function evidenceFailuresRow(c, ev) {
    if (!ev || !ev.failures || !ev.failures.length) return null;
    return h(
      "tr",
      { class: "criterion-failures", dataset: { criterion: c.id } },
      h(
        "td",
        { colspan: 5 },
        h("ul", { class: "failed-tests", "aria-label": `Failing tests of ${c.id}` }, ev.failures.map((t) => h("li", { class: "failed-test" }, h("code", { class: "test-name" }, t.name), t.message ? h("pre", { class: "output message" }, t.message) : null))),
      ),
    );
  }

  // Each attempt with its state in words (task.attempts[].state: "submitted, waiting for
  // verification", "verification failed"...), its own flags and the findings about it.
  function attemptsSection(task) {
    const byAttempt = new Map();
    const loose = [];
    for (const f of task.findings) {
      if (f.attempt && task.attempts.some((a) => a.number === f.attempt)) {
        if (!byAttempt.has(f.attempt)) byAttempt.set(f.attempt, []);
        byAttempt.get(f.attempt).push(f);
      } else {
        loose.push(f);
      }
    }
    const items = task.attempts.map((a) => attemptItem(a, byAttempt.get(a.number) || []));
    return section(
      "Attempts and findings",
      "attempts",
      items.length ? h("ol", { class: "attempts" }, items) : h("p", { class: "muted" }, "No attempts yet."),
      loose.length ? [h("h4", {}, "Other findings"), h("ul", { class: "findings-list" }, loose.map(findingItem))] : null,
    );
  }

  function attemptItem(a, findings) {
    const mismatch = a.self_report_mismatch || [];
    return h(
      "li",
      { class: "attempt", dataset: { attempt: String(a.number) } },
      h(
        "p",
        {},
        h("strong", {}, `Attempt ${a.number}`),
        ` by ${a.actor} (key ${a.credential_id}) · ${when(a.started_at)}`,
        a.ended_at ? ` → ${when(a.ended_at)}` : "",
        " · ",
        h("span", { class: "attempt-state" }, a.state),
        a.used ? " · used" : "",
        a.failure_kind ? ` · ${a.failure_kind}` : "",
      ),
      mismatch.length ? flagList([["mismatch", `self-report mismatch in attempt ${a.number}: ${mismatch.join(", ")}`]]) : null,
      a.findings.length ? h("ul", { class: "findings" }, a.findings.map((f) => h("li", {}, f))) : null,
      a.learned ? h("p", {}, h("em", {}, "Learned: "), a.learned) : null,
      a.submission
        ? h("details", { dataset: { key: `sub-${a.number}` } }, h("summary", {}, `Submitted ${a.submission.commit_sha.slice(0, 12)}`), h("pre", { class: "output" }, a.submission.evidence), Object.keys(a.submission.self_report).length ? h("p", {}, "Self-report: ", Object.entries(a.submission.self_report).map(([k, v]) => `${k} ${v}`).join(", ")) : null)
        : null,
      findings.length ? h("ul", { class: "findings-list", "aria-label": `Findings of attempt ${a.number}` }, findings.map(findingItem)) : null,
    );
  }

  // The task's signed statements as the in-toto JSON Lines bundle `taskgate attest verify` reads.
  async function downloadStatements(task) {
    try {
      const body = await text(`/api/tasks/${enc(task.id)}/attestations`);
      const link = h("a", { href: URL.createObjectURL(new Blob([body], { type: "application/jsonl" })), download: `${task.id}.intoto.jsonl` });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
    } catch (err) {
      showRefusal(err);
    }
  }

  function runsSection(runs, task) {
    const signed = new Set(data.signed_runs || []);
    const download = task.attestation_head
      ? h("p", {}, h("button", { type: "button", class: "download-statements", onClick: () => downloadStatements(task) }, "Download signed statements (.intoto.jsonl)"))
      : null;
    if (!runs.length) return section("Verification runs", "runs", download, h("p", { class: "muted" }, "No runs."));
    return section(
      "Verification runs",
      "runs",
      download,
      h(
        "ol",
        { class: "runs" },
        [...runs].reverse().map((r) =>
          h(
            "li",
            { class: `run run-${r.status}` },
            h("p", {}, h("strong", {}, r.id), " ", resultBadge(r.status), r.reverify ? [" ", h("span", { class: "badge reverify", title: "a run on a verified task whose base branch moved" }, "re-verification")] : null, signed.has(r.id) ? [" ", h("span", { class: "signed-badge", title: "the server's signed in-toto statement of this decision verifies with its attestation key" }, "signed")] : null, ` attempt ${r.attempt} · commit ${r.commit_sha.slice(0, 12)} · ${when(r.started_at)}${r.finished_at ? ` → ${when(r.finished_at)}` : ""}`),
            r.base ? h("p", { class: "run-base", dataset: { tip: r.base.tip || "" } }, "Checked on ", baseWords(r.base)) : null,
            r.conflict ? h("p", { class: "run-conflict" }, `Did not ${r.conflict.mode} onto ${r.conflict.branch} at ${r.conflict.tip.slice(0, 12)}; conflicting paths: `, r.conflict.paths.map((p, i) => [i ? ", " : "", h("code", {}, p)])) : null,
            r.summary ? h("p", {}, r.summary) : null,
            r.baseline ? changedPaths(r) : null,
            Object.keys(r.checks).length
              ? h(
                  "div",
                  { class: "table-wrap" },
                  h(
                    "table",
                    { class: "checks" },
                    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Check"), h("th", { scope: "col" }, "Exit code"), h("th", { scope: "col" }, "Duration"))),
                    h(
                      "tbody",
                      {},
                      Object.entries(r.checks).flatMap(([name, c]) => [
                        h(
                          "tr",
                          { class: "check" },
                          h("th", { scope: "row" }, name),
                          h("td", { class: c.exit_code === 0 ? "ok" : "bad" }, c.timed_out ? `${c.exit_code ?? "–"} (timed out)` : String(c.exit_code ?? "–")),
                          h("td", {}, c.duration_ms === null || c.duration_ms === undefined ? "–" : duration(c.duration_ms / 1000)),
                        ),
                        // The output on a row of its own: it gets the table's whole width.
                        h(
                          "tr",
                          { class: "check-output" },
                          h("td", { colspan: 3 }, c.output_tail ? h("details", { dataset: { key: `out-${r.id}-${name}` } }, h("summary", {}, "Show output"), h("pre", { class: "output" }, c.output_tail)) : h("span", { class: "muted" }, "no output")),
                        ),
                      ]),
                    ),
                  ),
                )
              : null,
          ),
        ),
      ),
    );
  }

  // The paths a run's submission changes against its baseline, protected ones and test files marked.
  function changedPaths(r) {
    const b = r.baseline;
    const protectedSet = new Set(b.protected || []);
    const tests = new Set(b.test_files || []);
    const allowed = new Set((b.allowed && b.allowed.paths) || []);
    const where = b.commit ? `${b.branch} at ${b.commit.slice(0, 12)}` : `no baseline (${b.why})`;
    return h(
      "details",
      // Open when it marks protected paths: those are what a human decides on.
      { class: "changed-paths", open: protectedSet.size > 0, dataset: { key: `changed-${r.id}` } },
      h("summary", {}, `${b.changed_total} changed path${b.changed_total === 1 ? "" : "s"} against ${where}${protectedSet.size ? ` · ${protectedSet.size} protected` : ""}`),
      h(
        "ul",
        {},
        (b.changed || []).map((p) =>
          h(
            "li",
            { class: protectedSet.has(p) ? "protected-path" : null },
            h("code", {}, p),
            protectedSet.has(p) ? [" ", h("span", { class: "badge protected" }, allowed.has(p) ? "protected, allowed" : "protected")] : null,
            tests.has(p) ? [" ", h("span", { class: "badge test-file" }, "test")] : null,
          ),
        ),
      ),
      b.diff ? h("details", {}, h("summary", {}, "Diff of the protected paths"), h("pre", { class: "output" }, b.diff)) : null,
    );
  }

  function notesSection(task, notes) {
    const area = h("textarea", { id: "note-body", rows: 3, required: true, dataset: { key: "note-body" } });
    area.value = noteDraft;
    area.addEventListener("input", () => {
      noteDraft = area.value;
    });
    const error = h("div", {});
    const form = h(
      "form",
      { class: "note-form" },
      h("div", { class: "field" }, h("label", { for: area.id }, "New note"), area),
      error,
      h("button", { type: "submit", dataset: { key: "add-note" } }, "Add note"),
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (!form.reportValidity()) return;
      try {
        await post(`/api/tasks/${enc(task.id)}/notes`, { body: area.value });
        noteDraft = "";
        notify(`Note added to ${task.id}.`);
        onChanged();
      } catch (err) {
        error.replaceChildren(refusal(err));
      }
    });
    return section(
      "Notes",
      "notes",
      notes.length ? h("ul", { class: "notes" }, notes.map((n) => h("li", {}, h("p", { class: "muted" }, `${n.author} · ${when(n.at)}`), h("p", { class: "pre" }, n.body)))) : h("p", { class: "muted" }, "No notes."),
      form,
    );
  }

  function historySection(history, truncated) {
    return section(
      "History",
      "history",
      truncated ? h("p", { class: "muted" }, `The first ${history.length} events; the rest are in the API.`) : null,
      h(
        "ol",
        { class: "timeline" },
        history.map((e) =>
          h(
            "li",
            {},
            h("time", { datetime: e.at }, when(e.at)),
            " ",
            h("strong", {}, e.actor),
            e.on_behalf_of ? [" for ", h("strong", {}, e.on_behalf_of)] : null,
            ` ${e.action.replaceAll("_", " ")}`,
            e.from_status || e.to_status ? ` (${e.from_status ? label(e.from_status) : "new"} → ${label(e.to_status || e.from_status)})` : "",
            e.credential_id ? h("span", { class: "muted" }, ` key ${e.credential_id}`) : null,
            Object.keys(e.detail || {}).length ? eventDetail(e.action, e.detail) : null,
          ),
        ),
      ),
    );
  }

  function render() {
    const { task, history, runs, notes } = data;
    const project = app.projectRecord;
    const flags = flagsOf(task);
    return [
      header(task.id, task),
      h(
        "div",
        { class: "drawer-summary" },
        h("span", { class: `status-pill status-${task.status}` }, label(task.status)),
        riskBadge(task.risk),
        h("span", {}, `priority ${task.priority}`),
        h("span", {}, `attempts ${task.attempts_used}/${maxAttempts(task, project)}`),
        task.claim ? h("span", {}, `held by ${task.claim.actor} · lease `, h("span", { class: "countdown", dataset: { expires: task.claim.expires_at } }, countdown(task.claim.expires_at)), ` · ${task.claim.phase}`) : null,
      ),
      flagList(flags),
      verdictBase(task),
      landingBanner(task, project),
      needsHumanBanner(task),
      actions(task),
      section(
        "Description",
        "description",
        task.description ? h("p", { class: "pre" }, task.description) : h("p", { class: "muted" }, "No description."),
        kv([
          ["Blocked by", task.blocked_by.join(", ")],
          ["Created", `${when(task.created_at)} by ${task.created_by}`],
          ["Commands", (task.verification_commands || []).join(" ; ")],
        ]),
      ),
      spec
        ? section(
            "Spec",
            "spec",
            h("p", {}, h("strong", {}, `${spec.id}: ${spec.title}`), ` · ${spec.status} · revision ${spec.revision}`),
            h("details", { dataset: { key: "spec-body" } }, h("summary", {}, "Spec text"), h("p", { class: "pre" }, spec.body || "(empty)")),
          )
        : null,
      criteriaSection(task, runs),
      attemptsSection(task),
      runsSection(runs, task),
      notesSection(task, notes),
      historySection(history, data.truncated),
    ];
  }

  return { show, close };
}
