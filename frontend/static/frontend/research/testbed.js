// Live progress of a perturbation-testbed run: the [data-testbed-progress] section names the websocket path
// in data-ws-path (research/live.js: it reconnects, and each connection's first message is the job's state);
// then the job's events (job.progress: status, done, total). The page reloads once the run has ended, to show
// its tables and figures, or its error.

import { connectLive } from "./live.js";

const box = document.querySelector("[data-testbed-progress]");
if (box && ["queued", "running"].includes(box.dataset.status)) {
  const status = box.querySelector("[data-testbed-status]");
  const bar = box.querySelector("[data-testbed-bar]");
  const count = box.querySelector("[data-testbed-count]");
  const close = connectLive(box.dataset.wsPath, {
    onState: (state) => { box.dataset.socket = state; },
    onEvent: (event) => {
      if (event.event !== "testbed.progress" && event.event !== "job.progress") return;
      if (event.status) status.textContent = event.status;
      if (event.total != null) {
        bar.max = Math.max(event.total, 1);
        bar.value = event.done || 0;
        count.textContent = `${event.done || 0} / ${event.total}`;
      }
      if (event.status === "done" || event.status === "failed") {
        close();
        window.location.reload();
      }
    },
  });
}
