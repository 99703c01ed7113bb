// Campaign dashboard: fetches the report, draws it, and keeps it fresh from the live websocket (submissions
// move the progress bars; background jobs' progress updates their lines, and their end rereads the panels).

import { clear, h } from "./dom.js";
import { LIVE_STATE_TEXT, applyJob, applyProgress, connectLive, fetchPatiently, refreshRegions } from "./live.js";
import { alphaPlot, categoryMixPlot, distributionPlot, featurePlot, leaderboardPlot } from "./plots.js";
import { annotatorTable, categoryTable, leaderboardTable, warningList } from "./tables.js";

const root = document.getElementById("dashboard");
const $ = (id) => document.getElementById(id);

const view = { report: null, scale: "z" };

function widthOf(node) {
  return Math.max(320, Math.floor(node.getBoundingClientRect().width));
}

function draw() {
  const report = view.report;
  if (!report) return;
  leaderboardPlot($("leaderboard-plot"), report, view.scale, widthOf($("leaderboard-plot")));
  leaderboardTable($("leaderboard-table"), report);
  alphaPlot($("alpha-plot"), report.alpha, widthOf($("alpha-plot")));
  warningList($("warnings"), report);
  distributionPlot($("distribution-plot"), report, widthOf($("distribution-plot")));
  categoryMixPlot($("category-mix-plot"), report, widthOf($("category-mix-plot")));
  categoryTable($("category-table"), $("category-alpha"), report);
  featurePlot($("feature-plot"), report, widthOf($("feature-plot")));
  analysisStatus($("analysis-status"), report.analysis);
  annotatorTable($("annotator-table"), report);
  $("rating-count").textContent = report.counts.ratings;
  clear($("report-meta"), `Report of ${report.counts.ratings} ratings by ${report.counts.raters} raters, computed `,
    new Date(report.generated_at).toLocaleString(), ` with ${report.n_boot} bootstrap resamples (seed ${report.seed}).`);
  root.dataset.ready = "true";
}

/** Says how many output texts were analysed without the word-embedding model (degraded, redone later). */
function analysisStatus(node, analysis) {
  if (!node) return;
  const degraded = analysis ? analysis.degraded : 0;
  clear(node, degraded ? `${degraded} of ${analysis.units} output texts were analysed by spelling only, because ` +
    "the word-embedding model failed; the next analysis run redoes them." : null);
}

let loading = null;
async function load() {
  if (loading) return loading;
  loading = (async () => {
    try {
      // live=1: while ratings arrive, a report a few seconds old is reused instead of rebuilt per submit.
      // no-store: a revalidated answer (304, the same older report) would drop its X-Report-Behind header.
      const response = await fetchPatiently(`${root.dataset.reportUrl}?live=1`, { credentials: "same-origin",
        cache: "no-store", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`the report could not be loaded (HTTP ${response.status})`);
      view.report = await response.json();
      draw();
      // A live report built a few seconds ago on older ratings: ask again once one on the current ratings can
      // be had, or the last submissions of a burst would show only when the next one arrives.
      const behind = Number(response.headers.get("X-Report-Behind"));
      if (behind > 0) {
        window.clearTimeout(reloadTimer);
        reloadTimer = window.setTimeout(load, behind * 1000 + 250);
      }
    } catch (error) {
      clear($("leaderboard-plot"), h("p", { class: "error" }, String(error.message || error)));
    } finally {
      loading = null;
    }
  })();
  return loading;
}

let reloadTimer = null;
function reloadSoon() {
  window.clearTimeout(reloadTimer);
  reloadTimer = window.setTimeout(load, 1500);
}

for (const button of root.querySelectorAll(".toggle [data-scale]")) {
  button.addEventListener("click", () => {
    view.scale = button.dataset.scale;
    for (const other of root.querySelectorAll(".toggle [data-scale]")) {
      other.setAttribute("aria-pressed", String(other === button));
    }
    draw();
  });
}

let lastWidth = window.innerWidth;
window.addEventListener("resize", () => {
  if (Math.abs(window.innerWidth - lastWidth) < 24) return;
  lastWidth = window.innerWidth;
  window.clearTimeout(draw.timer);
  draw.timer = window.setTimeout(draw, 150);
});

let regionsTimer = null;
let regionsWanted = new Set(); // the regions asked for since the last reread; null: all of them
function refreshSoon(names = null) {
  regionsWanted = names && regionsWanted ? new Set([...regionsWanted, ...names]) : null;
  window.clearTimeout(regionsTimer);
  regionsTimer = window.setTimeout(() => {
    const wanted = regionsWanted ? [...regionsWanted] : null;
    regionsWanted = new Set();
    refreshRegions(wanted).catch(() => {});
  }, 500);
}

// The stop rule's panel: reread on a submit; the server reuses figures built in the last 15 s (like the
// report), so a trailing reread after a burst brings in its last submissions.
let settledTimer = null;
function settledSoon() {
  refreshSoon(["settled"]);
  window.clearTimeout(settledTimer);
  settledTimer = window.setTimeout(() => refreshSoon(["settled"]), 16000);
}
// Figures reused from a moment ago (the server recomputes them at most every few seconds while ratings
// arrive) say so; read the panel again once they have expired.
function settledWhenStale() {
  const stale = $("settled-stale");
  if (!stale) return;
  window.clearTimeout(settledTimer);
  settledTimer = window.setTimeout(() => refreshSoon(["settled"]), (Number(stale.dataset.freshIn) + 1) * 1000);
}
settledWhenStale();

// The panel is replaced whole when it is reread, and a screen reader does not read a replaced node: a status
// line outside it says the panel's new figures (its data-summary) when they change.
let settledSaid = $("settled-panel")?.dataset.summary || "";
function settledAnnounce() {
  const summary = $("settled-panel")?.dataset.summary || "";
  if (summary && summary !== settledSaid) $("settled-announce").textContent = summary;
  settledSaid = summary;
}

document.addEventListener("live:refreshed", (event) => {
  if (!event.detail.regions.includes("settled")) return;
  settledWhenStale();
  settledAnnounce();
});

const pill = $("live-status");
connectLive(root.dataset.wsPath, {
  onState: (state) => { pill.dataset.state = state; pill.textContent = LIVE_STATE_TEXT[state] || state; },
  onResync: () => { load(); refreshSoon(); }, // events sent while the page was offline were missed
  onEvent: (event) => {
    if (event.event === "annotation.submitted") {
      // The first annotator's first submit on a page opened before anyone joined: no bars to move yet.
      if (!applyProgress(root, event)) refreshSoon(["progress"]);
      // Someone the People table does not list yet (a crowd worker who just arrived, an account added elsewhere).
      const listed = [...root.querySelectorAll("#people-table tr[data-pseudonym]")]
        .some((row) => row.dataset.pseudonym === event.annotator);
      if (event.annotator && !listed) refreshSoon(["people"]);
      settledSoon();
      reloadSoon();
    } else if (event.event === "job.progress") {
      applyJob(event); // its lines, if the page shows it
      if (event.status === "done" || event.status === "failed") { // what it changed: scores, analysis, failures
        refreshSoon(["lens", "metrics", "failed-jobs"]);
        reloadSoon();
      }
    }
  },
});

load();
