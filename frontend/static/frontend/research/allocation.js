// Live progress of an allocation simulation: the [data-allocation-progress] section names the campaign's
// websocket in data-ws-path (research/live.js: it reconnects) and its job in data-job; the campaign's feed
// carries every job's job.progress events (status, done, total), of which this page keeps its own. While the
// websocket is not live the page rereads its own progress line every few seconds instead (and once when it
// becomes live, for what happened before it listened: the campaign's feed says "hello", not the job's state).
// The page reloads once the simulation has ended, to show its table and plot, or its error.

import { followJob } from "./live.js";

const box = document.querySelector("[data-allocation-progress]");
const job = box ? Number(box.dataset.job) : null;
followJob("allocation", {
  accepts: (event) => event.event === "job.progress" && event.job === job,
  rereadWhenLive: true,
});
