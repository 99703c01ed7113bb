// The page state (what is autosaved as a draft) and the store that owns it.
//
// state = {
//   format: 1, revision, step: "categorise" | "edits" | "rate", visited: [steps],
//   confirmed: [steps],                // steps 1-2 accepted as they are ("looks right")
//   show_marks: bool,                  // step 3 shows the step 2 edit marks
//   groups: {deletion: [unit ids], paraphrase: [...], split: [...]},   // order inside each group; ids are
//                                      // the per-assignment opaque strings the server hands out
//   edits: {unitId: [edit, ...]},      // corrected edits only; a unit absent here keeps the automatic ones
//   ranking: [unit ids] | null,        // best first; set when the rank step is first opened
//   ratings: {unitId: 0..100},
//   step_seconds: {categorise, edits, rate}, step_timestamps: {step: {first, last}},
//   submit_key: string | null,         // kept across retries so that submitting is idempotent
// }

import { CATEGORY_ORDER } from "./dom.js";

export const STEPS = ["categorise", "edits", "rate"];
/** The steps the method needs looked at before submitting (the server checks it too:
 * annotation/payloads.py, steps_reviewed_check). */
export const REVIEWED_STEPS = ["categorise", "edits"];

export function initialState(detail) {
  const groups = { deletion: [], paraphrase: [], split: [] };
  for (const unit of detail.units) groups[unit.group].push(unit.id); // the server's starting group
  return {
    format: 1, revision: 0, step: "categorise", visited: ["categorise"], confirmed: [], show_marks: true,
    groups, edits: {}, ranking: null,
    ratings: {}, step_seconds: { categorise: 0, edits: 0, rate: 0 }, step_timestamps: {}, submit_key: null,
  };
}

/** Make a restored state fit the units on the page (each unit exactly once; unknown ids dropped). */
export function normaliseState(saved, detail) {
  const fresh = initialState(detail);
  if (!saved || typeof saved !== "object" || saved.format !== 1) return fresh;
  const ids = new Set(detail.units.map((u) => u.id));
  const seen = new Set();
  const groups = { deletion: [], paraphrase: [], split: [] };
  for (const category of CATEGORY_ORDER) {
    for (const id of (saved.groups && saved.groups[category]) || []) {
      if (ids.has(id) && !seen.has(id)) { groups[category].push(id); seen.add(id); }
    }
  }
  for (const unit of detail.units) if (!seen.has(unit.id)) groups[unit.group].push(unit.id);
  let ranking = null;
  if (Array.isArray(saved.ranking)) {
    const kept = saved.ranking.filter((id, i, all) => ids.has(id) && all.indexOf(id) === i);
    ranking = kept.concat(detail.units.map((u) => u.id).filter((id) => !kept.includes(id)));
  }
  const pick = (obj) => Object.fromEntries(Object.entries(obj || {}).filter(([id]) => ids.has(String(id))));
  return {
    ...fresh,
    revision: Number(saved.revision) || 0,
    step: STEPS.includes(saved.step) ? saved.step : "categorise",
    visited: Array.isArray(saved.visited) ? saved.visited.filter((s) => STEPS.includes(s)) : ["categorise"],
    // Drafts saved before these existed read as "nothing confirmed" and "marks shown".
    confirmed: Array.isArray(saved.confirmed) ? saved.confirmed.filter((s) => REVIEWED_STEPS.includes(s)) : [],
    show_marks: saved.show_marks !== false,
    groups, ranking,
    edits: pick(saved.edits),
    ratings: pick(saved.ratings),
    step_seconds: { ...fresh.step_seconds, ...(saved.step_seconds || {}) },
    step_timestamps: saved.step_timestamps || {},
    submit_key: saved.submit_key || null,
  };
}

/** True when the annotator changed step 1: an output moved to another group or to another place in its
 * group (compared with the order the page started from). */
export function groupsChanged(state, detail) {
  const start = initialState(detail).groups;
  return CATEGORY_ORDER.some((c) => state.groups[c].join("\n") !== start[c].join("\n"));
}

/** {step: "visited" | "confirmed"} for the steps 1-2 that were reviewed. Step 1 is what the page opens on, so
 * having it on screen proves nothing: it counts as "visited" once the annotator changed it (moved an output)
 * and as "confirmed" once they ticked "The groups look right". Step 2 counts once opened, or confirmed. */
export function stepsReviewed(state, detail) {
  const out = {};
  for (const step of REVIEWED_STEPS) {
    const acted = step === "categorise" ? groupsChanged(state, detail) : state.visited.includes(step);
    if (acted) out[step] = "visited";
    else if (state.confirmed.includes(step)) out[step] = "confirmed";
  }
  return out;
}

/** The steps 1-2 not reviewed yet (see stepsReviewed). */
export function stepsUnreviewed(state, detail) {
  const done = stepsReviewed(state, detail);
  return REVIEWED_STEPS.filter((step) => !done[step]);
}

export function categoryOf(state, unitId) {
  return CATEGORY_ORDER.find((c) => state.groups[c].includes(unitId)) || "paraphrase";
}

/** Holds the state; every change goes through `change`, which bumps the revision and notifies. */
export class Store {
  constructor(detail, state) {
    this.detail = detail;
    this.units = new Map(detail.units.map((u) => [u.id, u]));
    this.state = state;
    this.listeners = new Set();
  }

  subscribe(listener) { this.listeners.add(listener); return () => this.listeners.delete(listener); }

  /** Apply `mutate(state)`; `reason` tells listeners what changed ("order", "rating", "edits", "step", "timer"). */
  change(mutate, reason = "change") {
    mutate(this.state);
    this.state.revision += 1;
    for (const listener of this.listeners) listener(this.state, reason);
  }

  unit(id) { return this.units.get(String(id)); }

  editsOf(id) {
    const corrected = this.state.edits[id];
    return corrected || this.unit(id).auto_edits || [];
  }

  /** The submit body (without submit_key). */
  payload() {
    const s = this.state;
    const ranking = s.ranking || this.detail.units.map((u) => u.id);
    return {
      units: ranking.map((id, i) => ({
        unit: id, category: categoryOf(s, id), edits: s.edits[id] || null, rank: i + 1, rating: s.ratings[id],
      })),
      step_seconds: roundSeconds(s.step_seconds),
      step_timestamps: s.step_timestamps,
      steps_reviewed: stepsReviewed(s, this.detail),
    };
  }
}

function roundSeconds(seconds) {
  return Object.fromEntries(STEPS.map((k) => [k, Math.round((seconds[k] || 0) * 10) / 10]));
}
