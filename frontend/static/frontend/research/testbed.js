// Live progress of a perturbation-testbed run: the [data-testbed-progress] section names the websocket path
// in data-ws-path; the first message is the job's state, then one per progress event. The page reloads
// once the run is done, to show its tables and figures.

const box = document.querySelector("[data-testbed-progress]");
if (box && ["queued", "running"].includes(box.dataset.status)) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}${box.dataset.wsPath}`);
  const status = box.querySelector("[data-testbed-status]");
  const bar = box.querySelector("[data-testbed-bar]");
  const count = box.querySelector("[data-testbed-count]");
  socket.addEventListener("message", (message) => {
    const event = JSON.parse(message.data);
    if (event.status) status.textContent = event.status;
    if (event.total != null) {
      bar.max = Math.max(event.total, 1);
      bar.value = event.done || 0;
      count.textContent = `${event.done || 0} / ${event.total}`;
    }
    if (event.status === "done" || event.status === "failed") {
      socket.close();
      location.reload();
    }
  });
}
