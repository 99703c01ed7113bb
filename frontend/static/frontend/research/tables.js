// Tables of the campaign report: leaderboard, per-category z-scores, annotator quality, warnings.

import { clear, fmt, h } from "./dom.js";
import { CATEGORY_NAMES, clusterColour, divergingFill, divergingText } from "./palette.js";

function ci(low, high, digits) {
  return h("span", { class: "ci" }, `[${fmt(low, digits)}, ${fmt(high, digits)}]`);
}

export function leaderboardTable(table, report) {
  const head = h("thead", {}, h("tr", {},
    h("th", { class: "num" }, "#"), h("th", {}, "System"), h("th", { class: "num" }, "Cluster"),
    h("th", { class: "num" }, "Ratings"), h("th", { class: "num" }, "Outputs"),
    h("th", { class: "num" }, "Raw mean"), h("th", { class: "num" }, "95% CI"),
    h("th", { class: "num" }, "z mean"), h("th", { class: "num" }, "95% CI")));
  if (!report.systems.length) {
    // No ratings yet: say so instead of a bare header row.
    return clear(table, h("caption", { class: "sr-only" }, "Leaderboard"), head, h("tbody", {}, h("tr", {},
      h("td", { colspan: "9", class: "muted empty-note", "data-empty": "leaderboard" },
        "No ratings yet: the leaderboard fills in as annotators submit (or after an import with ratings)."))));
  }
  const body = h("tbody", {}, report.systems.map((r) => h("tr", {},
    h("td", { class: "num" }, r.rank),
    h("td", {}, r.system),
    h("td", { class: "num" }, h("span", { class: "cluster-chip", style: `--c: ${clusterColour(r.cluster)}` }, r.cluster)),
    h("td", { class: "num" }, r.n), h("td", { class: "num" }, r.n_outputs),
    h("td", { class: "num strong" }, fmt(r.raw_mean, 2)), h("td", { class: "num" }, ci(r.raw_ci_low, r.raw_ci_high, 2)),
    h("td", { class: "num strong" }, fmt(r.z_mean, 3)), h("td", { class: "num" }, ci(r.ci_low, r.ci_high, 3)))));
  return clear(table, h("caption", { class: "sr-only" }, "Leaderboard"), head, body);
}

export function categoryTable(table, note, report) {
  const cats = Object.keys(report.categories);
  if (!cats.length) {
    clear(note);
    return clear(table, h("tbody", {}, h("tr", {}, h("td", { class: "muted" }, "No categories in these ratings."))));
  }
  const cells = new Map();
  let maxAbs = 0;
  for (const c of cats) {
    for (const r of report.categories[c].systems) {
      cells.set(`${c}\u0000${r.system}`, r);
      if (r.z_mean !== null) maxAbs = Math.max(maxAbs, Math.abs(r.z_mean));
    }
  }
  const head = h("thead", {}, h("tr", {}, h("th", {}, "System"),
    cats.map((c) => h("th", { class: "num" }, CATEGORY_NAMES[c] || c,
      h("br"), h("small", { class: "muted" }, `${report.categories[c].counts.outputs} outputs`)))));
  const body = h("tbody", {}, report.systems.map((s) => h("tr", {}, h("td", {}, s.system), cats.map((c) => {
    const r = cells.get(`${c}\u0000${s.system}`);
    if (!r) return h("td", { class: "num muted" }, "—");
    return h("td", {
      class: "num heat-cell", style: `background: ${divergingFill(r.z_mean, maxAbs)}; color: ${divergingText(r.z_mean, maxAbs)}`,
      title: `${s.system}, ${CATEGORY_NAMES[c] || c}: z ${fmt(r.z_mean, 3)} [${fmt(r.ci_low, 3)}, ${fmt(r.ci_high, 3)}], raw ${fmt(r.raw_mean, 2)}, ${r.n_outputs} outputs, cluster ${r.cluster}`,
    }, fmt(r.z_mean, 2), h("small", {}, ` (${r.n_outputs})`));
  }))));
  note.textContent = "α on z-scores within each category: " + cats
    .map((c) => `${CATEGORY_NAMES[c] || c} ${fmt(report.categories[c].alpha.z.value, 3)}`).join(" · ");
  return clear(table, head, body);
}

/** Imported rating slots ("12:rating_2") read better as "rating_2 · import 12". */
export function raterLabel(rater) {
  const m = /^(\d+):(.+)$/.exec(rater);
  return m ? `${m[2]} · import ${m[1]}` : rater;
}

export function annotatorTable(table, report) {
  const rows = report.annotators;
  if (!rows.length) return clear(table, h("tbody", {}, h("tr", {}, h("td", { class: "muted" }, "No ratings yet."))));
  const overall = report.alpha.z.value;
  const head = h("thead", {}, h("tr", {},
    h("th", {}, "Rater"), h("th", { class: "num" }, "Ratings"), h("th", { class: "num" }, "Sources"),
    h("th", { class: "num" }, "Median s / source"), h("th", {}, "r with others"),
    h("th", { class: "num" }, "α (z) without"), h("th", {}, "")));
  const body = h("tbody", {}, rows.map((r) => {
    const corr = r.corr_with_others;
    const delta = r.alpha_without_z !== null && overall !== null ? r.alpha_without_z - overall : null;
    return h("tr", { class: r.outlier ? "flagged" : "" },
      h("td", {}, h("code", {}, raterLabel(r.rater))),
      h("td", { class: "num" }, r.n), h("td", { class: "num" }, r.n_sources),
      h("td", { class: "num" }, r.median_seconds === null ? "—" : fmt(r.median_seconds, 0)),
      h("td", {}, h("span", { class: "meter" }, h("span", {
        class: corr !== null && corr < 0.2 ? "low" : "",
        style: `width: ${corr === null ? 0 : Math.max(0, corr) * 100}%`,
      })), ` ${fmt(corr, 2)}`),
      h("td", { class: "num" }, fmt(r.alpha_without_z, 3),
        delta === null ? "" : h("small", { class: delta > 0.005 ? "delta bad" : "delta" }, ` (${delta >= 0 ? "+" : "−"}${fmt(Math.abs(delta), 3)})`)),
      h("td", {}, r.outlier ? h("span", { class: "badge warn" }, "check") : ""));
  }));
  return clear(table, head, body);
}

export function warningList(node, report) {
  if (!report.warnings.length) return clear(node);
  return clear(node, h("details", { class: "warnings" },
    h("summary", {}, `${report.warnings.length} warning${report.warnings.length > 1 ? "s" : ""}`),
    h("ul", {}, report.warnings.map((w) => h("li", {}, w)))));
}
