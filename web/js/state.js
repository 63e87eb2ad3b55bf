// What the user is looking at lives in the URL (project, view, filters, open task or spec), so
// a reload, a bookmark or the back button brings them back to the same place.

const listeners = new Set();

export function param(name) {
  return new URLSearchParams(location.search).get(name) || "";
}

export function params() {
  return Object.fromEntries(new URLSearchParams(location.search));
}

// set({view: "specs", spec: null}, {push: true}); null or "" removes a parameter. `silent`:
// record it without telling the listeners (the caller renders what follows itself).
export function set(changes, { push = false, silent = false } = {}) {
  const p = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === undefined || v === "") p.delete(k);
    else p.set(k, String(v));
  }
  const qs = p.toString();
  const url = `${location.pathname}${qs ? `?${qs}` : ""}`;
  if (url === `${location.pathname}${location.search}`) return;
  if (push) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
  if (!silent) for (const fn of listeners) fn(changes);
}

export function onChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

window.addEventListener("popstate", () => {
  for (const fn of listeners) fn(null);
});
