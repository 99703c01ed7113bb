// The annotation page: reads its data from data-* attributes and the embedded JSON, restores the
// newest saved state (server draft or local copy), and wires the three steps, autosave and submit.

import { announce } from "./dom.js";
import { Autosave, ApiError, Connection, newSubmitKey, submitWithRetry } from "./autosave.js";
import { CategoriseStep } from "./categorise.js";
import { EditsStep } from "./edits.js";
import { RankStep } from "./rank-and-rate.js";
import { REVIEWED_STEPS, Store, normaliseState, stepsReviewed, stepsUnreviewed } from "./state.js";
import { StepTimer, Stepper, trackStickyHeight } from "./steps.js";

function start(root) {
  const cfg = root.dataset;
  const detail = JSON.parse(document.getElementById(cfg.detailId).textContent);
  const tutorial = cfg.mode === "tutorial";
  const errorBox = root.querySelector("[data-error]");
  // What the error banner is about: "unrated" and "unreviewed" follow the page (they update, then go, as the
  // annotator fixes them); other errors stay until the next submit.
  let errorKind = null;
  const showError = (message, field, kind = null) => {
    errorKind = message ? kind : null;
    errorBox.hidden = !message;
    errorBox.textContent = message ? (field ? `${message} (${describeField(field, store)})` : message) : "";
    if (message) errorBox.focus();
  };
  const invalidMessage = (ids) => `${ids.length === 1 ? "1 rating is" : `${ids.length} ratings are`} not a number ` +
    `from 0 to 100 (${ids.map((id) => `rank ${store.state.ranking.indexOf(id) + 1}`).join(", ")}). ` +
    "Correct it before submitting; nothing was sent.";
  const unratedMessage = (n) => `${n} output${n > 1 ? "s are" : " is"} not rated yet. Rate every output before submitting.`;
  const reviewAsks = {
    categorise: "Step 1 (Categorise) is not checked yet: move any output that is in the wrong group, " +
      "or tick “The groups look right”.",
    edits: "You have not opened step 2 (Check edits): open it, or confirm below that its automatic result is right.",
  };
  const unreviewedMessage = (steps) => `${steps.map((s) => reviewAsks[s]).join(" ")} Then submit.`;

  if (detail.annotation && detail.annotation.status === "submitted") {
    root.querySelector("[data-finished]").hidden = false;
    root.querySelector("[data-work]").hidden = true;
    markReady(root);
    return;
  }

  // The newest of the server draft and the local copy wins.
  const server = detail.annotation && detail.annotation.draft && Object.keys(detail.annotation.draft).length
    ? { ...detail.annotation.draft, revision: Math.max(detail.annotation.draft_revision, detail.annotation.draft.revision || 0) }
    : null;
  const local = Autosave.readLocal(cfg.storageKey);
  const newest = [server, local].filter(Boolean).sort((a, b) => (b.revision || 0) - (a.revision || 0))[0];
  const store = new Store(detail, normaliseState(newest, detail));
  const restoredFrom = newest ? (newest === local && local !== server ? "this browser" : "the server") : null;

  const connection = new Connection({ csrf: cfg.csrf, banner: root.querySelector("[data-offline]") });
  const autosave = new Autosave({
    store, connection, url: tutorial ? null : cfg.draftUrl, storageKey: cfg.storageKey,
    status: root.querySelector("[data-save-status]"),
    onFatal: (err) => showError(`Your work could not be saved: ${err.message}`, err.field),
  });
  autosave.savedRevision = server ? server.revision : 0;

  trackStickyHeight(root.querySelector("[data-source-box]"));
  const panels = (name) => root.querySelector(`[data-step-panel="${name}"]`);
  const categorise = new CategoriseStep(panels("categorise"), store);
  const edits = new EditsStep(panels("edits"), store, root.querySelector("[data-fix-dialog]"));
  const rank = new RankStep(panels("rate"), store);
  const views = { categorise, edits, rate: rank };
  const stepper = new Stepper(root, store, { onEnter: (step) => views[step].render() });
  const timer = new StepTimer(store, { onTick: () => {} });
  store.subscribe(() => autosave.schedule());

  // Steps 1 and 2 must be opened or confirmed before submitting (the server refuses otherwise).
  const review = root.querySelector("[data-review]");
  // A row shows while its step is not reviewed, and stays (so that a tick can be taken back) once ticked here.
  const tickedHere = new Set();
  const refreshReview = () => {
    const reviewed = stepsReviewed(store.state, detail);
    let shown = 0;
    for (const step of REVIEWED_STEPS) {
      const row = review.querySelector(`[data-review-step="${step}"]`);
      row.hidden = Boolean(reviewed[step]) && !tickedHere.has(step);
      if (!row.hidden) shown += 1;
      for (const box of root.querySelectorAll(`[data-confirm-step="${step}"]`)) {
        box.checked = store.state.confirmed.includes(step);
      }
    }
    review.hidden = !shown;
  };
  // The "looks right" boxes: in the review box of step 3, and step 1's own.
  root.addEventListener("change", (e) => {
    const box = e.target.closest("[data-confirm-step]");
    if (!box) return;
    const step = box.dataset.confirmStep;
    if (review.contains(box)) tickedHere.add(step);
    store.change((s) => {
      s.confirmed = s.confirmed.filter((x) => x !== step);
      if (box.checked) s.confirmed.push(step);
    }, "review");
  });
  store.subscribe((state, reason) => {
    if (reason === "step" || reason === "review" || reason === "order") refreshReview();
    // An error about missing ratings or steps follows the page: it shrinks, then goes, as they are done.
    if (errorKind === "invalid") {
      const invalid = rank.invalidIds();
      if (!invalid.length) showError(""); else errorBox.textContent = invalidMessage(invalid);
    } else if (errorKind === "unrated") {
      const missing = rank.unrated();
      if (!missing.length) showError(""); else errorBox.textContent = unratedMessage(missing.length);
    } else if (errorKind === "unreviewed") {
      const missing = stepsUnreviewed(state, detail);
      if (!missing.length) showError(""); else errorBox.textContent = unreviewedMessage(missing);
    }
  });
  refreshReview();

  stepper.go(store.state.step, { initial: true });
  if (restoredFrom) {
    announce(`Your saved work was restored from ${restoredFrom}.`);
    root.querySelector("[data-save-status]").textContent = `Restored your saved work (from ${restoredFrom})`;
  }
  autosave.flush();

  root.querySelector("[data-submit]").addEventListener("click", async (event) => {
    const button = event.currentTarget;
    showError("");
    rank.ensureRanking();
    const invalid = rank.invalidIds();
    if (invalid.length) {
      showError(invalidMessage(invalid), null, "invalid");
      root.querySelector(`#rate-${invalid[0]}`)?.focus();
      return;
    }
    const missing = rank.unrated();
    if (missing.length) {
      showError(unratedMessage(missing.length), null, "unrated");
      root.querySelector(`#rate-${missing[0]}`)?.focus();
      return;
    }
    const unreviewed = stepsUnreviewed(store.state, detail);
    if (unreviewed.length) {
      refreshReview();
      showError(unreviewedMessage(unreviewed), null, "unreviewed");
      return;
    }
    if (!store.state.submit_key) store.change((s) => { s.submit_key = newSubmitKey(); }, "submit");
    await autosave.flush();
    const body = { submit_key: store.state.submit_key, ...store.payload() };
    button.disabled = true;
    const status = root.querySelector("[data-submit-status]");
    status.textContent = "Submitting…";
    try {
      const url = tutorial ? cfg.checkUrl : cfg.submitUrl;
      const answer = await submitWithRetry(connection, url, body, {
        onRetry: (ms) => { status.textContent = `Connection problem; retrying in ${Math.round(ms / 1000)} s…`; },
      });
      if (tutorial) return tutorialResult(root, answer, status, button);
      timer.finished = true;
      autosave.stop();
      autosave.clearLocal();
      status.textContent = "";
      root.querySelector("[data-work]").hidden = true;
      const done = root.querySelector("[data-finished]");
      done.hidden = false;
      done.querySelector("[data-annotation-id]").textContent = String(answer.id);
      done.querySelector("h2").focus();
    } catch (err) {
      button.disabled = false;
      status.textContent = "";
      if (err instanceof ApiError) showError(`Not submitted: ${err.message}`, err.field);
      else showError("Not submitted: the server cannot be reached. Your work is kept; try again when you are back online.");
    }
  });

  markReady(root);
}

function tutorialResult(root, answer, status, button) {
  button.disabled = false;
  status.textContent = "";
  const box = root.querySelector("[data-tutorial-result]");
  box.hidden = false;
  box.replaceChildren();
  const title = document.createElement("h2");
  title.tabIndex = -1;
  title.textContent = answer.passed ? "Well done — this practice sentence is passed." : "Not quite. Please look again:";
  box.append(title);
  if (!answer.passed) {
    const list = document.createElement("ul");
    for (const problem of answer.problems) { const li = document.createElement("li"); li.textContent = problem; list.append(li); }
    box.append(list);
  } else {
    const link = document.createElement("a");
    link.className = "button";
    link.href = root.dataset.instructionsUrl;
    link.textContent = answer.tutorials_left ? "Next practice sentence" : "Back to the instructions to start";
    box.append(link);
  }
  title.focus();
}

/** "units[3].rating" → "output ranked 4, rating". */
function describeField(field, store) {
  const m = /^units\[(\d+)\](?:\.(\w+))?/.exec(field || "");
  if (!m) return field;
  return `output ranked ${Number(m[1]) + 1}${m[2] ? `, ${m[2]}` : ""}`;
}

function markReady(root) {
  performance.mark("rr-ready");
  root.dataset.ready = "true";
  document.documentElement.dataset.ready = "true";
}

const root = document.querySelector("[data-annotate-root]");
if (root) start(root);
