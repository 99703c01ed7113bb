// "Metrics vs humans" panel: the stored metrics' agreement with the raters (with CIs) and a scatter plot
// of one metric against the human mean z per output. URLs come from the panel's data-* attributes.

import { clear, fmt, h, linear, niceDomain, s, svgRoot } from "./dom.js";
import { fetchPatiently } from "./live.js";
import { CATEGORY_COLOURS, CATEGORY_NAMES } from "./palette.js";

let panel = document.getElementById("metrics-panel");
const $ = (id) => document.getElementById(id);
const COLUMN_NAMES = { all: "All", paraphrase: "Paraphrase", split: "Splitting", deletion: "Deletion" };
const KENDALL_COLUMNS = ["paraphrase", "split", "deletion", "all"];

/** Value and interval of one metric in one column: the tau-like per category or Pearson per aspect. */
function cellOf(result, entry, column) {
  if (result.kind === "kendall") {
    const [low, high] = entry.kendall_ci[column] || [null, null];
    return { value: entry.kendall[column], low, high, pairs: entry.pairs[column] };
  }
  const [low, high] = entry.pearson_ci[column] || [null, null];
  return { value: entry.pearson[column], low, high, n: entry.n[column] };
}

function columnsOf(result) {
  const names = Object.keys(result.metrics);
  if (result.kind !== "kendall") return [...new Set(names.flatMap((n) => Object.keys(result.metrics[n].pearson)))];
  return KENDALL_COLUMNS.filter((c) => names.some((n) => {
    const pairs = result.metrics[n].pairs[c];
    return pairs && pairs.concordant + pairs.discordant > 0;
  }));
}

/** Metrics significantly below the best of a column, from the paired bootstrap tests. */
function belowBest(result, column, best) {
  const below = new Set();
  for (const p of result.paired) {
    if (p.column !== column || !p.significant) continue;
    if (p.metric_a === best && p.difference > 0) below.add(p.metric_b);
    if (p.metric_b === best && p.difference < 0) below.add(p.metric_a);
  }
  return below;
}

/** A metric's perturbation-sensitivity summary and sanity checks; the slope of each perturbation in its tooltip. */
export function sensitivityCell(report) {
  if (!report) return h("td", { class: "sensitivity muted small" }, "no testbed run");
  const detail = report.perturbations.map((p) =>
    `${p.perturbation} (${p.criterion}): slope ${fmt(p.slope, 3)}, p_holm ${fmt(p.p_holm, 3)}${p.as_expected ? " ✓" : " ✗"}`);
  const on = `${report.measured_on}${report.current ? "" : " (another signature)"}`;
  // The sanity checks of the same run (an identical output scores best, an unrelated one worst), where it had them.
  const sanity = report.sanity ? h("div", { class: "muted sanity" }, `sanity: ${report.sanity_text}`) : null;
  return h("td", { class: "sensitivity small", title: [on, ...detail].join("\n") }, report.responds_as_expected, sanity);
}

/** The metrics table; with ``cardUrl`` (a URL holding METRIC), each metric's name links to its metric card. */
export function metricsTable(table, result, cardUrl = "") {
  const names = Object.keys(result.metrics);
  if (!names.length) return clear(table, h("tbody", {}, h("tr", {}, h("td", { class: "muted" }, "No stored scores."))));
  const columns = columnsOf(result);
  const measure = result.kind === "kendall" ? "Kendall τ-like" : "Pearson r";
  const best = new Map();
  for (const c of columns) {
    let top = null;
    for (const n of names) {
      const v = cellOf(result, result.metrics[n], c).value;
      if (v !== null && v !== undefined && (top === null || v > cellOf(result, result.metrics[top], c).value)) top = n;
    }
    best.set(c, { name: top, below: top ? belowBest(result, c, top) : new Set() });
  }
  const head = h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Metric"),
    columns.map((c) => h("th", { scope: "col", class: "num" }, COLUMN_NAMES[c] || c)),
    h("th", { scope: "col", class: "sensitivity" }, "Responds as expected to (perturbation testbed); sanity checks")));
  const body = h("tbody", {}, names.map((n) => h("tr", {},
    h("td", { class: "metric-name", title: result.metrics[n].signature || "" }, cardUrl
      ? h("a", { href: cardUrl.replace("METRIC", encodeURIComponent(n)), "aria-label": `${n}: metric card` }, h("code", {}, n))
      : h("code", {}, n)),
    columns.map((c) => {
      const cell = cellOf(result, result.metrics[n], c);
      const { name: top, below } = best.get(c);
      const isBest = top !== null && cell.value === cellOf(result, result.metrics[top], c).value;
      const count = cell.pairs ? `${cell.pairs.concordant + cell.pairs.discordant} pairs` : `${cell.n ?? 0} outputs`;
      return h("td", { class: isBest ? "num strong" : "num", title: count },
        fmt(cell.value, 3), below.has(n) ? h("sup", {}, "*") : null, " ",
        h("span", { class: "ci" }, `[${fmt(cell.low, 3)}, ${fmt(cell.high, 3)}]`));
    }),
    sensitivityCell(result.metrics[n].sensitivity))));
  const caption = `${measure} per ${result.kind === "kendall" ? "category" : "aspect"} · ${result.outputs} outputs${result.outputs_not_scored ? ` (${result.outputs_not_scored} not scored by every metric)` : ""}`;
  return clear(table, h("caption", { class: "small muted" }, caption), head, body);
}

/** The system level of the same API answer (`meta_evaluate --level system` prints the same figures): per human
 * column, each metric's Pearson, Kendall τ-b, pairwise accuracy and tie-calibrated accuracy between its system
 * means and the humans', 95% intervals over sources, and its significance cluster on pairwise accuracy. */
export function systemTable(table, result) {
  const system = result.system;
  if (!system || !system.humans || !system.humans.length || system.systems.length < 2) {
    return clear(table, h("tbody", {}, h("tr", {}, h("td", { class: "muted" }, "Fewer than two systems rated: no system-level figures."))));
  }
  const interval = (cell) => h("span", { class: "ci" }, `[${fmt(cell.ci_sources[0], 3)}, ${fmt(cell.ci_sources[1], 3)}]`);
  const head = h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Metric"), h("th", { scope: "col" }, "Humans"),
    ["Pearson r", "Kendall τ-b", "Pairwise accuracy", "acc_eq (ε)", "Cluster"].map((t) => h("th", { scope: "col", class: "num" }, t))));
  const rows = [];
  for (const column of system.humans) {
    const clusters = system.clusters[column].accuracy;
    for (const name of clusters.order) {
      const cells = system.metrics[name][column];
      const acc = cells.accuracy;
      rows.push(h("tr", {}, h("td", { class: "metric-name" }, h("code", {}, name)), h("td", {}, column),
        h("td", { class: "num" }, fmt(cells.pearson.value, 3), " ", interval(cells.pearson)),
        h("td", { class: "num" }, fmt(cells.kendall.value, 3), " ", interval(cells.kendall)),
        h("td", { class: "num", title: `${acc.agree} of ${acc.pairs} system pairs ordered as the humans order them` },
          fmt(acc.value, 3), " ", interval(acc)),
        h("td", { class: "num" }, fmt(cells.acc_eq.value, 3), ` (${cells.acc_eq.epsilon === null ? "n/a" : fmt(cells.acc_eq.epsilon, 3)})`),
        h("td", { class: "num cluster", title: clusters.test }, String(clusters.rank[name]))));
    }
  }
  const caption = `System level · ${system.systems.length} systems · 95% intervals: bootstrap over sources · cluster 1 = best on pairwise accuracy (metrics in one cluster are not significantly different)`;
  return clear(table, h("caption", { class: "small muted" }, caption), head, h("tbody", {}, rows));
}

function pearson(xs, ys) {
  const n = xs.length;
  if (n < 2) return null;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0, sxx = 0, syy = 0;
  for (let i = 0; i < n; i += 1) {
    sxy += (xs[i] - mx) * (ys[i] - my); sxx += (xs[i] - mx) ** 2; syy += (ys[i] - my) ** 2;
  }
  return sxx && syy ? sxy / Math.sqrt(sxx * syy) : null;
}

/** Scatter: metric (x) against the human score (y) per output, coloured by category. */
export function metricScatter(node, data, width) {
  const points = data.points;
  if (!points.length) return clear(node, h("p", { class: "muted" }, "No rated output has this metric's score."));
  const height = 320;
  const margin = { left: 52, right: 16, top: 34, bottom: 42 };
  const xs = points.map((p) => p.value);
  const ys = points.map((p) => p.human);
  const x = linear(niceDomain(Math.min(...xs), Math.max(...xs), 6), [margin.left, width - margin.right]);
  const y = linear(niceDomain(Math.min(...ys), Math.max(...ys), 5), [height - margin.bottom, margin.top]);
  const svg = svgRoot(width, height, `${data.metric} against the ${data.human} of each output`);
  const xTicks = x.ticks(6);
  const yTicks = y.ticks(6);
  const digits = (ticks) => { const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) : 1; return step >= 1 ? 0 : step >= 0.1 ? 1 : 2; };
  for (const t of xTicks) {
    svg.append(s("line", { x1: x(t), x2: x(t), y1: margin.top, y2: height - margin.bottom, class: "grid" }));
    svg.append(s("text", { x: x(t), y: height - margin.bottom + 16, class: "tick", "text-anchor": "middle", text: fmt(t, digits(xTicks)) }));
  }
  for (const t of yTicks) {
    svg.append(s("line", { x1: margin.left, x2: width - margin.right, y1: y(t), y2: y(t), class: t === 0 ? "zero" : "grid" }));
    svg.append(s("text", { x: margin.left - 6, y: y(t) + 4, class: "tick", "text-anchor": "end", text: fmt(t, digits(yTicks)) }));
  }
  svg.append(s("text", { x: width - margin.right, y: height - 6, class: "axis-label", "text-anchor": "end", text: data.metric }));
  svg.append(s("text", { x: margin.left, y: margin.top - 12, class: "axis-label", text: `human ${data.human}` }));
  const r = pearson(xs, ys);
  svg.append(s("text", { x: width - margin.right, y: margin.top - 12, class: "tick", "text-anchor": "end",
                         text: `${points.length} outputs · Pearson r = ${fmt(r, 3)}` }));
  const dots = s("g", { class: "scatter" });
  for (const p of points) {
    const colour = CATEGORY_COLOURS[p.category] || CATEGORY_COLOURS.unknown;
    dots.append(s("circle", { cx: x(p.value), cy: y(p.human), r: 3.2, fill: colour, "fill-opacity": 0.6, stroke: colour },
      s("title", { text: `${p.system} on ${p.source} (${CATEGORY_NAMES[p.category] || p.category}): ${data.metric} ${fmt(p.value, 3)}, human ${fmt(p.human, 3)}` })));
  }
  svg.append(dots);
  const present = [...new Set(points.map((p) => p.category))];
  const legend = h("p", { class: "legend small" }, present.map((c) => [
    h("span", { class: "swatch", style: `background: ${CATEGORY_COLOURS[c] || CATEGORY_COLOURS.unknown}` }),
    ` ${CATEGORY_NAMES[c] || c} `]));
  return clear(node, svg, legend);
}

async function getJson(url) {
  const response = await fetchPatiently(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.detail || `HTTP ${response.status}`);
  return body;
}

async function drawScatter() {
  const select = $("metrics-scatter-metric");
  const node = $("metrics-scatter");
  if (!select || !node) return;
  try {
    const url = `${panel.dataset.pointsUrl}?metric=${encodeURIComponent(select.value)}`;
    metricScatter(node, await getJson(url), Math.max(320, Math.floor(node.getBoundingClientRect().width)));
  } catch (error) {
    clear(node, h("p", { class: "error" }, String(error.message || error)));
  }
}

async function start() {
  panel = document.getElementById("metrics-panel");
  if (!panel || !panel.dataset.stored) return;
  const select = $("metrics-scatter-metric");
  select.addEventListener("change", drawScatter);
  const preferred = ["sari", "lens"].map((p) => [...select.options].find((o) => o.value.startsWith(p))).find(Boolean);
  if (preferred) select.value = preferred.value;
  drawScatter();
  try {
    const result = await getJson(panel.dataset.metricsUrl);
    metricsTable($("metrics-table"), result, panel.dataset.cardUrl);
    systemTable($("metrics-system-table"), result);
    panel.dataset.ready = "true";
  } catch (error) {
    clear($("metrics-table"), h("tbody", {}, h("tr", {}, h("td", { class: "error" }, String(error.message || error)))));
  }
}

start();
// The dashboard puts a fresh panel in place when a scoring job ends (live.js, refreshRegions).
document.addEventListener("live:refreshed", (event) => { if (event.detail.regions.includes("metrics")) start(); });
