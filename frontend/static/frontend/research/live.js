// Live updates over a page's websocket: reconnects with back-off, says truthfully whether the page is live,
// rereads the page's state after a reconnect, and updates the dashboard's progress bars.

import { h } from "./dom.js";

const PING_MS = 25000; // ask the server every so often whether the connection still carries messages
const PONG_WAIT_MS = 10000; // ... and take it for dead when no answer comes in this time
const OFFLINE_AFTER = 4; // failed tries in a row before the page says it is offline (it keeps trying)
const DENIED = [4401, 4403, 4404];

/**
 * Open the socket at `path` and keep it open. `onEvent(payload)` for each event; `onState(state)` on each
 * change: "connecting", "live" (the server has answered, so its events reach the page), "reconnecting",
 * "offline" (several tries failed; reload to update), "denied", or "not-shared" (the server says events of its
 * worker cannot reach this page). `onResync()` after a reconnect: events sent meanwhile were missed, so the
 * page rereads its state. Returns a function that closes the socket for good.
 */
export function connectLive(path, { onEvent, onState = () => {}, onResync = () => {} }) {
  let delay = 1000;
  let failures = 0;
  let socket = null;
  let wasLive = false;
  let stopped = false;
  let pingTimer = null;
  let pongTimer = null;
  const quiet = () => { window.clearInterval(pingTimer); window.clearTimeout(pongTimer); };
  const open = () => {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const current = new WebSocket(`${scheme}://${window.location.host}${path}`);
    socket = current;
    let live = false;
    onState(failures === 0 && !wasLive ? "connecting" : failures >= OFFLINE_AFTER ? "offline" : "reconnecting");
    current.addEventListener("message", (message) => {
      let payload;
      try { payload = JSON.parse(message.data); } catch { return; }
      if (payload.event === "pong") { window.clearTimeout(pongTimer); return; }
      if (!live) { // the server sends a first message once it listens for the page's events
        live = true;
        failures = 0;
        delay = 1000;
        onState(payload.event === "hello" && payload.shared === false ? "not-shared" : "live");
        if (wasLive) onResync();
        wasLive = true;
        pingTimer = window.setInterval(() => {
          if (current.readyState !== WebSocket.OPEN) return;
          current.send(JSON.stringify({ event: "ping" }));
          window.clearTimeout(pongTimer);
          pongTimer = window.setTimeout(() => current.close(), PONG_WAIT_MS);
        }, PING_MS);
      }
      onEvent(payload);
    });
    current.addEventListener("close", (event) => {
      quiet();
      if (stopped || current !== socket) return;
      if (DENIED.includes(event.code)) { onState("denied"); return; }
      failures += 1;
      onState(failures >= OFFLINE_AFTER ? "offline" : "reconnecting");
      window.setTimeout(open, delay * (0.75 + Math.random() / 2));
      delay = Math.min(30000, delay * 2);
    });
  };
  open();
  return () => { stopped = true; quiet(); if (socket) socket.close(); };
}

/**
 * `read()` again every `everyMs` while it is on (after the one under way, if any): a page's fallback while its
 * socket is not live. `set(on)` turns it on or off (on: the first read at once); `socketState(state)` turns it on
 * for the states of `connectLive` in which events do not reach the page, and returns whether it is on.
 */
export function poller(read, everyMs) {
  let on = false;
  let timer = null;
  let reading = false;
  const tick = async () => {
    timer = null;
    reading = true;
    try { await read(); } catch { /* offline for a moment: the next tick tries again */ }
    reading = false;
    if (on && timer === null) timer = window.setTimeout(tick, everyMs);
  };
  const set = (wanted) => {
    on = wanted;
    if (on && timer === null && !reading) timer = window.setTimeout(tick, 0);
    if (!on) { window.clearTimeout(timer); timer = null; }
  };
  return { set, socketState: (state) => { set(state !== "live" && state !== "connecting"); return on; } };
}

/**
 * `fetch(url, init)`, asked again (at most `tries` times in all) while the server answers 429 because it is
 * computing another heavy read, after the wait its Retry-After header gives. The last response.
 */
export async function fetchPatiently(url, init = {}, tries = 6) {
  let response = null;
  for (let attempt = 0; attempt < tries; attempt += 1) {
    response = await fetch(url, init);
    if (response.status !== 429) break;
    await new Promise((done) => window.setTimeout(done, 1000 * Number(response.headers.get("Retry-After") || 5)));
  }
  return response;
}

/** Words for each state of `connectLive`, for a status pill. */
export const LIVE_STATE_TEXT = {
  connecting: "connecting…", live: "live", reconnecting: "reconnecting…", offline: "offline — reload to update",
  denied: "no live updates", "not-shared": "no live updates",
};

/**
 * Move the errors shown in `old` (a form's `.form-errors`, which only the answer to that form's post has) into the
 * same forms of `next`, its fresh copy, and give the focus back to what had it. False, and nothing moved, when a
 * form with an error is not in `next` (the region is then better left as it is).
 */
function carryErrors(old, next) {
  const moves = [];
  for (const error of old.querySelectorAll(".form-errors")) {
    const form = error.closest("form[id]");
    const target = form && next.querySelector(`form[id="${CSS.escape(form.id)}"]`);
    if (!target) return false;
    moves.push([error, target]);
  }
  for (const [error, target] of moves) {
    target.querySelector(".form-errors")?.remove();
    const csrf = target.querySelector("input[name=csrfmiddlewaretoken]");
    if (csrf) csrf.after(error); else target.prepend(error);
  }
  return true;
}

/**
 * Reread the parts of the page marked `data-live-region="name"` (all, or those of `names`) from the server and
 * put them in place (a part where the user is typing is left alone; a form's error shown in a part stays, and so
 * does the focus). Fires `live:refreshed` on the document
 * with the names of the parts replaced, so their scripts can draw them again. The page is read from the
 * address in its `data-page-url` attribute when it has one: a form that failed renders the page at the
 * address it posted to, which answers no GET.
 */
export async function refreshRegions(names = null) {
  const url = document.querySelector("[data-page-url]")?.dataset.pageUrl || window.location.href;
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) return [];
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  const replaced = [];
  for (const node of document.querySelectorAll("[data-live-region]")) {
    const name = node.dataset.liveRegion;
    if ((names && !names.includes(name)) || node.parentElement.closest("[data-live-region]")) continue;
    const typing = document.activeElement && node.contains(document.activeElement) &&
      document.activeElement.matches("input, textarea, select");
    const next = fresh.querySelector(`[data-live-region="${name}"]`);
    if (!next || typing) continue;
    const copy = document.importNode(next, true);
    const focused = node.contains(document.activeElement) ? document.activeElement : null; // before it moves
    if (!carryErrors(node, copy)) continue;
    node.replaceWith(copy);
    if (focused?.id) copy.querySelector(`#${CSS.escape(focused.id)}`)?.focus({ preventScroll: true });
    replaced.push(name);
  }
  document.dispatchEvent(new CustomEvent("live:refreshed", { detail: { regions: replaced } }));
  return replaced;
}

/** Apply a "job.progress" event to the lines that show that job (`[data-job="<id>"]`); false if none does. */
export function applyJob(event) {
  const lines = document.querySelectorAll(`[data-job="${event.job}"]`);
  for (const line of lines) {
    const set = (key, value) => { const n = line.querySelector(`[data-job-${key}]`); if (n) n.textContent = value; };
    set("status", event.status);
    set("done", event.done);
    set("total", event.total);
    line.dataset.status = event.status;
  }
  return lines.length > 0;
}

function setBar(item, done, total, percent) {
  const bar = item.querySelector(".bar");
  bar.setAttribute("aria-valuenow", done);
  bar.setAttribute("aria-valuemax", total);
  bar.setAttribute("aria-valuetext", `${done} of ${total}`);
  bar.firstElementChild.style.width = `${percent}%`; // the server's percentage (annotation.rules.percent)
  item.querySelector(".count").replaceChildren(h("b", {}, done), ` / ${total}`);
  item.classList.remove("flash-update");
  void item.offsetWidth; // restart the highlight animation
  item.classList.add("flash-update");
}

/**
 * Apply an "annotation.submitted" event to the progress bars and the source grid. False when the page has no
 * place for it (a dashboard opened before the first annotator joined has neither bars nor grid): the caller
 * then rereads the progress region from the server.
 */
export function applyProgress(root, event) {
  let shown = true;
  const list = root.querySelector("#annotator-progress");
  if (!list) {
    shown = false;
  } else if (event.annotator) {
    let item = [...list.children].find((li) => li.dataset.annotator === event.annotator);
    if (!item) {
      item = h("li", { "data-annotator": event.annotator },
        h("span", { class: "label" }, event.annotator),
        h("span", { class: "bar", role: "progressbar", "aria-label": `Sources submitted by ${event.annotator}`,
          "aria-valuemin": 0 }, h("span")),
        h("span", { class: "count" }));
      list.append(item);
    }
    setBar(item, event.annotator_done, event.annotator_total, event.annotator_percent);
  }
  const cell = [...root.querySelectorAll("#source-progress .cell")].find((c) => c.dataset.source === event.source);
  if (cell) {
    const wanted = Number(cell.dataset.wanted);
    cell.dataset.done = event.source_done;
    cell.dataset.state = wanted && event.source_done >= wanted ? "complete" : event.source_done ? "some" : "none";
    cell.title = `${event.source}: ${event.source_done} / ${cell.dataset.wanted}`;
    cell.classList.remove("flash-update");
    void cell.offsetWidth;
    cell.classList.add("flash-update");
  } else {
    shown = false;
  }
  return shown;
}

const JOB_ENDED = ["done", "failed"];

/**
 * Follow one job on its own page, whose section `[data-<name>-progress]` (data-status, data-total, data-ws-path)
 * shows it in `[data-<name>-status]`, a `<progress data-<name>-bar>` and `[data-<name>-count]`: from the events
 * of the websocket that `accepts(event)`, and while the socket is not live by rereading the page's own line every
 * `pollMs`. `rereadWhenLive`: the socket's first message is not the job's state (a campaign's feed says "hello"),
 * so the line is read once whenever it becomes live, and after a reconnect. The page reloads once the job has
 * ended, to show its results or its error. Nothing happens unless the job is queued or running.
 */
export function followJob(name, { accepts, rereadWhenLive = false, pollMs = 4000 }) {
  const selector = `[data-${name}-progress]`;
  const box = document.querySelector(selector);
  if (!box || !["queued", "running"].includes(box.dataset.status)) return;
  const status = box.querySelector(`[data-${name}-status]`);
  const bar = box.querySelector(`[data-${name}-bar]`);
  const count = box.querySelector(`[data-${name}-count]`);
  let close = () => {};
  let reread = null;

  const show = ({ status: state, done, total }) => {
    if (state) status.textContent = state;
    if (total != null) {
      bar.max = Math.max(total, 1);
      bar.value = done || 0;
      count.textContent = `${done || 0} / ${total}`;
    }
    if (JOB_ENDED.includes(state)) {
      reread.set(false);
      close();
      window.location.reload();
    }
  };

  /** Read the job's progress from the page itself (the server renders it), as the websocket would send it. */
  const readPage = async () => {
    const response = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html").querySelector(selector);
    const freshBar = fresh && fresh.querySelector(`[data-${name}-bar]`);
    if (fresh && freshBar) {
      show({ status: fresh.dataset.status, done: Number(freshBar.getAttribute("value")), total: Number(fresh.dataset.total) });
    }
  };
  reread = poller(readPage, pollMs);
  const readOnce = () => { readPage().catch(() => {}); };

  close = connectLive(box.dataset.wsPath, {
    onState: (state) => {
      box.dataset.socket = state;
      box.dataset.polling = String(reread.socketState(state));
      if (rereadWhenLive && state === "live") readOnce();
    },
    onEvent: (event) => { if (accepts(event)) show(event); },
    onResync: rereadWhenLive ? readOnce : () => {},
  });
}
