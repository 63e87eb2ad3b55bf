// Charts as inline SVG built node by node (no library, no request, nothing the CSP refuses).
// Each chart is an <svg role="img"> with a <title> and a description a screen reader reads.

import { h, svg } from "./dom.js";

// Vertical bars: [{label, value}] → svg. Labels under every nth bar so they never overlap.
export function barChart(points, { title, unit = "", width = 400, height = 180 }) {
  const pad = { top: 16, right: 8, bottom: 40, left: 36 };
  const innerW = width - pad.left - pad.right;
  const innerH = height - pad.top - pad.bottom;
  const max = Math.max(1, ...points.map((p) => p.value));
  const step = innerW / Math.max(1, points.length);
  const every = Math.max(1, Math.ceil(points.length / 10));
  const desc = points.map((p) => `${p.label}: ${p.value}${unit}`).join(", ");
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart", "aria-label": `${title}. ${desc}` }, svg("title", {}, title));
  for (const frac of [0, 0.5, 1]) {
    const y = pad.top + innerH * (1 - frac);
    root.append(svg("line", { x1: pad.left, x2: width - pad.right, y1: y, y2: y, class: "grid" }));
    root.append(svg("text", { x: pad.left - 6, y: y + 4, class: "axis", "text-anchor": "end" }, String(Math.round(max * frac * 10) / 10)));
  }
  points.forEach((p, i) => {
    const barH = (p.value / max) * innerH;
    const x = pad.left + i * step + step * 0.15;
    const bar = svg("rect", { x, y: pad.top + innerH - barH, width: step * 0.7, height: Math.max(barH, p.value ? 1 : 0), class: "bar" }, svg("title", {}, `${p.label}: ${p.value}${unit}`));
    root.append(bar);
    if (i % every === 0) {
      root.append(svg("text", { x: x + step * 0.35, y: height - pad.bottom + 16, class: "axis", "text-anchor": "middle" }, p.label));
    }
  });
  return root;
}

// Horizontal bars with their values written out: [{label, value, text}].
export function hBars(rows, { title, width = 400 }) {
  const rowH = 28;
  const labelW = 110;
  const height = rows.length * rowH + 8;
  const max = Math.max(1e-9, ...rows.map((r) => r.value || 0));
  const desc = rows.map((r) => `${r.label}: ${r.text}`).join(", ");
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart", "aria-label": `${title}. ${desc}` }, svg("title", {}, title));
  rows.forEach((r, i) => {
    const y = 4 + i * rowH;
    const w = r.value ? ((width - labelW - 70) * r.value) / max : 0;
    root.append(svg("text", { x: labelW - 8, y: y + 17, class: "axis", "text-anchor": "end" }, r.label));
    root.append(svg("rect", { x: labelW, y: y + 4, width: Math.max(w, 0), height: rowH - 10, class: "bar" }));
    root.append(svg("text", { x: labelW + w + 6, y: y + 17, class: "value" }, r.text));
  });
  return root;
}

// A share as a ring: passed of total.
export function ring(part, total, { title }) {
  const size = 140;
  const r = 54;
  const c = 2 * Math.PI * r;
  const frac = total ? part / total : 0;
  const text = total ? `${Math.round(frac * 100)}%` : "no data";
  const root = svg(
    "svg",
    { viewBox: `0 0 ${size} ${size}`, role: "img", class: "chart ring", "aria-label": `${title}: ${text} (${part} of ${total})` },
    svg("title", {}, title),
    svg("circle", { cx: size / 2, cy: size / 2, r, class: "ring-track" }),
    svg("circle", { cx: size / 2, cy: size / 2, r, class: "ring-value", "stroke-dasharray": `${c * frac} ${c}`, transform: `rotate(-90 ${size / 2} ${size / 2})` }),
    svg("text", { x: size / 2, y: size / 2 + 6, "text-anchor": "middle", class: "ring-text" }, text),
  );
  return root;
}

export function figure(caption, chart, ...notes) {
  return h("figure", { class: "chart-figure" }, h("figcaption", {}, caption), chart, ...notes);
}
