// Live training curves of learned metrics. Each <figure data-learned-chart> names its version, the stored-curve URL and the
// websocket path in data-* attributes. A queued or running version listens on the websocket (research/live.js:
// it reconnects, and each connection's first message is the stored curve and status, training.snapshot; then one
// message per event, training.progress and training.status). The worker's events reach the page with Redis and
// without it (core.events' feed under `make run`). When the status changes, the parts of the page that show it
// (the versions table, the version's details with Promote or Cancel: data-live-region) are read again. While the
// websocket is not live (reconnecting, refused, or no websocket at all behind some proxies) the page rereads the
// stored curve every few seconds instead. A finished version just loads the stored curve.
import { connectLive, poller, refreshRegions } from "../research/live.js";

const FINISHED = ["succeeded", "failed", "cancelled"];
const POLL_MS = 3000;

const PAD = { left: 48, right: 48, top: 12, bottom: 28 };

class TrainingChart {
  constructor(figure) {
    this.figure = figure;
    this.canvas = figure.querySelector("canvas");
    this.statusEl = figure.querySelector("[data-learned-status]");
    this.lastEl = figure.querySelector("[data-learned-last]");
    this.events = new Map(); // "kind:step" -> event, so repeats (reconnects) are dropped
    this.totalSteps = 0;
    this.shown = figure.dataset.status; // the status the page was rendered or last refreshed with
  }

  add(event) {
    if (event.step == null) return;
    this.events.set(`${event.kind}:${event.step}`, event);
    this.totalSteps = Math.max(this.totalSteps, event.total_steps || 0);
  }

  setStatus(state) {
    if (state.status) this.status = state.status;
    if (state.status && this.statusEl) this.statusEl.textContent = state.status + (state.is_active ? " (active)" : "");
    if (state.error && this.lastEl) this.lastEl.textContent = state.error;
    if (this.status && this.status !== this.shown) { // e.g. finished: Cancel goes, Promote comes
      this.shown = this.status;
      refreshSoon();
    }
  }

  draw() {
    const ctx = this.canvas.getContext("2d");
    const { width, height } = this.canvas;
    ctx.clearRect(0, 0, width, height);
    const all = [...this.events.values()].sort((a, b) => a.step - b.step);
    const epochs = all.filter((e) => e.kind === "epoch");
    // The loss line: every event with a loss, one point per step. Step events come only every
    // `progress_every` steps (10), so a short run (a small campaign) has few or none; each epoch event
    // carries the epoch's mean training loss too. Drawing step events alone left the line empty there.
    const byStep = new Map();
    for (const e of all) if (e.loss != null && (e.kind === "step" || !byStep.has(e.step))) byStep.set(e.step, e);
    const lossPoints = [...byStep.values()].sort((a, b) => a.step - b.step);
    const xMax = Math.max(this.totalSteps, ...all.map((e) => e.step), 1);
    const lossMax = Math.max(...lossPoints.map((e) => e.loss), 0.1);
    const x = (step) => PAD.left + (step / xMax) * (width - PAD.left - PAD.right);
    const yLoss = (v) => height - PAD.bottom - (v / lossMax) * (height - PAD.top - PAD.bottom);
    const yTau = (v) => height - PAD.bottom - ((v + 1) / 2) * (height - PAD.top - PAD.bottom); // tau in [-1, 1]

    ctx.strokeStyle = "#d9dde5";
    ctx.strokeRect(PAD.left, PAD.top, width - PAD.left - PAD.right, height - PAD.top - PAD.bottom);
    ctx.fillStyle = "#5b6475";
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillText(lossMax.toFixed(2), 4, PAD.top + 8);
    ctx.fillText("0", 4, height - PAD.bottom);
    ctx.fillText("τ 1", width - PAD.right + 6, PAD.top + 8);
    ctx.fillText("τ -1", width - PAD.right + 6, height - PAD.bottom);
    ctx.fillText(`step ${xMax}`, width - PAD.right - 50, height - 8);
    for (const e of epochs) {
      ctx.strokeStyle = "#eef0f4";
      ctx.beginPath();
      ctx.moveTo(x(e.step), PAD.top);
      ctx.lineTo(x(e.step), height - PAD.bottom);
      ctx.stroke();
    }
    // With fewer than three points a line is hard to see (one point draws none): mark them.
    this.line(ctx, lossPoints.map((e) => [x(e.step), yLoss(e.loss)]), "#2456c7", lossPoints.length < 3);
    this.figure.dataset.lossPoints = String(lossPoints.length);
    const taus = epochs.filter((e) => e.heldout_tau != null);
    this.line(ctx, taus.map((e) => [x(e.step), yTau(e.heldout_tau)]), "#2e7d32", true);

    const last = all[all.length - 1];
    if (last && this.lastEl) {
      const tau = taus.length ? ` · held-out τ ${taus[taus.length - 1].heldout_tau.toFixed(3)}` : "";
      const loss = last.loss != null ? ` · loss ${last.loss.toFixed(4)}` : "";
      this.lastEl.textContent = `epoch ${last.epoch}, step ${last.step}/${last.total_steps}${loss}${tau}`;
    }
  }

  line(ctx, points, colour, dots = false) {
    if (!points.length) return;
    ctx.strokeStyle = colour;
    ctx.fillStyle = colour;
    ctx.lineWidth = 2;
    ctx.beginPath();
    points.forEach(([px, py], i) => (i ? ctx.lineTo(px, py) : ctx.moveTo(px, py)));
    ctx.stroke();
    if (dots) for (const [px, py] of points) ctx.fillRect(px - 3, py - 3, 6, 6);
    ctx.lineWidth = 1;
  }

  async loadStored() {
    const response = await fetch(this.figure.dataset.eventsUrl, { credentials: "same-origin" });
    if (!response.ok) return;
    const body = await response.json();
    body.events.forEach((e) => this.add(e));
    this.setStatus(body);
    this.draw();
    this.figure.dataset.events = String(this.events.size);
  }

  /** Reread the stored curve every few seconds while the websocket is not live and the run not finished. */
  poll(on) {
    this.poller ??= poller(async () => {
      await this.loadStored();
      if (FINISHED.includes(this.status)) this.poller.set(false);
    }, POLL_MS);
    this.poller.set(on && !FINISHED.includes(this.status));
  }

  listen() {
    const close = connectLive(this.figure.dataset.wsPath, {
      onState: (state) => {
        this.figure.dataset.socket = state;
        this.poll(state !== "live" && state !== "connecting");
      },
      onEvent: (data) => {
        if (data.event === "training.snapshot") {
          data.events.forEach((e) => this.add(e));
          this.setStatus(data);
        } else if (data.event === "training.progress") {
          this.add(data);
        } else if (data.event === "training.status") {
          this.setStatus(data);
        } else return;
        this.figure.dataset.events = String(this.events.size);
        this.draw();
        if (FINISHED.includes(this.status)) { this.poll(false); close(); }
      },
    });
  }
}

let refreshTimer = null;
function refreshSoon() {
  window.clearTimeout(refreshTimer);
  refreshTimer = window.setTimeout(() => refreshRegions().catch(() => {}), 300);
}

for (const figure of document.querySelectorAll("[data-learned-chart]")) {
  const chart = new TrainingChart(figure);
  if (figure.dataset.live === "1") chart.listen(); else chart.loadStored();
}
