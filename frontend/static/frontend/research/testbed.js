// Live progress of a perturbation-testbed run: the [data-testbed-progress] section names the websocket path
// in data-ws-path (research/live.js: it reconnects, and each connection's first message is the job's state);
// then the job's events (job.progress: status, done, total). While the websocket is not live (reconnecting,
// refused, or no websocket at all behind some proxies) the page rereads its own progress line every few
// seconds instead. The page reloads once the run has ended, to show its tables and figures, or its error.

import { connectLive, poller } from "./live.js";

const POLL_MS = 4000;
const ENDED = ["done", "failed"];

const box = document.querySelector("[data-testbed-progress]");
if (box && ["queued", "running"].includes(box.dataset.status)) {
  const status = box.querySelector("[data-testbed-status]");
  const bar = box.querySelector("[data-testbed-bar]");
  const count = box.querySelector("[data-testbed-count]");
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

  /** Read the run's progress from the page itself (the server renders it), as the websocket would send it. */
  const reread = poller(async () => {
    const response = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html")
      .querySelector("[data-testbed-progress]");
    const freshBar = fresh && fresh.querySelector("[data-testbed-bar]");
    if (fresh && freshBar) {
      show({ status: fresh.dataset.status, done: Number(freshBar.getAttribute("value")), total: Number(fresh.dataset.total) });
    }
  }, POLL_MS);

  close = connectLive(box.dataset.wsPath, {
    onState: (state) => {
      box.dataset.socket = state;
      box.dataset.polling = String(reread.socketState(state));
    },
    onEvent: (event) => {
      if (event.event !== "testbed.progress" && event.event !== "job.progress") return;
      show(event);
    },
  });
}
