// Live progress of a perturbation-testbed run: the [data-testbed-progress] section names the websocket path
// in data-ws-path (research/live.js: it reconnects, and each connection's first message is the job's state);
// then the job's events (job.progress: status, done, total). While the websocket is not live (reconnecting,
// refused, or no websocket at all behind some proxies) the page rereads its own progress line every few
// seconds instead. The page reloads once the run has ended, to show its tables and figures, or its error.

import { followJob } from "./live.js";

followJob("testbed", { accepts: (event) => event.event === "testbed.progress" || event.event === "job.progress" });
