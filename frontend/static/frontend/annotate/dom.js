// Small DOM helpers shared by the annotation page's modules.

/** Create an element: h("button", {class: "x", onclick: fn, "aria-label": "..."}, child, ...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "text") el.textContent = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Move focus to the card `delta` places away among the cards of `container`. */
export function focusSiblingCard(card, delta, container) {
  const cards = [...container.querySelectorAll(".card[data-unit]")];
  const next = cards[cards.indexOf(card) + delta];
  if (next) next.focus();
  return next;
}

/** After re-rendering, put the focus back on the card of `unitId` (if focus was on a card). */
export function refocusCard(container, unitId) {
  const card = container.querySelector(`.card[data-unit="${unitId}"]`);
  if (card) {
    card.focus({ preventScroll: false });
    card.scrollIntoView({ block: "nearest" });
  }
}

/** Announce a short message to screen-reader users through the page's polite live region. */
export function announce(text) {
  const region = document.getElementById("rr-announce");
  if (!region) return;
  region.textContent = "";
  // A fresh text node after clearing makes screen readers repeat identical messages.
  requestAnimationFrame(() => { region.textContent = text; });
}

export const CATEGORY_LABELS = {
  deletion: "Deletion-focused",
  paraphrase: "Paraphrase-focused",
  split: "Splitting-focused",
};
export const CATEGORY_ORDER = ["deletion", "paraphrase", "split"];
