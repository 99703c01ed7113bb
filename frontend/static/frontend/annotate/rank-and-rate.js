// Step 3: one list, best first. Each output gets a 0–100 rating (number field and slider kept in
// sync) and is dragged (or moved with Shift+arrows) to rank it. A gentle warning, never a block,
// appears when the order contradicts the ratings by more than the server's points (data-order-points).

import { CATEGORY_LABELS, announce, focusSiblingCard, h, refocusCard } from "./dom.js";
import { makeSortable } from "./dnd.js";
import { renderMarked, withoutRedundantDeletions } from "./edits.js";
import { categoryOf } from "./state.js";

/**
 * Pairs (higher-ranked, lower-ranked) whose ratings go the other way by more than `points` (the server's
 * annotation.rules.ORDER_CONTRADICTION_POINTS, in the rank list's data-order-points).
 */
export function contradictions(ranking, ratings, points) {
  const found = [];
  for (let i = 0; i < ranking.length; i++) {
    for (let j = i + 1; j < ranking.length; j++) {
      const above = ratings[ranking[i]];
      const below = ratings[ranking[j]];
      if (typeof above === "number" && typeof below === "number" && below - above > points) {
        found.push([i, j]);
      }
    }
  }
  return found;
}

export class RankStep {
  constructor(panel, store) {
    this.panel = panel;
    this.store = store;
    this.list = panel.querySelector("[data-rank-list]");
    this.warning = panel.querySelector("[data-rank-warning]");
    this.counter = panel.querySelector("[data-rated-count]");
    this.orderPoints = Number(this.list.dataset.orderPoints);
    this.invalid = new Map(); // unit id → what its field holds that is not a rating
    makeSortable(panel, {
      itemSelector: ".card[data-unit]", handleSelector: ".handle", listSelector: "[data-rank-list]",
      onDrop: (unitId, _list, index) => this.move(String(unitId), index),
    });
    panel.addEventListener("input", (e) => this.onInput(e));
    panel.addEventListener("keydown", (e) => this.onKey(e));
    // A click on an unrated slider where its (hidden) thumb rests changes nothing, so no input event
    // comes: the release of the pointer sets the value then.
    panel.addEventListener("pointerup", (e) => {
      const slider = e.target.closest?.("input.slider.unset");
      if (slider) this.setRating(String(slider.dataset.rate), Number(slider.value), slider);
    });
    panel.querySelector("[data-sort-by-rating]")?.addEventListener("click", () => this.sortByRating());
    this.marksToggle = panel.querySelector("[data-show-marks]");
    this.marksToggle?.addEventListener("change", () => {
      this.store.change((s) => { s.show_marks = this.marksToggle.checked; }, "view");
      this.render();
    });
  }

  /** The first time the step opens, rank in this annotator's own random order (the server shuffles the
   * outputs per assignment with a stored seed, so a reload gives the same order), not by category,
   * which would anchor the ranking. */
  ensureRanking() {
    if (!this.store.state.ranking) {
      this.store.change((s) => { s.ranking = this.store.detail.units.map((u) => u.id); }, "order");
    }
  }

  move(unitId, index) {
    this.store.change((s) => {
      s.ranking = s.ranking.filter((id) => id !== unitId);
      s.ranking.splice(Math.min(index, s.ranking.length), 0, unitId);
    }, "order");
    this.render();
    refocusCard(this.list, unitId);
    announce(`Rank ${this.store.state.ranking.indexOf(unitId) + 1} of ${this.store.state.ranking.length}.`);
  }

  sortByRating() {
    const { ratings } = this.store.state;
    this.store.change((s) => {
      const score = (id) => (typeof ratings[id] === "number" ? ratings[id] : -1);
      s.ranking = [...s.ranking].sort((a, b) => score(b) - score(a));
    }, "order");
    this.render();
    announce("Outputs sorted by rating, highest first.");
  }

  onKey(e) {
    const card = e.target.closest?.(".card[data-unit]");
    if (!card || e.target !== card || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key !== "ArrowUp" && e.key !== "ArrowDown") return;
    e.preventDefault();
    const delta = e.key === "ArrowUp" ? -1 : 1;
    if (!e.shiftKey) { focusSiblingCard(card, delta, this.list); return; }
    const id = String(card.dataset.unit);
    const index = this.store.state.ranking.indexOf(id) + delta;
    if (index >= 0 && index < this.store.state.ranking.length) this.move(id, index);
  }

  onInput(e) {
    const input = e.target.closest("input[data-rate]");
    if (!input) return;
    const id = String(input.dataset.rate);
    const raw = input.value.trim();
    // A number field holding text that is not a number reads as "" but says so in its validity.
    const bad = Boolean(input.validity && input.validity.badInput);
    const value = raw === "" ? null : Number(raw);
    const valid = value !== null && Number.isFinite(value) && value >= 0 && value <= 100;
    if (bad || (raw !== "" && !valid)) {
      // Out of range or not a number: the earlier rating is dropped (it must never be submitted as if it
      // were still meant), the output counts as not rated, and the field says why.
      this.invalid.set(id, bad ? "" : raw);
      this.setRating(id, null, input);
      return;
    }
    this.invalid.delete(id);
    this.setRating(id, valid ? value : null, input);
  }

  /** Set (or, with null, clear) a rating; keeps the number field, the slider and the card's name in step. */
  setRating(id, value, from = null) {
    const card = this.list.querySelector(`.card[data-unit="${id}"]`);
    if (!card) return;
    const valid = value !== null;
    for (const other of card.querySelectorAll("input[data-rate]")) if (other !== from && valid) other.value = String(value);
    this.store.change((s) => {
      if (valid) s.ratings[id] = value; else delete s.ratings[id];
    }, "rating");
    card.classList.toggle("unrated", !valid);
    card.querySelector(".slider")?.classList.toggle("unset", !valid);
    const ranking = this.store.state.ranking;
    card.setAttribute("aria-label", this.cardLabel(id, ranking.indexOf(id), ranking.length));
    const flag = card.querySelector(".not-rated");
    if (flag) flag.hidden = valid;
    this.showInvalid(card, id); // after the "not rated" flag: an invalid field says why instead
    this.refreshChecks();
  }

  /** The field's own message when what it holds is not a rating (next to it, and named by it). */
  showInvalid(card, id) {
    const invalid = this.invalid.has(id);
    card.classList.toggle("invalid", invalid);
    const field = card.querySelector(".rate-number");
    const message = card.querySelector(".rate-error");
    if (field) {
      // Named only while shown: a hidden element that aria-describedby names is still read out.
      if (invalid) {
        field.setAttribute("aria-invalid", "true");
        field.setAttribute("aria-describedby", `rate-err-${id}`);
      } else {
        field.removeAttribute("aria-invalid");
        field.removeAttribute("aria-describedby");
      }
    }
    if (message) message.hidden = !invalid;
    const flag = card.querySelector(".not-rated");
    if (flag && invalid) flag.hidden = true;
  }

  cardLabel(id, index, total) {
    const rating = this.store.state.ratings[id];
    const rated = typeof rating === "number";
    const state = this.invalid.has(id) ? ", rating not valid" : rated ? `, rated ${rating}` : ", not rated";
    return `Rank ${index + 1} of ${total}${state}: ${this.store.unit(id).text}`;
  }

  render() {
    this.ensureRanking();
    if (this.marksToggle) this.marksToggle.checked = this.store.state.show_marks !== false;
    const { ranking } = this.store.state;
    this.list.replaceChildren(...ranking.map((id, i) => this.card(id, i, ranking.length)));
    this.refreshChecks();
  }

  card(id, index, total) {
    const unit = this.store.unit(id);
    const rating = this.store.state.ratings[id];
    const rated = typeof rating === "number";
    const category = categoryOf(this.store.state, id);
    const marks = this.store.state.show_marks !== false;
    const text = marks
      ? renderMarked(unit.text, withoutRedundantDeletions(this.store.editsOf(id), this.store.detail.source.text), this.store.detail.source.text,
        { focusable: false })
      : unit.text;
    return h("li", {
      class: "card output rank-card" + (rated ? "" : " unrated"), tabindex: "0", dataset: { unit: String(id) },
      "aria-label": this.cardLabel(id, index, total),
      "aria-describedby": "keys-rank",
    },
      h("span", { class: "rank", "aria-hidden": "true" }, String(index + 1)),
      h("button", { type: "button", class: "handle", tabindex: "-1", "aria-hidden": "true", title: "Drag to rank" }, "⠿"),
      h("div", { class: "rank-body" },
        h("p", { class: "output-text" + (marks ? " marked" : "") }, text),
        h("span", { class: `badge cat-${category}` }, CATEGORY_LABELS[category])),
      h("div", { class: "rate" },
        h("label", { for: `rate-${id}`, class: "visually-hidden" }, `Rating of the output ranked ${index + 1}`),
        h("input", { id: `rate-${id}`, class: "rate-number", type: "number", min: "0", max: "100", step: "any",
          inputmode: "decimal", value: rated ? String(rating) : (this.invalid.get(id) ?? ""), placeholder: "0–100",
          dataset: { rate: String(id) }, "aria-invalid": this.invalid.has(id) ? "true" : null,
          "aria-describedby": this.invalid.has(id) ? `rate-err-${id}` : null }),
        h("input", { class: "slider" + (rated ? "" : " unset"), type: "range", min: "0", max: "100", step: "1",
          value: rated ? String(rating) : "50", tabindex: "-1", "aria-hidden": "true", dataset: { rate: String(id) },
          title: "Click or drag to rate" }),
        h("span", { class: "not-rated", hidden: rated || this.invalid.has(id), "aria-hidden": "true" }, "not rated"),
        h("span", { class: "rate-error", id: `rate-err-${id}`, hidden: !this.invalid.has(id) },
          "Enter a number from 0 to 100")),
    );
  }

  refreshChecks() {
    const { ranking, ratings } = this.store.state;
    const rated = ranking.filter((id) => typeof ratings[id] === "number").length;
    const invalid = this.invalidIds().length;
    if (this.counter) {
      this.counter.textContent = `${rated} of ${ranking.length} rated` +
        (invalid ? ` · ${invalid} not a valid rating` : "");
    }
    const cards = [...this.list.children];
    cards.forEach((card) => card.classList.remove("conflict"));
    const pairs = contradictions(ranking, ratings, this.orderPoints);
    for (const [i, j] of pairs) { cards[i]?.classList.add("conflict"); cards[j]?.classList.add("conflict"); }
    if (!pairs.length) { this.warning.hidden = true; this.warning.textContent = ""; return; }
    const shown = pairs.slice(0, 3).map(([i, j]) =>
      `rank ${i + 1} has ${ratings[ranking[i]]} but rank ${j + 1} has ${ratings[ranking[j]]}`);
    this.warning.hidden = false;
    this.warning.textContent = `Check the order: ${shown.join("; ")}${pairs.length > 3 ? ` (and ${pairs.length - 3} more)` : ""}. ` +
      `A better-ranked output usually should not score more than ${this.orderPoints} points lower. You can still submit.`;
  }

  /** Ids whose field holds something that is not a rating (out of 0–100, or not a number), in rank order. */
  invalidIds() {
    return (this.store.state.ranking || []).filter((id) => this.invalid.has(id));
  }

  /** Ids not rated yet, in rank order. */
  unrated() {
    const { ranking, ratings } = this.store.state;
    return (ranking || []).filter((id) => typeof ratings[id] !== "number");
  }
}
