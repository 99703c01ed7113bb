// Live progress over the campaign's websocket: reconnects with back-off, updates the progress bars.

import { h } from "./dom.js";

/** Open the socket and keep it open; `onEvent(payload)` for each event, `onState(state)` on changes. */
export function connectLive(path, { onEvent, onState }) {
  let delay = 1000;
  let socket = null;
  const open = () => {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${window.location.host}${path}`);
    onState("connecting");
    socket.addEventListener("open", () => { delay = 1000; onState("live"); });
    socket.addEventListener("message", (message) => {
      let payload;
      try { payload = JSON.parse(message.data); } catch { return; }
      onEvent(payload);
    });
    socket.addEventListener("close", (event) => {
      if (event.code === 4401 || event.code === 4403) { onState("denied"); return; }
      onState("offline");
      window.setTimeout(open, delay);
      delay = Math.min(30000, delay * 2);
    });
  };
  open();
  return () => socket && socket.close();
}

function setBar(item, done, total, percent) {
  const bar = item.querySelector(".bar");
  bar.setAttribute("aria-valuenow", done);
  bar.setAttribute("aria-valuemax", total);
  bar.firstElementChild.style.width = `${percent}%`; // the server's percentage (annotation.rules.percent)
  item.querySelector(".count").replaceChildren(h("b", {}, done), ` / ${total}`);
  item.classList.remove("flash-update");
  void item.offsetWidth; // restart the highlight animation
  item.classList.add("flash-update");
}

/** Apply an "annotation.submitted" event to the progress bars and the source grid. */
export function applyProgress(root, event) {
  const list = root.querySelector("#annotator-progress");
  if (list && event.annotator) {
    let item = [...list.children].find((li) => li.dataset.annotator === event.annotator);
    if (!item) {
      item = h("li", { "data-annotator": event.annotator },
        h("span", { class: "label" }, event.annotator),
        h("span", { class: "bar", role: "progressbar", "aria-valuemin": 0 }, h("span")),
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
  }
}
