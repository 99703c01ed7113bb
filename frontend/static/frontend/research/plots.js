// Hand-written SVG plots of the campaign report: leaderboard with CIs and clusters, alpha,
// rating distributions, category mix and per-system text features.

import { clear, fmt, h, linear, niceDomain, s, svgRoot, textWidth } from "./dom.js";
import { CATEGORY_COLOURS, CATEGORY_NAMES, clusterColour } from "./palette.js";

const ROW = 26;
const FONT = 12;
const TICK_FONT = 11;
// Narrower than this (a phone), a plot shortens its label column and leaves out secondary columns (the
// intervals are in the table below each plot); a plot area narrower than MIN_PLOT makes it draw wider and
// scroll inside its region.
const NARROW = 520;
const MIN_PLOT = 110;

function labelWidth(names, min = 90, max = 230) {
  return Math.min(max, Math.max(min, ...names.map((n) => textWidth(n) + 14)));
}

/** The label column: as wide as the names need, at most 30% of a narrow plot (longer names are cut). */
function labelColumn(names, width, min = 90, max = 230) {
  const wanted = labelWidth(names, min, max);
  return width < NARROW ? Math.min(wanted, Math.max(64, Math.round(width * 0.3))) : wanted;
}

/** Every k-th tick label, k the smallest step at which neighbouring labels keep 6 px apart and the last tick
 * keeps its label; the first and last alone when no step fits. */
function labelledTicks(x, ticks, digits) {
  if (ticks.length < 3) return ticks;
  const widest = Math.max(...ticks.map((t) => textWidth(fmt(t, digits), TICK_FONT)));
  const gap = Math.abs(x(ticks[1]) - x(ticks[0]));
  const intervals = ticks.length - 1;
  for (let k = 1; k < intervals; k += 1) {
    if (intervals % k === 0 && gap * k >= widest + 6) return ticks.filter((_, i) => i % k === 0);
  }
  return [ticks[0], ticks[intervals]];
}

function truncate(name, width) {
  const chars = Math.floor(width / (FONT * 0.56));
  return name.length > chars ? `${name.slice(0, Math.max(1, chars - 1))}…` : name;
}

function axis(svg, x, ticks, { top, bottom, label, digits = 1, zero = null }) {
  const labelled = new Set(labelledTicks(x, ticks, digits));
  for (const t of ticks) {
    svg.append(s("line", { x1: x(t), x2: x(t), y1: top, y2: bottom, class: "grid" }));
    if (labelled.has(t)) {
      svg.append(s("text", { x: x(t), y: top - 6, class: "tick", "text-anchor": "middle", text: fmt(t, digits) }));
    }
  }
  if (zero !== null) svg.append(s("line", { x1: x(zero), x2: x(zero), y1: top, y2: bottom, class: "zero" }));
  if (label) svg.append(s("text", { x: x(ticks.at(-1)), y: top - 20, class: "axis-label", "text-anchor": "end",
                                    text: label }));
}

function tickDigits(ticks) {
  const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) : 1;
  return step >= 1 ? 0 : step >= 0.1 ? 1 : 2;
}

/** Leaderboard: one row per system, mean with 95% CI, shaded bands for significance clusters. */
export function leaderboardPlot(node, report, scale, available) {
  const rows = report.systems;
  if (!rows.length) return clear(node, h("p", { class: "muted" }, "No ratings yet."));
  const pick = scale === "raw"
    ? (r) => [r.raw_mean, r.raw_ci_low, r.raw_ci_high]
    : (r) => [r.z_mean, r.ci_low, r.ci_high];
  const values = rows.flatMap((r) => pick(r)).filter((v) => v !== null && v !== undefined);
  const [lo, hi] = scale === "raw"
    ? niceDomain(Math.max(0, Math.min(...values) - 2), Math.min(100, Math.max(...values) + 2), 6)
    : niceDomain(Math.min(...values, 0), Math.max(...values, 0), 6);
  const clusterCol = 34;
  const narrow = available < NARROW;
  const labelW = labelColumn(rows.map((r) => r.system), available);
  const valueW = narrow ? 64 : 156;
  const pad = narrow ? 12 : 28;
  const width = Math.max(available, clusterCol + labelW + 10 + MIN_PLOT + valueW + pad);
  const top = 44;
  const height = top + rows.length * ROW + 12;
  const x = linear([lo, hi], [clusterCol + labelW + 10, width - valueW - pad]);
  const svg = svgRoot(width, height, `Leaderboard (${scale === "raw" ? "raw ratings" : "z-scores"}) with 95% intervals`);

  // Cluster bands and their numbers.
  let start = 0;
  rows.forEach((row, i) => {
    const last = i === rows.length - 1 || rows[i + 1].cluster !== row.cluster;
    if (!last) return;
    const y0 = top + start * ROW;
    const y1 = top + (i + 1) * ROW;
    svg.append(s("rect", { x: 0, y: y0, width, height: y1 - y0, class: row.cluster % 2 ? "band odd" : "band even" }));
    if (start > 0) svg.append(s("line", { x1: 0, x2: width, y1: y0, y2: y0, class: "band-edge" }));
    const colour = clusterColour(row.cluster);
    svg.append(s("rect", { x: 6, y: y0 + 4, width: 22, height: y1 - y0 - 8, rx: 5, fill: colour, opacity: 0.14 }));
    svg.append(s("text", { x: 17, y: (y0 + y1) / 2 + 4, "text-anchor": "middle", class: "cluster-no", fill: colour,
                           text: row.cluster }));
    start = i + 1;
  });
  axis(svg, x, x.ticks(6), { top, bottom: height - 10, digits: tickDigits(x.ticks(6)),
                             zero: scale === "z" && lo < 0 && hi > 0 ? 0 : null,
                             label: scale === "raw" ? "mean raw rating (0–100)" : "mean z-score" });
  svg.append(s("text", { x: 17, y: top - 6, "text-anchor": "middle", class: "tick", text: "cl." }));
  svg.append(s("text", { x: width - valueW + 4, y: top - 6, class: "tick", text: scale === "raw" ? "mean" : "mean z" }));
  if (!narrow) svg.append(s("text", { x: width - valueW + 58, y: top - 6, class: "tick", text: "95% CI" }));

  rows.forEach((row, i) => {
    const [mean, low, high] = pick(row);
    const y = top + i * ROW + ROW / 2;
    const colour = clusterColour(row.cluster);
    const g = s("g", { class: "lb-row" });
    g.append(s("title", { text: `${row.system}: ${fmt(mean, scale === "raw" ? 2 : 3)} [${fmt(low, 3)}, ${fmt(high, 3)}], cluster ${row.cluster}, ${row.n} ratings` }));
    g.append(s("text", { x: clusterCol + labelW, y: y + 4, "text-anchor": "end", class: "row-label",
                         text: truncate(row.system, labelW - 6) }));
    if (low !== null && high !== null) {
      g.append(s("line", { x1: x(low), x2: x(high), y1: y, y2: y, stroke: colour, "stroke-width": 2.5, "stroke-linecap": "round" }));
      for (const v of [low, high]) g.append(s("line", { x1: x(v), x2: x(v), y1: y - 6, y2: y + 6, stroke: colour, "stroke-width": 2 }));
    }
    if (mean !== null) g.append(s("circle", { cx: x(mean), cy: y, r: 5.5, fill: colour, stroke: "#fff", "stroke-width": 1.5 }));
    const digits = scale === "raw" ? 2 : 3;
    g.append(s("text", { x: width - valueW + 4, y: y + 4, class: "row-value",
                         text: `${fmt(mean, digits)}` }));
    if (!narrow) {
      g.append(s("text", { x: width - valueW + 58, y: y + 4, class: "row-ci",
                           text: `[${fmt(low, scale === "raw" ? 1 : 2)}, ${fmt(high, scale === "raw" ? 1 : 2)}]` }));
    }
    svg.append(g);
  });
  return clear(node, svg);
}

/** Alpha on raw ratings and on z-scores, with their bootstrap intervals, on the [min, 1] scale. */
export function alphaPlot(node, alpha, available) {
  const items = [["z-scores", alpha.z], ["raw ratings", alpha.raw]];
  const lows = items.map(([, a]) => a.ci_low ?? a.value ?? 0);
  const lo = Math.min(0, ...lows.map((v) => Math.floor(v * 5) / 5));
  const top = 26;
  const rowH = 40;
  const bottom = top + items.length * rowH;
  const height = bottom + 22;
  const labelW = 84;
  const narrow = available < NARROW;
  const valueW = narrow ? 56 : 150;
  const width = Math.max(available, labelW + 10 + MIN_PLOT + valueW + 14);
  const x = linear([lo, 1], [labelW + 10, width - valueW - 14]);
  const svg = svgRoot(width, height, "Krippendorff's alpha with 95% intervals");
  axis(svg, x, x.ticks(5), { top, bottom, digits: 1 });
  for (const [v, label] of [[0.667, "0.667 tentative"], [0.8, "0.8 reliable"]]) {
    svg.append(s("line", { x1: x(v), x2: x(v), y1: top, y2: bottom, class: "guide" }));
    svg.append(s("text", { x: x(v), y: bottom + 14, "text-anchor": v < 0.7 ? "end" : "start", class: "guide-label",
                           text: label }));
  }
  svg.append(s("text", { x: width - valueW, y: top - 6, class: "tick", text: narrow ? "α" : "α  [95% CI]" }));
  items.forEach(([label, a], i) => {
    const y = top + i * rowH + rowH / 2;
    svg.append(s("text", { x: labelW, y: y + 4, "text-anchor": "end", class: "row-label", text: label }));
    if (a.value === null || a.value === undefined) {
      svg.append(s("text", { x: x(lo) + 6, y: y + 4, class: "muted-text", text: "undefined (too few shared ratings)" }));
      return;
    }
    const colour = i === 0 ? "#0b5cad" : "#7a8597";
    svg.append(s("rect", { x: Math.min(x(0), x(a.value)), y: y - 9, width: Math.abs(x(a.value) - x(0)), height: 18,
                           rx: 3, fill: colour, opacity: 0.18 }));
    if (a.ci_low !== null && a.ci_high !== null) {
      svg.append(s("line", { x1: x(a.ci_low), x2: x(a.ci_high), y1: y, y2: y, stroke: colour, "stroke-width": 2.5 }));
      for (const v of [a.ci_low, a.ci_high]) svg.append(s("line", { x1: x(v), x2: x(v), y1: y - 7, y2: y + 7, stroke: colour, "stroke-width": 2 }));
    }
    svg.append(s("circle", { cx: x(a.value), cy: y, r: 6, fill: colour, stroke: "#fff", "stroke-width": 1.5 }));
    svg.append(s("text", { x: width - valueW, y: y + 5, class: "alpha-value", text: fmt(a.value, 3) }));
    if (!narrow) {
      svg.append(s("text", { x: width - valueW + 46, y: y + 5, class: "row-ci", text: `[${fmt(a.ci_low, 3)}, ${fmt(a.ci_high, 3)}]` }));
    }
  });
  return clear(node, svg);
}

/** Per system (leaderboard order): histogram of raw ratings with a box plot over it. */
export function distributionPlot(node, report, available) {
  const bySystem = new Map(report.distributions.map((d) => [d.system, d]));
  const rows = report.systems.map((r) => [r, bySystem.get(r.system)]).filter(([, d]) => d);
  if (!rows.length) return clear(node, h("p", { class: "muted" }, "No ratings yet."));
  const rowH = 38;
  const top = 30;
  const labelW = labelColumn(rows.map(([r]) => r.system), available);
  const valueW = available < NARROW ? 90 : 130;
  const width = Math.max(available, labelW + 14 + MIN_PLOT + valueW + 8);
  const height = top + rows.length * rowH + 8;
  const x = linear([0, 100], [labelW + 14, width - valueW - 8]);
  const svg = svgRoot(width, height, "Distribution of raw ratings per system");
  axis(svg, x, [0, 20, 40, 60, 80, 100], { top, bottom: height - 6, digits: 0, label: "raw rating" });
  svg.append(s("text", { x: width - valueW + 6, y: top - 6, class: "tick", text: "median · mean" }));
  rows.forEach(([row, d], i) => {
    const y0 = top + i * rowH;
    const mid = y0 + rowH / 2;
    const colour = clusterColour(row.cluster);
    const g = s("g");
    g.append(s("title", { text: `${row.system}: ${d.n} ratings, median ${fmt(d.raw.median, 1)}, quartiles ${fmt(d.raw.q1, 1)}–${fmt(d.raw.q3, 1)}, mean ${fmt(d.raw.mean, 2)}` }));
    if (i > 0) g.append(s("line", { x1: labelW + 14, x2: width - valueW - 8, y1: y0, y2: y0, class: "row-sep" }));
    g.append(s("text", { x: labelW, y: mid + 4, "text-anchor": "end", class: "row-label", text: truncate(row.system, labelW - 6) }));
    const peak = Math.max(1, ...d.histogram);
    const binW = (x(100) - x(0)) / d.histogram.length;
    d.histogram.forEach((count, b) => {
      if (!count) return;
      const barH = (count / peak) * (rowH - 8);
      g.append(s("rect", { x: x(0) + b * binW + 1, y: y0 + rowH - 4 - barH, width: binW - 2, height: barH,
                           fill: colour, opacity: 0.22 }));
    });
    const q = d.raw;
    g.append(s("line", { x1: x(q.min), x2: x(q.q1), y1: mid, y2: mid, stroke: "#3d4657", "stroke-width": 1.2 }));
    g.append(s("line", { x1: x(q.q3), x2: x(q.max), y1: mid, y2: mid, stroke: "#3d4657", "stroke-width": 1.2 }));
    for (const v of [q.min, q.max]) g.append(s("line", { x1: x(v), x2: x(v), y1: mid - 4, y2: mid + 4, stroke: "#3d4657", "stroke-width": 1.2 }));
    g.append(s("rect", { x: x(q.q1), y: mid - 6, width: Math.max(1, x(q.q3) - x(q.q1)), height: 12, rx: 2,
                         fill: "#fff", stroke: colour, "stroke-width": 1.6, "fill-opacity": 0.85 }));
    g.append(s("line", { x1: x(q.median), x2: x(q.median), y1: mid - 6, y2: mid + 6, stroke: colour, "stroke-width": 3 }));
    g.append(s("circle", { cx: x(q.mean), cy: mid, r: 3.2, fill: "#1d2330" }));
    g.append(s("text", { x: width - valueW + 6, y: mid + 4, class: "row-value", text: `${fmt(q.median, 0)} · ${fmt(q.mean, 1)}` }));
    svg.append(g);
  });
  return clear(node, svg);
}

/** Share of each category among a system's outputs, as 100% stacked bars. */
export function categoryMixPlot(node, report, available) {
  const features = report.features;
  const bySystem = new Map(features.systems.map((r) => [r.system, r]));
  const order = report.systems.length ? report.systems.map((r) => r.system) : features.systems.map((r) => r.system);
  const rows = order.map((name) => bySystem.get(name)).filter(Boolean);
  const cats = features.categories;
  if (!rows.length || !cats.some((c) => c !== "unknown")) {
    return clear(node, h("p", { class: "muted" },
      "No categories known yet: the file gave none, no annotator has categorised an output, and the automatic analysis has not run."));
  }
  const top = 34;
  const rowH = 22;
  const labelW = labelColumn(rows.map((r) => r.system), available, 80, 200);
  const legendW = cats.reduce((sum, c) => sum + 34 + textWidth(CATEGORY_NAMES[c] || c), 0);
  const width = Math.max(available, labelW + 10 + Math.max(MIN_PLOT, legendW));
  const height = top + rows.length * rowH + 6;
  const x = linear([0, 1], [labelW + 10, width - 10]);
  const svg = svgRoot(width, height, "Category mix per system");
  let lx = labelW + 10;
  for (const c of cats) {
    svg.append(s("rect", { x: lx, y: 6, width: 12, height: 12, rx: 2, fill: CATEGORY_COLOURS[c] || "#999" }));
    svg.append(s("text", { x: lx + 17, y: 16, class: "legend-text", text: CATEGORY_NAMES[c] || c }));
    lx += 34 + textWidth(CATEGORY_NAMES[c] || c);
  }
  rows.forEach((row, i) => {
    const y = top + i * rowH;
    const total = cats.reduce((sum, c) => sum + (row.categories[c] || 0), 0) || 1;
    svg.append(s("text", { x: labelW, y: y + rowH / 2 + 4, "text-anchor": "end", class: "row-label", text: truncate(row.system, labelW - 6) }));
    let acc = 0;
    for (const c of cats) {
      const n = row.categories[c] || 0;
      if (!n) continue;
      const x0 = x(acc / total);
      const x1 = x((acc + n) / total);
      const seg = s("rect", { x: x0, y: y + 3, width: Math.max(0, x1 - x0 - 1), height: rowH - 6, fill: CATEGORY_COLOURS[c] || "#999" });
      seg.append(s("title", { text: `${row.system}: ${n} of ${total} outputs ${CATEGORY_NAMES[c] || c} (${Math.round((100 * n) / total)}%)` }));
      svg.append(seg);
      if (x1 - x0 > 34) svg.append(s("text", { x: (x0 + x1) / 2, y: y + rowH / 2 + 4, "text-anchor": "middle", class: "seg-label", text: `${Math.round((100 * n) / total)}%` }));
      acc += n;
    }
  });
  return clear(node, svg);
}

const FEATURE_LABELS = {
  compression_ratio: ["Compression", "out/src chars", 2],
  sentence_splits: ["Splits", "new sentences", 2],
  levenshtein_similarity: ["Levenshtein", "similarity", 2],
  proportion_deleted: ["Deleted", "of source words", 2],
  proportion_added: ["Added", "of output words", 2],
  proportion_reordered: ["Reordered", "of source words", 2],
  lexical_complexity_ratio: ["Lexical", "complexity out/src", 2],
  dependency_depth_ratio: ["Tree depth", "out/src", 2],
  exact_match: ["Copies", "share identical", 2],
  deletion_only: ["Only deletes", "share", 2],
};
const RATIO_FEATURES = new Set(["compression_ratio", "lexical_complexity_ratio", "dependency_depth_ratio"]);
const SHARE_FEATURES = new Set(["levenshtein_similarity", "proportion_deleted", "proportion_added", "proportion_reordered",
                                "exact_match", "deletion_only"]);

/** A bar table: one row per system, one column per feature, each column on its own scale. */
export function featurePlot(node, report, width) {
  const features = report.features;
  const names = features.names;
  if (!names.length) {
    return clear(node, h("p", { class: "muted" },
      "No text analysis stored for this campaign yet. It runs after an import (Celery worker) or with ",
      h("code", {}, `manage.py analyze --campaign ${report.campaign.slug}`), "."));
  }
  const bySystem = new Map(features.systems.map((r) => [r.system, r]));
  const order = report.systems.length ? report.systems.map((r) => r.system) : features.systems.map((r) => r.system);
  const rows = order.map((n) => bySystem.get(n)).filter(Boolean);
  const labelW = labelWidth(rows.map((r) => r.system), 80, 200);
  const colW = Math.max(92, (width - labelW - 12) / names.length);
  const full = labelW + 12 + colW * names.length;
  const top = 44;
  const rowH = 22;
  const height = top + rows.length * rowH + 8;
  const svg = svgRoot(full, height, "Mean text features per system");
  const colour = (name) => clusterColour(report.systems.find((r) => r.system === name)?.cluster ?? 1);
  names.forEach((name, k) => {
    const [title, unit, digits] = FEATURE_LABELS[name] || [name, "", 2];
    const x0 = labelW + 12 + k * colW;
    const vals = rows.map((r) => r.means[name]).filter((v) => v !== undefined && v !== null);
    // Shares sit on a fixed 0–1 scale so that columns compare; ratios and counts on their own range.
    const lo = SHARE_FEATURES.has(name) ? 0 : Math.min(0, ...vals);
    let hi = SHARE_FEATURES.has(name) ? 1 : Math.max(...vals, RATIO_FEATURES.has(name) ? 1 : 0);
    if (hi <= lo) hi = lo + 1;
    const x = linear([lo, hi], [x0 + 4, x0 + colW - 10]);
    if (k % 2 === 0) svg.append(s("rect", { x: x0, y: 0, width: colW, height, class: "col-band" }));
    svg.append(s("text", { x: x0 + 4, y: 16, class: "col-title", text: title }));
    svg.append(s("text", { x: x0 + 4, y: 30, class: "col-unit", text: unit }));
    svg.append(s("line", { x1: x(0), x2: x(0), y1: top - 4, y2: height - 6, class: "zero" }));
    if (RATIO_FEATURES.has(name)) svg.append(s("line", { x1: x(1), x2: x(1), y1: top - 4, y2: height - 6, class: "guide" }));
    rows.forEach((row, i) => {
      const v = row.means[name];
      if (v === undefined || v === null) return;
      const y = top + i * rowH;
      const bar = s("rect", { x: Math.min(x(0), x(v)), y: y + 5, width: Math.max(1, Math.abs(x(v) - x(0))), height: rowH - 10,
                              rx: 2, fill: colour(row.system), opacity: 0.55 });
      bar.append(s("title", { text: `${row.system} · ${title}: ${fmt(v, 3)} (${row.n_analysed} of ${row.n_outputs} outputs analysed)` }));
      svg.append(bar);
      const inside = Math.abs(x(v) - x(0)) > 38;
      svg.append(s("text", { x: inside ? Math.max(x(v), x(0)) - 3 : Math.max(x(v), x(0)) + 3, y: y + rowH / 2 + 4,
                             "text-anchor": inside ? "end" : "start", class: "bar-value", text: fmt(v, digits) }));
    });
  });
  rows.forEach((row, i) => {
    const y = top + i * rowH;
    svg.append(s("text", { x: labelW, y: y + rowH / 2 + 4, "text-anchor": "end", class: "row-label", text: truncate(row.system, labelW - 6) }));
  });
  return clear(node, svg);
}
