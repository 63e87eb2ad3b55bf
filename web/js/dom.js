// DOM building without innerHTML: every string lands as text, so nothing a task, spec or
// agent wrote can become markup or script. (The server's Content-Security-Policy also refuses
// any HTML sink outright: require-trusted-types-for 'script' with no policy.)

const SVG_NS = "http://www.w3.org/2000/svg";

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

function assign(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") {
      el.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "value" || key === "checked" || key === "selected") {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
}

// h("button", {class: "x", onClick: fn}, "Text", child, [more])
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  assign(el, attrs);
  append(el, children);
  return el;
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  assign(el, attrs);
  append(el, children);
  return el;
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Re-render `el` with `render()` while keeping the user's place: the focused control (by its
// data-key), scroll offsets, and which <details> were open (by their data-key).
export function rerender(el, render) {
  const active = document.activeElement;
  const focusKey = active && el.contains(active) ? active.dataset.key : undefined;
  const open = new Set([...el.querySelectorAll("details[open][data-key]")].map((d) => d.dataset.key));
  const scrolls = [...el.querySelectorAll("[data-scroll-key]")].map((s) => [s.dataset.scrollKey, s.scrollTop]);
  const top = el.scrollTop;
  replace(el, render());
  for (const d of el.querySelectorAll("details[data-key]")) if (open.has(d.dataset.key)) d.open = true;
  for (const [key, y] of scrolls) {
    const s = el.querySelector(`[data-scroll-key="${CSS.escape(key)}"]`);
    if (s) s.scrollTop = y;
  }
  el.scrollTop = top;
  if (focusKey !== undefined) {
    const again = el.querySelector(`[data-key="${CSS.escape(focusKey)}"]`);
    if (again) again.focus({ preventScroll: true });
  }
}

let uid = 0;
export function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

// A labelled form control: <label for> + control, wrapped in a div.field
export function field(label, control, hint) {
  if (!control.id) control.id = nextId("f");
  const hintEl = hint ? h("p", { class: "field-hint", id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

export function ago(iso, now = Date.now()) {
  const s = Math.round((now - new Date(iso).getTime()) / 1000);
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

// mm:ss (or h:mm:ss) until `iso`; "expired" once past.
export function countdown(iso, now = Date.now()) {
  const left = Math.floor((new Date(iso).getTime() - now) / 1000);
  if (left <= 0) return "expired";
  const hh = Math.floor(left / 3600);
  const mm = Math.floor((left % 3600) / 60);
  const ss = String(left % 60).padStart(2, "0");
  return hh ? `${hh}:${String(mm).padStart(2, "0")}:${ss}` : `${mm}:${ss}`;
}

export function label(status) {
  return status.replaceAll("_", " ");
}
