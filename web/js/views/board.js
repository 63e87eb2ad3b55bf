// The board: a column per status, cards that show who holds what and for how long, filters
// kept in the URL, low-risk batch accept, and a task drawer. It polls the API while the tab is
// visible and updates cards in place, so the user's focus, scroll and open drawer stay put.

import { all, enc, get, post } from "../api.js";
import { countdown, h, label, replace, rerender } from "../dom.js";
import * as url from "../state.js";
import { actionDialog, notify } from "../ui.js";
import { baseShort, baseWords, flagsOf, maxAttempts, riskBadge } from "../taskbits.js";
import { mountDrawer } from "./drawer.js";

export const STATUSES = [
  "backlog",
  "blocked",
  "ready",
  "claimed",
  "needs_verification",
  "verified",
  "landing",
  "needs_human",
  "done",
  "cancelled",
];
const POLL_MS = 3000;

function agentsOf(task) {
  const out = new Set(task.attempts.map((a) => a.actor));
  if (task.claim) out.add(task.claim.actor);
  return out;
}

export function mountBoard(root, app) {
  const project = () => app.project;
  let tasks = [];
  let queue = new Map(); // task id -> its landing queue entry (position, state)
  const selected = new Set();
  const cards = new Map(); // id -> {li, sig}
  let inflight = false;
  let stopped = false;

  const statusSel = h("select", { id: "filter-status" }, h("option", { value: "" }, "every status"), STATUSES.map((s) => h("option", { value: s }, label(s))));
  const riskSel = h("select", { id: "filter-risk" }, h("option", { value: "" }, "any risk"), ["low", "medium", "high"].map((r) => h("option", { value: r }, r)));
  const agentSel = h("select", { id: "filter-agent" }, h("option", { value: "" }, "any agent"));
  const textIn = h("input", { id: "filter-text", type: "search", placeholder: "id, title or description" });
  const batchBtn = h("button", { type: "button", class: "primary", disabled: true }, "Accept selected (0)");
  // Verified work merged together onto the base tip, then accepted: offered beside the batch
  // accept while verification is on (the server refuses it, with its reason, under merge: none).
  const togetherBtn = h("button", { type: "button", class: "secondary", disabled: true, hidden: true }, "Verify together, then accept (0)");
  const clearBtn = h("button", { type: "button", class: "secondary", disabled: true }, "Clear selection");
  const columnsEl = h("div", { class: "columns" });
  const drawerEl = h("aside", { class: "drawer", id: "drawer", hidden: true, "aria-labelledby": "drawer-title", tabindex: "-1" });
  const countEl = h("p", { class: "board-count", role: "status" });

  const columns = new Map();
  for (const s of STATUSES) {
    const count = h("span", { class: "count" });
    const list = h("ol", { class: "cards", "data-scroll-key": s });
    const section = h("section", { class: `column status-${s}`, "aria-labelledby": `col-${s}`, dataset: { status: s } }, h("h2", { id: `col-${s}` }, label(s), " ", count), list);
    columns.set(s, { section, list, count });
    columnsEl.append(section);
  }

  const toolbar = h(
    "div",
    { class: "toolbar", role: "search", "aria-label": "Filter tasks" },
    h("div", { class: "field" }, h("label", { for: statusSel.id }, "Status"), statusSel),
    h("div", { class: "field" }, h("label", { for: riskSel.id }, "Risk"), riskSel),
    h("div", { class: "field" }, h("label", { for: agentSel.id }, "Agent"), agentSel),
    h("div", { class: "field grow" }, h("label", { for: textIn.id }, "Text"), textIn),
    h("div", { class: "batch", role: "group", "aria-label": "Batch accept (low risk)" }, batchBtn, togetherBtn, clearBtn),
  );
  replace(root, h("h1", { class: "sr-only" }, `Board of ${project()}`), toolbar, countEl, h("div", { class: "board-body" }, columnsEl, drawerEl));

  const drawer = mountDrawer(drawerEl, app, {
    onClose: () => url.set({ task: null }),
    onChanged: () => refresh(),
  });

  function readFilters() {
    statusSel.value = url.param("status");
    riskSel.value = url.param("risk");
    textIn.value = url.param("q");
    const agent = url.param("agent");
    if (agent && ![...agentSel.options].some((o) => o.value === agent)) agentSel.append(h("option", { value: agent }, agent));
    agentSel.value = agent;
  }
  readFilters();
  statusSel.addEventListener("change", () => url.set({ status: statusSel.value }));
  riskSel.addEventListener("change", () => url.set({ risk: riskSel.value }));
  agentSel.addEventListener("change", () => url.set({ agent: agentSel.value }));
  textIn.addEventListener("input", () => url.set({ q: textIn.value }));

  function visible(task) {
    const f = url.params();
    if (f.status && task.status !== f.status) return false;
    if (f.risk && task.risk !== f.risk) return false;
    if (f.agent && !agentsOf(task).has(f.agent)) return false;
    if (f.q) {
      const q = f.q.toLowerCase();
      if (![task.id, task.title, task.description].some((s) => s.toLowerCase().includes(q))) return false;
    }
    return true;
  }

  // Whether taskgate lands this project's accepted work (verifier config `land`): the Landing
  // lane shows then, or while a task is in it.
  function lands() {
    const p = app.projectRecord;
    return Boolean(p.verification_on && p.verifier_config && p.verifier_config.land);
  }

  function batchable(task) {
    return (task.actions || []).includes("batch_accept");  // the server's rule, low risk and acceptable
  }

  function renderCard(task) {
    const parts = [];
    const head = h("div", { class: "card-head" });
    const ident = h("span", { class: "card-ident" });
    if (batchable(task)) {
      const box = h("input", { type: "checkbox", checked: selected.has(task.id), dataset: { key: `select-${task.id}` } });
      box.addEventListener("change", () => {
        if (box.checked) selected.add(task.id);
        else selected.delete(task.id);
        updateBatch();
      });
      ident.append(h("label", { class: "select-box" }, box, h("span", { class: "sr-only" }, `Select ${task.id} for batch accept`)));
    }
    // The checkbox and the id stay together on one line; the risk badge wraps below if it must.
    ident.append(h("span", { class: "card-id", title: task.id }, task.id));
    head.append(ident, riskBadge(task.risk));
    parts.push(head);
    parts.push(h("button", { type: "button", class: "card-title", dataset: { key: `open-${task.id}` }, "aria-controls": "drawer", onClick: () => url.set({ task: task.id }, { push: true }) }, task.title));
    parts.push(
      h("p", { class: "card-meta" }, h("span", {}, `priority ${task.priority}`), h("span", {}, `attempts ${task.attempts_used}/${maxAttempts(task, app.projectRecord)}`)),
    );
    if (task.claim) {
      parts.push(
        h(
          "p",
          { class: "card-claim" },
          h("span", { class: "claimant" }, task.claim.actor),
          h("span", {}, "lease ", h("span", { class: "countdown", dataset: { expires: task.claim.expires_at } }, countdown(task.claim.expires_at))),
        ),
      );
    }
    if (task.status === "verified" && task.verified_base) {
      // The base the verdict holds for, in a few characters; the drawer says it in full.
      parts.push(h("p", { class: "card-base", title: `verified on ${task.verified_on || baseWords(task.verified_base)}` }, "on ", h("span", { class: "card-base-at" }, baseShort(task.verified_base))));
    }
    if (task.status === "landing") {
      const entry = queue.get(task.id);
      parts.push(h("p", { class: "card-landing" }, entry ? `#${entry.position} · ${entry.state}` : "in the landing queue"));
    }
    if (task.landed) {
      parts.push(h("p", { class: "card-landed", title: `landed on ${task.landed.branch} at ${task.landed.commit}` }, "landed at ", h("span", { class: "card-base-at" }, task.landed.commit.slice(0, 7))));
    }
    const flags = flagsOf(task);
    if (flags.length) parts.push(h("ul", { class: "flags" }, flags.map(([kind, text]) => h("li", { class: `flag flag-${kind}` }, text))));
    return parts;
  }

  function updateBatch() {
    for (const id of [...selected]) {
      const t = tasks.find((x) => x.id === id);
      if (!t || !batchable(t)) selected.delete(id);
    }
    batchBtn.textContent = `Accept selected (${selected.size})`;
    batchBtn.disabled = selected.size === 0;
    clearBtn.disabled = selected.size === 0;
    const verified = [...selected].every((id) => tasks.find((x) => x.id === id)?.status === "verified");
    togetherBtn.hidden = !app.projectRecord.verification_on;
    togetherBtn.textContent = `Verify together, then accept (${selected.size})`;
    togetherBtn.disabled = selected.size === 0 || !verified;
  }

  function render() {
    const agents = new Set();
    for (const t of tasks) for (const a of agentsOf(t)) agents.add(a);
    const current = agentSel.value;
    const have = new Set([...agentSel.options].map((o) => o.value));
    for (const a of [...agents].sort()) if (!have.has(a)) agentSel.append(h("option", { value: a }, a));
    agentSel.value = current;

    const f = url.params();
    const shown = tasks.filter(visible);
    const byStatus = new Map(STATUSES.map((s) => [s, []]));
    for (const t of shown) byStatus.get(t.status).push(t);
    const seen = new Set();
    for (const [status, col] of columns) {
      const list = byStatus.get(status).sort((a, b) => b.priority - a.priority || a.number - b.number);
      if (status === "landing") list.sort((a, b) => (queue.get(a.id)?.position ?? 1e9) - (queue.get(b.id)?.position ?? 1e9));
      col.section.hidden = (Boolean(f.status) && f.status !== status) || (status === "landing" && !lands() && list.length === 0 && f.status !== status);
      col.count.textContent = `(${list.length})`;
      // An empty column shrinks to its heading, so the nine fit a 1,280 px window (unless it is
      // the one column a status filter asked for).
      col.section.classList.toggle("empty", list.length === 0 && !f.status);
      const wanted = [];
      for (const t of list) {
        seen.add(t.id);
        const sig = JSON.stringify([t, selected.has(t.id), batchable(t), queue.get(t.id) || null]);
        let card = cards.get(t.id);
        if (!card) {
          card = { li: h("li", { class: "card", dataset: { task: t.id } }), sig: "" };
          cards.set(t.id, card);
        }
        if (card.sig !== sig) {
          card.li.className = `card risk-${t.risk}${t.stale ? " stale" : ""}${t.id === url.param("task") ? " open" : ""}`;
          rerender(card.li, () => renderCard(t));
          card.sig = sig;
        }
        wanted.push(card.li);
      }
      const same = wanted.length === col.list.children.length && wanted.every((li, i) => col.list.children[i] === li);
      if (!same) {
        const active = document.activeElement;
        const key = active && col.section.contains(active) ? active.dataset.key : null;
        col.list.replaceChildren(...wanted);
        if (key && document.activeElement !== active) {
          const again = columnsEl.querySelector(`[data-key="${CSS.escape(key)}"]`);
          if (again) again.focus({ preventScroll: true });
        }
      }
    }
    for (const id of [...cards.keys()]) if (!seen.has(id)) cards.delete(id);
    countEl.textContent = `${shown.length} of ${tasks.length} tasks shown`;
    updateBatch();
  }

  async function refresh() {
    if (inflight || stopped) return;
    inflight = true;
    try {
      const [list, proj] = await Promise.all([all(`/api/projects/${enc(project())}/tasks`), app.reloadProject()]);
      void proj;
      tasks = list;
      const landing = lands() || list.some((t) => t.status === "landing");
      const q = landing ? await get(`/api/projects/${enc(project())}/queue`) : { entries: [] };
      queue = new Map(q.entries.map((e) => [e.task_id, e]));
      render();
      app.online(true);
      await syncDrawer();
    } catch (err) {
      app.online(false, err);
    } finally {
      inflight = false;
    }
  }

  async function syncDrawer() {
    const id = url.param("task");
    for (const [tid, card] of cards) card.li.classList.toggle("open", tid === id);
    if (!id) {
      drawer.close();
      return;
    }
    await drawer.show(id);
  }

  batchBtn.addEventListener("click", async () => {
    const ids = [...selected];
    const out = await actionDialog({
      title: `Accept ${ids.length} low-risk task${ids.length === 1 ? "" : "s"}?`,
      body: [h("p", {}, "Each is accepted on its own; any the server refuses are listed with the reason."), h("ul", {}, ids.map((i) => h("li", {}, i)))],
      confirm: "Accept all selected",
      run: () => post(`/api/projects/${enc(project())}/accept`, { task_ids: ids }),
    });
    if (!out) return;
    selected.clear();
    const lines = [`Accepted: ${out.accepted.map((t) => t.id).join(", ") || "none"}.`];
    for (const w of out.warnings || []) lines.push(`Warning: ${w}.`);
    notify(lines.join(" "));
    if (out.refused.length) {
      app.showBatchRefusals(out.refused);
    }
    await refresh();
  });
  togetherBtn.addEventListener("click", async () => {
    const ids = [...selected];
    const out = await actionDialog({
      title: `Verify ${ids.length} task${ids.length === 1 ? "" : "s"} together, then accept?`,
      body: [
        h(
          "p",
          {},
          "The verifier merges their commits, in this order, onto the base branch's tip and runs the checks once. " +
            "What passes together is accepted by you; a task that breaks the batch goes back to ready with a finding, using no attempt.",
        ),
        h("ol", {}, ids.map((i) => h("li", {}, i))),
      ],
      confirm: "Verify together",
      run: () => post(`/api/projects/${enc(project())}/accept`, { task_ids: ids, together: true }),
    });
    if (!out) return;
    selected.clear();
    notify(`Batch ${out.batch.id} queued: ${ids.join(", ")} stay verified until the verifier has run them together.`);
    await refresh();
  });
  clearBtn.addEventListener("click", () => {
    selected.clear();
    render();
  });

  const unlisten = url.onChange(() => {
    readFilters();
    render();
    syncDrawer();
  });
  const tick = setInterval(() => {
    for (const el of root.querySelectorAll(".countdown[data-expires]")) el.textContent = countdown(el.dataset.expires);
  }, 1000);
  const poll = setInterval(() => {
    if (!document.hidden) refresh();
  }, POLL_MS);
  const onVisible = () => {
    if (!document.hidden) refresh();
  };
  document.addEventListener("visibilitychange", onVisible);
  refresh();

  return {
    refresh,
    unmount() {
      stopped = true;
      clearInterval(tick);
      clearInterval(poll);
      unlisten();
      document.removeEventListener("visibilitychange", onVisible);
      drawer.close();
    },
  };
}
