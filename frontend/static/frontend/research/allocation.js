// Live progress of an allocation simulation: the [data-allocation-progress] section names the campaign's
// websocket in data-ws-path (research/live.js: it reconnects) and its job in data-job; the campaign's feed
// carries every job's job.progress events (status, done, total), of which this page keeps its own. While the
// websocket is not live the page rereads its own progress line every few seconds instead (and once when it
// becomes live, for what happened before it listened). The page reloads
// once the simulation has ended, to show its table and plot, or its error.

import { connectLive, poller } from "./live.js";

const POLL_MS = 4000;
const ENDED = ["done", "failed"];

const box = document.querySelector("[data-allocation-progress]");
if (box && ["queued", "running"].includes(box.dataset.status)) {
  const job = Number(box.dataset.job);
  const status = box.querySelector("[data-allocation-status]");
  const bar = box.querySelector("[data-allocation-bar]");
  const count = box.querySelector("[data-allocation-count]");
  let close = () => {};

  const show = ({ status: state, done, total }) => {
    if (state) status.textContent = state;
    if (total != null) {
      bar.max = Math.max(total, 1);
      bar.value = done || 0;
      count.textContent = `${done || 0} / ${total}`;
    }
    if (ENDED.includes(state)) {
      reread.set(false);
      close();
      window.location.reload();
    }
  };

  /** Read the job's progress from the page itself (the server renders it), as the websocket would send it. */
  const readPage = async () => {
    const response = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html")
      .querySelector("[data-allocation-progress]");
    const freshBar = fresh && fresh.querySelector("[data-allocation-bar]");
    if (fresh && freshBar) {
      show({ status: fresh.dataset.status, done: Number(freshBar.getAttribute("value")), total: Number(fresh.dataset.total) });
    }
  };
  const reread = poller(readPage, POLL_MS);
  const readOnce = () => { readPage().catch(() => {}); };

  close = connectLive(box.dataset.wsPath, {
    onState: (state) => {
      box.dataset.socket = state;
      box.dataset.polling = String(reread.socketState(state));
      // The campaign's feed says "hello", not the job's state: what happened before it listened is read once.
      if (state === "live") readOnce();
    },
    onEvent: (event) => {
      if (event.event !== "job.progress" || event.job !== job) return;
      show(event);
    },
    onResync: readOnce,
  });
}
