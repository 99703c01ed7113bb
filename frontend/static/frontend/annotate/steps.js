// The stepper (categorise → edits → rate) and the active time spent in each step.

import { STEPS } from "./state.js";

const IDLE_AFTER_MS = 60000; // no input for a minute: the clock stops
const HEARTBEAT_S = 30; // save the timings at least this often while working

export class Stepper {
  constructor(root, store, { onEnter }) {
    this.root = root;
    this.store = store;
    this.onEnter = onEnter;
    this.buttons = [...root.querySelectorAll(".stepper [data-goto-step]")];
    this.panels = Object.fromEntries(STEPS.map((s) => [s, root.querySelector(`[data-step-panel="${s}"]`)]));
    root.addEventListener("click", (e) => {
      const button = e.target.closest("[data-goto-step], [data-step-delta]");
      if (!button) return;
      if (button.dataset.gotoStep) this.go(button.dataset.gotoStep);
      else this.go(STEPS[STEPS.indexOf(this.store.state.step) + Number(button.dataset.stepDelta)]);
    });
    document.addEventListener("keydown", (e) => {
      if (!e.altKey || e.ctrlKey || e.metaKey || document.querySelector("dialog[open]")) return;
      const delta = { n: 1, b: -1 }[e.key.toLowerCase()];
      if (delta) { e.preventDefault(); this.go(STEPS[STEPS.indexOf(this.store.state.step) + delta]); }
    });
  }

  go(step, { initial = false } = {}) {
    if (!STEPS.includes(step)) return;
    const previous = this.store.state.step;
    if (!initial && step === previous) return;
    const now = new Date().toISOString();
    // Opening the page is not a change worth saving by itself; the stamps ride along with the next save.
    const record = initial ? (mutate) => mutate(this.store.state) : (mutate) => this.store.change(mutate, "step");
    record((s) => {
      const stamps = s.step_timestamps;
      if (!initial && previous) stamps[previous] = { ...(stamps[previous] || {}), left: now };
      stamps[step] = { entered: now, ...(stamps[step] || {}), last_entered: now };
      s.step = step;
      if (!s.visited.includes(step)) s.visited.push(step);
    });
    this.show(step);
    if (!initial) {
      // The heading goes to the top of the window, just below the sticky complex sentence (its
      // scroll-margin-top is that box's height: annotate.css, trackStickyHeight); focus alone would leave
      // it wherever it was, often under the box.
      const heading = this.panels[step].querySelector("h2");
      if (heading) {
        heading.focus({ preventScroll: true });
        heading.scrollIntoView({ block: "start" });
      }
    }
  }

  show(step) {
    STEPS.forEach((name, i) => {
      this.panels[name].hidden = name !== step;
      const button = this.buttons[i];
      if (name === step) button.setAttribute("aria-current", "step"); else button.removeAttribute("aria-current");
      button.classList.toggle("done", this.store.state.visited.includes(name) && name !== step);
    });
    for (const nav of this.root.querySelectorAll("[data-step-delta]")) {
      const target = STEPS[STEPS.indexOf(step) + Number(nav.dataset.stepDelta)];
      nav.hidden = !target;
    }
    this.onEnter(step);
  }
}

/** Counts seconds in the current step while the tab is visible and the annotator active. */
export class StepTimer {
  constructor(store, { onTick }) {
    this.store = store;
    this.lastInput = Date.now();
    this.sinceSave = 0;
    for (const type of ["pointerdown", "keydown", "input", "wheel", "scroll"]) {
      addEventListener(type, () => { this.lastInput = Date.now(); }, { passive: true, capture: true });
    }
    setInterval(() => this.tick(), 1000);
    this.onTick = onTick;
  }

  tick() {
    if (document.visibilityState !== "visible" || Date.now() - this.lastInput > IDLE_AFTER_MS) return;
    const { state } = this.store;
    if (this.finished) return;
    state.step_seconds[state.step] = (state.step_seconds[state.step] || 0) + 1;
    this.sinceSave += 1;
    if (this.sinceSave >= HEARTBEAT_S) {
      this.sinceSave = 0;
      this.store.change(() => {}, "timer");
    }
    this.onTick();
  }
}

/** Keep `--sticky-h` on the page root equal to the sticky box's height (it changes with the width and the
 * sentence's length), so that headings and cards scrolled into view stop below the box, not under it. */
export function trackStickyHeight(box, target = document.documentElement) {
  const update = () => target.style.setProperty("--sticky-h", `${Math.ceil(box.getBoundingClientRect().height)}px`);
  update();
  if (typeof ResizeObserver === "function") new ResizeObserver(update).observe(box);
  else addEventListener("resize", update);
}
