// Step 1: outputs in Deletion-, Paraphrase- and Splitting-focused groups, pre-filled from the
// automatic category; moved between groups and up/down by dragging (mouse, touch) or the keyboard.

import { CATEGORY_LABELS, CATEGORY_ORDER, announce, focusSiblingCard, h, refocusCard } from "./dom.js";
import { makeSortable } from "./dnd.js";

const KEY_TO_GROUP = { d: "deletion", p: "paraphrase", s: "split" };

export class CategoriseStep {
  constructor(panel, store) {
    this.panel = panel;
    this.store = store;
    this.lists = Object.fromEntries(CATEGORY_ORDER.map((c) => [c, panel.querySelector(`[data-group="${c}"]`)]));
    makeSortable(panel, {
      itemSelector: ".card[data-unit]", handleSelector: ".handle", listSelector: "[data-group]",
      onDrop: (unitId, list, index) => this.move(String(unitId), list.dataset.group, index),
    });
    panel.addEventListener("keydown", (e) => this.onKey(e));
    panel.addEventListener("change", (e) => {
      const select = e.target.closest("select[data-move-group]");
      if (select) this.move(String(select.dataset.moveGroup), select.value, Infinity, true);
    });
  }

  /** Move a unit to `group` at `index` (Infinity: at the end). */
  move(unitId, group, index, keepFocusOnSelect = false) {
    this.store.change((s) => {
      for (const c of CATEGORY_ORDER) s.groups[c] = s.groups[c].filter((id) => id !== unitId);
      const target = s.groups[group];
      target.splice(Math.min(index, target.length), 0, unitId);
    }, "order");
    this.render();
    if (keepFocusOnSelect) this.panel.querySelector(`select[data-move-group="${unitId}"]`)?.focus();
    else refocusCard(this.panel, unitId);
    const position = this.store.state.groups[group].indexOf(unitId) + 1;
    announce(`Moved to ${CATEGORY_LABELS[group]}, position ${position} of ${this.store.state.groups[group].length}.`);
  }

  onKey(e) {
    const card = e.target.closest?.(".card[data-unit]");
    if (!card || e.target !== card || e.altKey || e.ctrlKey || e.metaKey) return;
    const id = String(card.dataset.unit);
    const s = this.store.state;
    const group = CATEGORY_ORDER.find((c) => s.groups[c].includes(id));
    const index = s.groups[group].indexOf(id);
    const key = e.key.toLowerCase();
    if (e.key === "ArrowUp" || e.key === "ArrowDown") {
      e.preventDefault();
      const delta = e.key === "ArrowUp" ? -1 : 1;
      if (!e.shiftKey) { focusSiblingCard(card, delta, this.panel); return; }
      if (index + delta >= 0 && index + delta < s.groups[group].length) this.move(id, group, index + delta);
      else {
        // Past the edge of a group: continue into the neighbouring group.
        const neighbour = CATEGORY_ORDER[CATEGORY_ORDER.indexOf(group) + delta];
        if (neighbour) this.move(id, neighbour, delta < 0 ? Infinity : 0);
      }
    } else if (KEY_TO_GROUP[key] && !e.shiftKey) {
      e.preventDefault();
      if (KEY_TO_GROUP[key] !== group) this.move(id, KEY_TO_GROUP[key], Infinity);
    }
  }

  render() {
    const s = this.store.state;
    for (const category of CATEGORY_ORDER) {
      const list = this.lists[category];
      list.replaceChildren(...s.groups[category].map((id, i) => this.card(id, category, i, s.groups[category].length)));
      const count = this.panel.querySelector(`[data-group-count="${category}"]`);
      if (count) count.textContent = String(s.groups[category].length);
    }
  }

  card(id, category, index, total) {
    const unit = this.store.unit(id);
    const reasons = describeReasons(unit, category);
    const tipId = `why-${id}`;
    return h("li", {
      class: "card output", tabindex: "0", dataset: { unit: String(id) },
      "aria-label": `Output ${index + 1} of ${total} in ${CATEGORY_LABELS[category]}: ${unit.text}`,
      "aria-describedby": "keys-categorise",
    },
      h("button", { type: "button", class: "handle", tabindex: "-1", "aria-hidden": "true", title: "Drag to move" }, "⠿"),
      h("p", { class: "output-text" }, unit.text),
      h("div", { class: "card-tools" },
        h("span", { class: "why", tabindex: "0", role: "note", "aria-describedby": tipId }, "why?",
          h("span", { class: "tip", role: "tooltip", id: tipId }, reasons)),
        h("label", { class: "visually-hidden", for: `grp-${id}` }, "Group"),
        h("select", { id: `grp-${id}`, class: "group-select", dataset: { moveGroup: String(id) }, tabindex: "-1" },
          CATEGORY_ORDER.map((c) => h("option", { value: c, selected: c === category }, CATEGORY_LABELS[c])))),
    );
  }
}

function describeReasons(unit, category) {
  if (unit.analysis_error) return `Not analysed automatically (${unit.analysis_error}); please choose its group.`;
  if (!unit.analysed) return "Not analysed automatically yet; please choose its group.";
  const r = unit.reasons || {};
  const parts = [];
  if (r.rule) parts.push(`Placed here because: ${r.rule}.`);
  if (unit.analysis_degraded) parts.push("Aligned by spelling only (the word-embedding model was unavailable).");
  if (typeof r.compression_ratio === "number") {
    parts.push(`Compression ratio ${r.compression_ratio.toFixed(2)}${typeof r.threshold === "number" ? ` (threshold ${r.threshold})` : ""}.`);
  }
  if (r.output_sentences !== undefined) parts.push(`Sentences: ${r.source_sentences} → ${r.output_sentences}.`);
  if (r.deletion_only) parts.push("Made only by deleting words.");
  if (!parts.length) parts.push(`Automatic category: ${CATEGORY_LABELS[unit.auto_category] || category}.`);
  if (category !== unit.group) parts.push("You moved it from " + (CATEGORY_LABELS[unit.group] || "?") + ".");
  return parts.join(" ");
}
