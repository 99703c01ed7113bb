// Drag-and-drop reordering with pointer events, so mouse, touch and pen behave the same.
// The page owns the data: on drop we only report where the item should go (list element, index).

const EDGE = 70; // px from the viewport edge where dragging scrolls the page

export function makeSortable(root, { itemSelector, handleSelector, listSelector, onDrop }) {
  root.addEventListener("pointerdown", (event) => {
    const handle = event.target.closest(handleSelector);
    if (!handle || !root.contains(handle) || event.button !== 0) return;
    const item = handle.closest(itemSelector);
    if (!item) return;
    event.preventDefault();
    startDrag(root, item, handle, event, { itemSelector, listSelector, onDrop });
  });
}

function startDrag(root, item, handle, event, { itemSelector, listSelector, onDrop }) {
  const rect = item.getBoundingClientRect();
  const offsetX = event.clientX - rect.left;
  const offsetY = event.clientY - rect.top;
  const placeholder = document.createElement("li");
  placeholder.className = "drop-placeholder";
  placeholder.style.height = `${rect.height}px`;
  placeholder.setAttribute("aria-hidden", "true");
  item.after(placeholder);
  item.classList.add("dragging");
  Object.assign(item.style, { position: "fixed", left: `${rect.left}px`, top: `${rect.top}px`, width: `${rect.width}px` });
  try { handle.setPointerCapture(event.pointerId); } catch { /* synthetic events have no capture */ }
  let lastY = event.clientY;
  let scrollTimer = null;

  const place = (x, y) => {
    item.style.left = `${x - offsetX}px`;
    item.style.top = `${y - offsetY}px`;
    const list = listAt(root, listSelector, x, y);
    if (!list) return;
    const others = [...list.querySelectorAll(itemSelector)].filter((el) => el !== item);
    const before = others.find((el) => {
      const r = el.getBoundingClientRect();
      return y < r.top + r.height / 2;
    });
    if (before) { if (placeholder.nextElementSibling !== before) list.insertBefore(placeholder, before); }
    else if (list.lastElementChild !== placeholder) list.append(placeholder);
  };
  const autoscroll = () => {
    const speed = lastY < EDGE ? -(EDGE - lastY) / 3 : lastY > innerHeight - EDGE ? (lastY - innerHeight + EDGE) / 3 : 0;
    if (speed) { window.scrollBy(0, speed); }
  };
  const move = (e) => {
    lastY = e.clientY;
    place(e.clientX, e.clientY);
    if (!scrollTimer) scrollTimer = setInterval(() => { autoscroll(); }, 30);
  };
  const finish = (e, drop) => {
    window.removeEventListener("pointermove", move);
    window.removeEventListener("pointerup", up);
    window.removeEventListener("pointercancel", cancel);
    clearInterval(scrollTimer);
    const list = placeholder.parentElement;
    const index = list ? [...list.children].filter((el) => el !== item && el.matches(itemSelector + ", .drop-placeholder"))
      .indexOf(placeholder) : -1;
    item.classList.remove("dragging");
    item.removeAttribute("style");
    placeholder.remove();
    if (drop && list && index >= 0) onDrop(item.dataset.unit, list, index);
  };
  const up = (e) => finish(e, true);
  const cancel = (e) => finish(e, false);
  window.addEventListener("pointermove", move);
  window.addEventListener("pointerup", up);
  window.addEventListener("pointercancel", cancel);
}

function listAt(root, listSelector, x, y) {
  const lists = [...root.querySelectorAll(listSelector)];
  let best = null;
  let bestDistance = Infinity;
  for (const list of lists) {
    const r = list.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const dy = y < r.top ? r.top - y : y > r.bottom ? y - r.bottom : 0;
    const dx = x < r.left ? r.left - x : x > r.right ? x - r.right : 0;
    const distance = dy + dx;
    if (distance < bestDistance) { best = list; bestDistance = distance; }
  }
  return best;
}
