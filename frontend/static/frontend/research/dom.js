// Small DOM and SVG builders: data only ever reaches the page as text nodes and attribute values.

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.setAttribute("class", value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An HTML element: h("td", {class: "num"}, "0.42"). */
export function h(tag, attrs = {}, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element: s("rect", {x: 0, y: 0, width: 10, height: 4}). */
export function s(tag, attrs = {}, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** A root <svg> of the given pixel size, labelled for screen readers. */
export function svgRoot(width, height, label) {
  return s("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label,
                    class: "chart" });
}

/** Linear scale from a domain onto a range, with "nice" ticks. */
export function linear([d0, d1], [r0, r1]) {
  const span = d1 - d0 || 1;
  const scale = (v) => r0 + ((v - d0) / span) * (r1 - r0);
  scale.ticks = (count = 5) => niceTicks(d0, d1, count);
  scale.domain = [d0, d1];
  return scale;
}

export function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const unit = raw / power;
  return (unit >= 5 ? 10 : unit >= 2 ? 5 : unit >= 1 ? 2 : 1) * power;
}

export function niceTicks(min, max, count = 5) {
  if (!(max > min)) return [min];
  const step = niceStep(max - min, count);
  const ticks = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(+v.toFixed(10));
  return ticks;
}

/** Extend [min, max] outwards to whole steps. */
export function niceDomain(min, max, count = 5) {
  if (!(max > min)) return [min - 1, max + 1];
  const step = niceStep(max - min, count);
  return [Math.floor(min / step) * step, Math.ceil(max / step) * step];
}

export function fmt(value, digits = 2) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  return Number(value).toFixed(digits).replace(/^-(0\.0*)$/, "$1").replace("-", "−");
}

export function clear(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

/** Approximate text width in pixels for label columns (12px system-ui). */
export function textWidth(text, px = 12) {
  return String(text).length * px * 0.56;
}
