// The task drawer: everything about one task (description, spec, criteria with the evidence of
// the last run, attempts and findings, verification runs with each check, notes, the full
// history with actor and on_behalf_of), and what a human can do with it from here.

import { enc, get, patch, post, text } from "../api.js";
import { countdown, duration, h, label, rerender, when } from "../dom.js";
import { criteriaEditor, criteriaInput } from "../criteria.js";
import { actionDialog, notify, refusal, showRefusal } from "../ui.js";
import { flagsOf, maxAttempts, riskBadge } from "../taskbits.js";

const EDITABLE = new Set(["backlog", "ready", "blocked", "needs_human"]);
const PAGE = 50;
const MAX_PAGES = 40;

function lastFinishedRun(runs) {
  for (let i = runs.length - 1; i >= 0; i -= 1) if (runs[i].status !== "running") return runs[i];
  return null;
}

function kv(pairs) {
  return h("dl", { class: "kv" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function resultBadge(result) {
  return h("span", { class: `badge result-${result}` }, result);
}

function section(title, key, ...children) {
  return h("section", { class: "drawer-section", "aria-labelledby": `ds-${key}` }, h("h3", { id: `ds-${key}` }, title), ...children);
}

function detailText(detail) {
  const parts = [];
  for (const [k, v] of Object.entries(detail || {})) {
    if (v === null || v === undefined) continue;
    parts.push(`${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`);
  }
  return parts.join(" · ");
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
      notify(options.done || "Done.");
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
    if ((task.status === "needs_verification" && !waiting) || task.status === "verified") {
      buttons.push(
        h("button", {
          type: "button",
          class: "primary",
          dataset: { key: "accept" },
          onClick: () =>
            act({
              title: `Accept ${id}?`,
              body: risky
                ? `${id} is ${task.risk} risk: it is accepted on its own, by you. Check its evidence first.`
                : `${id} moves to done.`,
              confirm: "Accept",
              done: `${id} accepted.`,
              run: () => post(`${base}/accept`),
            }),
        }, "Accept"),
      );
    }
    if ((task.status === "needs_verification" && !waiting) || ["verified", "done"].includes(task.status)) {
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
      const resolve = (resolution, title, confirm, extraFields = [], body = "") =>
        h("button", {
          type: "button",
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
      buttons.push(resolve("requeue", `Requeue ${id}?`, "Requeue", [], "It goes back to ready for the next agent."));
      buttons.push(resolve("block", `Block ${id} on other tasks`, "Block", [{ name: "blocked_by", label: "Blocked by (task ids)", required: true }]));
      if (task.spec_id) buttons.push(resolve("revise_spec", `Send ${task.spec_id} back to draft?`, "Revise spec", [], `${id} waits in backlog until the spec is approved again.`));
      if (task.attempts.some((a) => a.submission)) {
        buttons.push(resolve("reverify", `Verify ${id} again?`, "Verify again", [], "The last submission is verified again (verifier errors start from zero)."));
      }
    }
    if (task.status !== "done" && task.status !== "cancelled") {
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
    if (EDITABLE.has(task.status)) {
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
    const rows = [...held, ...own].map((c) => {
      const ev = run && run.evidence ? run.evidence[c.id] : null;
      const said = submission && submission.self_report ? submission.self_report[c.id] : null;
      const src = ev && ev.source ? [ev.source.check, ev.source.report, ev.source.ref].filter(Boolean).join(" · ") : "";
      return h(
        "tr",
        {},
        h("th", { scope: "row" }, c.id),
        h("td", {}, h("span", { class: "kind" }, c.kind), " ", c.text, c.verify_ref ? [" ", h("code", {}, c.verify_ref)] : null),
        h("td", {}, ev ? resultBadge(ev.result) : h("span", { class: "muted" }, run ? "no evidence" : "not verified yet")),
        h("td", {}, ev ? [ev.detail || "", ev.rationale ? h("p", { class: "rationale" }, ev.rationale) : null, src ? h("p", { class: "muted" }, src) : null] : ""),
        h("td", {}, said ? resultBadge(said) : ""),
      );
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

  function attemptsSection(task) {
    const items = task.attempts.map((a) =>
      h(
        "li",
        { class: "attempt" },
        h("p", {}, h("strong", {}, `Attempt ${a.number}`), ` by ${a.actor} (key ${a.credential_id}) · ${when(a.started_at)}`, a.ended_at ? ` → ${when(a.ended_at)}` : " · in progress", a.ending ? ` · ${a.ending}` : "", a.used ? " · used" : "", a.failure_kind ? ` · ${a.failure_kind}` : ""),
        a.findings.length ? h("ul", { class: "findings" }, a.findings.map((f) => h("li", {}, f))) : null,
        a.learned ? h("p", {}, h("em", {}, "Learned: "), a.learned) : null,
        a.submission
          ? h("details", { dataset: { key: `sub-${a.number}` } }, h("summary", {}, `Submitted ${a.submission.commit_sha.slice(0, 12)}`), h("pre", { class: "output" }, a.submission.evidence), Object.keys(a.submission.self_report).length ? h("p", {}, "Self-report: ", Object.entries(a.submission.self_report).map(([k, v]) => `${k} ${v}`).join(", ")) : null)
          : null,
      ),
    );
    const findings = task.findings.map((f) =>
      h(
        "li",
        { class: `finding${f.self_report_mismatch.length ? " mismatch" : ""}` },
        h("p", {}, h("strong", {}, f.source === "verifier" ? "Verifier" : "Reviewer"), ` ${f.by} · ${when(f.at)}${f.attempt ? ` · attempt ${f.attempt}` : ""}: `, f.summary),
        f.details.length ? h("ul", {}, f.details.map((d) => h("li", {}, d))) : null,
        f.self_report_mismatch.length ? h("p", { class: "flag flag-mismatch" }, `Agent reported pass, verifier found otherwise: ${f.self_report_mismatch.join(", ")}`) : null,
      ),
    );
    return section(
      "Attempts and findings",
      "attempts",
      items.length ? h("ol", { class: "attempts" }, items) : h("p", { class: "muted" }, "No attempts yet."),
      findings.length ? [h("h4", {}, "Findings"), h("ul", { class: "findings-list" }, findings)] : null,
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
            h("p", {}, h("strong", {}, r.id), " ", resultBadge(r.status), signed.has(r.id) ? [" ", h("span", { class: "signed-badge", title: "the server's signed in-toto statement of this decision verifies with its attestation key" }, "signed")] : null, ` attempt ${r.attempt} · commit ${r.commit_sha.slice(0, 12)} · ${when(r.started_at)}${r.finished_at ? ` → ${when(r.finished_at)}` : ""}`),
            r.summary ? h("p", {}, r.summary) : null,
            Object.keys(r.checks).length
              ? h(
                  "div",
                  { class: "table-wrap" },
                  h(
                    "table",
                    { class: "checks" },
                    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Check"), h("th", { scope: "col" }, "Exit code"), h("th", { scope: "col" }, "Duration"), h("th", { scope: "col" }, "Output (tail)"))),
                    h(
                      "tbody",
                      {},
                      Object.entries(r.checks).map(([name, c]) =>
                        h(
                          "tr",
                          {},
                          h("th", { scope: "row" }, name),
                          h("td", { class: c.exit_code === 0 ? "ok" : "bad" }, c.timed_out ? `${c.exit_code ?? "–"} (timed out)` : String(c.exit_code ?? "–")),
                          h("td", {}, c.duration_ms === null || c.duration_ms === undefined ? "–" : duration(c.duration_ms / 1000)),
                          h("td", {}, c.output_tail ? h("details", { dataset: { key: `out-${r.id}-${name}` } }, h("summary", {}, "Show output"), h("pre", { class: "output" }, c.output_tail)) : h("span", { class: "muted" }, "none")),
                        ),
                      ),
                    ),
                  ),
                )
              : null,
          ),
        ),
      ),
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
            Object.keys(e.detail || {}).length ? h("p", { class: "muted detail" }, detailText(e.detail)) : null,
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
      flags.length ? h("ul", { class: "flags" }, flags.map(([kind, text]) => h("li", { class: `flag flag-${kind}` }, text))) : null,
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
