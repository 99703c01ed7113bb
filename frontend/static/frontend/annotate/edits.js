// Step 2: each output with its edits against the complex sentence (deletion ^, paraphrase bold,
// split ||) and the Fix dialog that corrects them. Offsets are characters, ends exclusive.

import { CATEGORY_LABELS, announce, focusSiblingCard, h } from "./dom.js";
import { categoryOf } from "./state.js";

const DEGRADED_TITLE = "Aligned by spelling only (the word-embedding model was unavailable): check the marked edits.";

/** Word tokens of a text as [start, end] offsets. */
export function tokenize(text) {
  return [...text.matchAll(/\S+/g)].map((m) => [m.index, m.index + m[0].length]);
}

/** The output text with its edits drawn in: a DocumentFragment. */
export function renderMarked(text, edits, sourceText, { focusable = true } = {}) {
  const bold = edits.filter((e) => e.type === "paraphrase" && e.output_span);
  const marks = edits.filter((e) => e.type !== "paraphrase" && e.anchor !== null && e.anchor !== undefined)
    .sort((a, b) => a.anchor - b.anchor || (a.type === "split" ? 1 : -1));
  const cuts = new Set([0, text.length]);
  for (const e of bold) { cuts.add(e.output_span[0]); cuts.add(e.output_span[1]); }
  for (const e of marks) cuts.add(Math.min(e.anchor, text.length));
  const points = [...cuts].sort((a, b) => a - b);
  const frag = document.createDocumentFragment();
  for (let i = 0; i < points.length; i++) {
    const at = points[i];
    for (const mark of marks.filter((m) => Math.min(m.anchor, text.length) === at)) frag.append(markNode(mark, sourceText, focusable));
    if (i === points.length - 1) break;
    const piece = text.slice(at, points[i + 1]);
    const isBold = bold.some((e) => e.output_span[0] <= at && points[i + 1] <= e.output_span[1] && e.output_span[0] < e.output_span[1]);
    if (isBold) {
      const was = bold.find((e) => e.output_span[0] <= at && points[i + 1] <= e.output_span[1]);
      const title = was && isMove(was, text, sourceText) ? "moved from elsewhere in the sentence"
        : was && was.source_span ? `replaces: ${sourceText.slice(...was.source_span)}` : "new or reworded";
      frag.append(h("strong", { class: "mk-para", title }, piece));
    } else frag.append(piece);
  }
  return frag;
}

function markNode(mark, sourceText, focusable) {
  if (mark.type === "split") return h("span", { class: "mk-split", role: "img", "aria-label": "sentence split" }, "||");
  const words = mark.source_span ? sourceText.slice(...mark.source_span) : "";
  return h("span", {
    class: "mk-del", tabindex: focusable ? "0" : null, role: "img",
    "aria-label": `deleted: ${words}`, "data-tip": words,
  }, "^");
}

const squash = (t) => t.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");

/** True when a paraphrase only moved words: its output text is its source text. */
export function isMove(edit, text, sourceText) {
  return edit.type === "paraphrase" && Boolean(edit.source_span) && Boolean(edit.output_span) &&
    squash(sourceText.slice(...edit.source_span)) === squash(text.slice(...edit.output_span));
}

/** How the Fix dialog lists an edit: 'Deleted "word"', 'Split after "word"', 'Moved "word"',
 * 'Paraphrase "new" (replaces "old")'. */
export function editLabel(edit, text, sourceText) {
  const quote = (t) => `“${t.trim()}”`;
  if (edit.type === "deletion") return `Deleted ${edit.source_span ? quote(sourceText.slice(...edit.source_span)) : "words"}`;
  if (edit.type === "split") {
    const before = text.slice(0, Math.min(edit.anchor, text.length)).trim().split(/\s+/).filter(Boolean).pop();
    return before ? `Split after ${quote(before)}` : "Split at the start";
  }
  if (isMove(edit, text, sourceText)) return `Moved ${quote(text.slice(...edit.output_span))}`;
  const src = edit.source_span ? ` (replaces ${quote(sourceText.slice(...edit.source_span))})` : "";
  return `Paraphrase ${quote(text.slice(...edit.output_span))}${src}`;
}

const spansOverlap = (a, b) => Boolean(a && b && a[0] < b[1] && b[0] < a[1]);

/** The one rule on source words: a word is either deleted (struck) or rewritten (bold), never both.
 * The first source text that breaks it, or null. */
export function doubleMarked(edits, sourceText) {
  const dels = edits.filter((e) => e.type === "deletion" && e.source_span);
  for (const p of edits.filter((e) => e.type === "paraphrase" && e.source_span)) {
    const d = dels.find((x) => spansOverlap(x.source_span, p.source_span));
    if (d) {
      const lo = Math.max(d.source_span[0], p.source_span[0]);
      const hi = Math.min(d.source_span[1], p.source_span[1]);
      return sourceText.slice(lo, hi).trim() || sourceText.slice(...d.source_span);
    }
  }
  return null;
}

/** The automatic edits (annotation/analysis/edits.py) record a moved word twice: a deletion at its old place
 * and a paraphrase at its new place whose source is that same text. The page shows it once, as "Moved":
 * the deletion is redundant (the paraphrase's source already removes the words), so no source word is drawn
 * struck and bold at once. */
export function withoutRedundantDeletions(edits, sourceText = null) {
  const replaced = edits.filter((e) => e.type === "paraphrase" && e.source_span).map((e) => e.source_span);
  const out = [];
  for (const e of edits) {
    if (e.type !== "deletion" || !e.source_span || !replaced.some((r) => spansOverlap(r, e.source_span))) { out.push(e); continue; }
    // Keep what is left of the deletion outside the moved words (a comma that went, say).
    let parts = [e.source_span];
    for (const r of replaced) {
      parts = parts.flatMap(([a, b]) => (r[1] <= a || b <= r[0]) ? [[a, b]] : [[a, r[0]], [r[1], b]].filter(([x, y]) => x < y));
    }
    for (const [a, b] of parts) {
      const words = sourceText === null ? "x" : sourceText.slice(a, b);
      if (words.trim()) out.push({ ...e, source_span: trimSpan(sourceText, a, b) });
    }
  }
  return out;
}

function trimSpan(text, a, b) {
  if (text === null) return [a, b];
  while (a < b && /\s/.test(text[a])) a++;
  while (b > a && /\s/.test(text[b - 1])) b--;
  return [a, b];
}

function sameEdits(a, b) {
  const key = (list) => JSON.stringify(sortEdits(list).map((e) => [e.type, e.source_span, e.output_span, e.anchor]));
  return key(a) === key(b);
}

function sortEdits(list) {
  const pos = (e) => (e.output_span ? e.output_span[0] : e.anchor ?? 0);
  return [...list].sort((a, b) => pos(a) - pos(b) || a.type.localeCompare(b.type));
}

export class EditsStep {
  constructor(panel, store, dialog) {
    this.panel = panel;
    this.store = store;
    this.list = panel.querySelector("[data-edits-list]");
    this.fix = new FixDialog(dialog, store.detail.source.text);
    panel.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-fix]");
      if (button) this.open(String(button.dataset.fix), button);
    });
    panel.addEventListener("keydown", (e) => {
      const card = e.target.closest?.(".card[data-unit]");
      if (!card || e.target !== card || e.altKey || e.ctrlKey || e.metaKey) return;
      if (e.key === "ArrowUp" || e.key === "ArrowDown") { e.preventDefault(); focusSiblingCard(card, e.key === "ArrowUp" ? -1 : 1, this.panel); }
      else if (e.key.toLowerCase() === "f") { e.preventDefault(); this.open(String(card.dataset.unit), card.querySelector("button[data-fix]")); }
    });
    // One Tab stop for the whole list (a roving tab index): the current card and its controls are
    // tabbable, the others are reached with the arrow keys.
    this.current = null;
    this.list.addEventListener("focusin", (e) => {
      const card = e.target.closest(".card[data-unit]");
      if (card && card.dataset.unit !== this.current) this.rove(card.dataset.unit);
    });
  }

  rove(id) {
    const cards = [...this.list.querySelectorAll(".card[data-unit]")];
    const active = cards.find((c) => c.dataset.unit === id) || cards[0];
    this.current = active ? active.dataset.unit : null;
    for (const card of cards) {
      const on = card === active;
      card.tabIndex = on ? 0 : -1;
      for (const el of card.querySelectorAll("button, [tabindex]")) if (el !== card) el.tabIndex = on ? 0 : -1;
    }
  }

  open(id, returnFocus) {
    const unit = this.store.unit(id);
    const source = this.store.detail.source.text;
    const auto = withoutRedundantDeletions(unit.auto_edits || [], source);
    this.fix.open({
      unit, edits: withoutRedundantDeletions(this.store.editsOf(id), source), auto,
      onSave: (edits) => {
        this.store.change((s) => {
          if (sameEdits(edits, auto)) delete s.edits[id];
          else s.edits[id] = sortEdits(edits);
        }, "edits");
        this.renderCard(id);
        this.rove(id);
        announce(this.store.state.edits[id] ? "Corrected edits saved." : "Edits are back to the automatic ones.");
      },
      returnFocus: () => (this.panel.querySelector(`button[data-fix="${id}"]`) || returnFocus)?.focus(),
    });
  }

  render() {
    const s = this.store.state;
    const order = ["deletion", "paraphrase", "split"].flatMap((c) => s.groups[c]);
    this.list.replaceChildren(...order.map((id, i) => this.card(id, i, order.length)));
    this.rove(this.current);
  }

  renderCard(id) {
    const old = this.list.querySelector(`.card[data-unit="${id}"]`);
    if (!old) return;
    const cards = [...this.list.children];
    old.replaceWith(this.card(id, cards.indexOf(old), cards.length));
  }

  card(id, index, total) {
    const unit = this.store.unit(id);
    const corrected = Boolean(this.store.state.edits[id]);
    const edits = this.store.editsOf(id);
    return h("li", {
      class: "card output" + (corrected ? " corrected" : ""), tabindex: "0", dataset: { unit: String(id) },
      "aria-label": `Output ${index + 1} of ${total}${corrected ? ", edits corrected" : ""}`,
    },
      h("span", { class: `badge cat-${categoryOf(this.store.state, id)}` }, CATEGORY_LABELS[categoryOf(this.store.state, id)].split("-")[0]),
      h("p", { class: "output-text marked" }, renderMarked(unit.text, withoutRedundantDeletions(edits, this.store.detail.source.text), this.store.detail.source.text)),
      h("div", { class: "card-tools" },
        corrected ? h("span", { class: "tag" }, "corrected") : null,
        unit.analysis_error ? h("span", { class: "tag warn", title: unit.analysis_error }, "no automatic edits") : null,
        unit.analysis_degraded ? h("span", { class: "tag warn", title: DEGRADED_TITLE }, "rough automatic edits") : null,
        h("button", { type: "button", class: "secondary small", dataset: { fix: String(id) }, "aria-label": `Fix the edits of output ${index + 1}` }, "Fix")),
    );
  }
}

/** The span-fixing pop-up: a modal <dialog> with focus kept inside; Esc cancels. */
class FixDialog {
  constructor(dialog, sourceText) {
    this.dialog = dialog;
    this.sourceText = sourceText;
    this.sourceTokens = tokenize(sourceText);
    this.rows = { source: dialog.querySelector('[data-tokens="source"]'), output: dialog.querySelector('[data-tokens="output"]') };
    this.preview = dialog.querySelector("[data-preview]");
    this.editList = dialog.querySelector("[data-edit-list]");
    this.message = dialog.querySelector("[data-fix-message]");
    this.session = null;
    dialog.addEventListener("click", (e) => this.onClick(e));
    dialog.addEventListener("keydown", (e) => this.onKey(e));
    this.editFocus = 0;
    this.editList.addEventListener("focusin", (e) => {
      const button = e.target.closest("button");
      if (!button) return;
      this.editFocus = [...this.editList.querySelectorAll("button")].indexOf(button);
      this.roveEditList(button);
    });
    this.discard = dialog.querySelector("[data-fix-discard]");
    // Esc: like Cancel, it asks before throwing changes away; Esc while asking keeps editing.
    dialog.addEventListener("cancel", (e) => {
      e.preventDefault();
      if (this.discard && !this.discard.hidden) this.keepEditing();
      else this.requestCancel();
    });
    // A browser may close a modal dialog on Esc even so (Chromium does when Esc comes twice without a click in
    // between): with changes still unsaved, it opens again and asks.
    dialog.addEventListener("close", () => {
      // The event comes after the close it reports: a dialog opened again meanwhile (Fix pressed right after
      // Save) is open now, and that close was ours, not the browser's.
      if (!this.session || this.dialog.open) return;
      if (sameEdits(this.session.edits, this.session.opened)) { this.close(false); return; }
      this.dialog.showModal();
      if (this.discard && !this.discard.hidden) { this.keepEditing(); return; }
      this.requestCancel();
    });
    for (const side of ["source", "output"]) this.bindTokenRow(side);
  }

  open({ unit, edits, auto, onSave, returnFocus }) {
    this.session = {
      unit, auto, onSave, returnFocus, edits: edits.map((e) => ({ ...e })), opened: edits.map((e) => ({ ...e })),
      tokens: { source: this.sourceTokens, output: tokenize(unit.text) },
      sel: { source: null, output: null }, focus: { source: 0, output: 0 },
    };
    this.dialog.querySelector("[data-fix-output]").textContent = unit.text;
    if (this.discard) this.discard.hidden = true;
    this.say("");
    this.draw();
    this.dialog.showModal();
    this.rows.output.querySelector('[tabindex="0"]')?.focus();
  }

  close(save) {
    if (!this.session) return;
    const { onSave, returnFocus, edits } = this.session;
    this.session = null;
    if (this.dialog.open) this.dialog.close();
    if (save) onSave(edits);
    returnFocus();
  }

  say(text) { this.message.textContent = text; }

  /** Cancel: closes at once when nothing changed; otherwise asks first (the discard bar). */
  requestCancel() {
    if (!this.session) return;
    if (sameEdits(this.session.edits, this.session.opened) || !this.discard) { this.close(false); return; }
    this.discard.hidden = false;
    this.discard.querySelector('[data-act="keep"]').focus();
  }

  keepEditing() {
    this.discard.hidden = true;
    this.dialog.querySelector('[data-act="save"]').focus();
  }

  // --- token rows: click, Shift+click or drag to select; arrows (+Shift) with the keyboard ---
  bindTokenRow(side) {
    const row = this.rows[side];
    let dragging = false;
    row.addEventListener("pointerdown", (e) => {
      const t = e.target.closest("[data-i]");
      if (!t || !this.session) return;
      e.preventDefault();
      const i = Number(t.dataset.i);
      const sel = this.session.sel[side];
      this.select(side, e.shiftKey && sel ? sel[0] : i, i);
      dragging = true;
    });
    row.addEventListener("pointerover", (e) => {
      const t = e.target.closest("[data-i]");
      if (!dragging || !t || !this.session || !(e.buttons & 1)) return;
      this.select(side, this.session.sel[side][0], Number(t.dataset.i), false);
    });
    window.addEventListener("pointerup", () => { dragging = false; });
    row.addEventListener("keydown", (e) => {
      if (!this.session || !e.target.closest("[data-i]")) return;
      const n = this.session.tokens[side].length;
      const at = this.session.focus[side];
      const to = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: n - 1 }[e.key];
      if (to === undefined) {
        if (e.key === " " || e.key === "Enter") { e.preventDefault(); this.select(side, at, at); }
        return;
      }
      e.preventDefault();
      const i = Math.max(0, Math.min(n - 1, to));
      const sel = this.session.sel[side];
      this.select(side, e.shiftKey && sel ? sel[0] : i, i);
    });
  }

  select(side, anchor, focusIndex, focus = true) {
    this.session.sel[side] = [anchor, focusIndex];
    this.session.focus[side] = focusIndex;
    this.drawTokens(side);
    if (focus) this.rows[side].querySelector(`[data-i="${focusIndex}"]`)?.focus();
    const [a, b] = this.range(side);
    const [start, end] = [this.session.tokens[side][a][0], this.session.tokens[side][b][1]];
    const text = (side === "source" ? this.sourceText : this.session.unit.text).slice(start, end);
    this.say(`Selected in the ${side === "source" ? "complex sentence" : "output"}: “${text}”.`);
  }

  range(side) {
    const sel = this.session.sel[side];
    return sel ? [Math.min(...sel), Math.max(...sel)] : null;
  }

  // --- actions -------------------------------------------------------------------------------
  onClick(e) {
    const button = e.target.closest("button[data-act]");
    if (!button || !this.session) return;
    const act = button.dataset.act;
    const index = button.dataset.edit === undefined ? null : Number(button.dataset.edit);
    const before = this.session.edits.map((x) => ({ ...x }));
    let result = this.apply(act, index);
    if (result === "closed" || result === "asked") return;
    const both = this.session && doubleMarked(this.session.edits, this.sourceText);
    if (both) {
      this.session.edits = before;
      result = `Not changed: “${both}” would be both deleted and reworded. Remove one of the two edits first.`;
    }
    if (typeof result === "string") this.say(result);
    this.draw();
    const same = this.dialog.querySelector(`button[data-act="${act}"]${index === null ? "" : `[data-edit="${index}"]`}`);
    (same || this.dialog.querySelector('[data-act="save"]')).focus();
  }

  apply(act, index) {
    const s = this.session;
    const out = s.tokens.output;
    const outText = s.unit.text;
    const outRange = this.range("output");
    const srcRange = this.range("source");
    const outSpan = outRange && [out[outRange[0]][0], out[outRange[1]][1]];
    switch (act) {
      case "save": this.close(true); return "closed";
      case "cancel": this.requestCancel(); return this.session ? "asked" : "closed";
      case "discard": this.close(false); return "closed";
      case "keep": this.keepEditing(); return "asked";
      case "reset": s.edits = s.auto.map((e) => ({ ...e })); return "Back to the automatic edits.";
      case "add-para": {
        if (!outSpan) return "First select words of the output.";
        const inside = s.edits.filter((e) => e.type === "paraphrase" && overlaps(e.output_span, outSpan));
        const start = Math.min(outSpan[0], ...inside.map((e) => e.output_span[0]));
        const end = Math.max(outSpan[1], ...inside.map((e) => e.output_span[1]));
        const sourceSpan = srcRange ? [this.sourceTokens[srcRange[0]][0], this.sourceTokens[srcRange[1]][1]]
          : inside.find((e) => e.source_span)?.source_span || null;
        s.edits = s.edits.filter((e) => !inside.includes(e));
        // Source words marked deleted that now turn out to be reworded: they stop being deleted (a word is
        // one or the other), and the rest of such a deletion stays.
        const wasDeleted = sourceSpan ? s.edits.filter((e) => e.type === "deletion" && overlaps(e.source_span, sourceSpan)) : [];
        if (wasDeleted.length) {
          s.edits = s.edits.flatMap((e) => (wasDeleted.includes(e)
            ? spanWithout(e.source_span, sourceSpan, this.sourceText).map((part) => ({ ...e, source_span: part }))
            : [e]));
        }
        s.edits.push({ type: "paraphrase", source_span: sourceSpan, output_span: [start, end], anchor: null });
        const added = `Paraphrase added: “${outText.slice(start, end)}”`;
        return wasDeleted.length
          ? `${added}; “${this.sourceText.slice(...sourceSpan)}” was marked deleted and is now what it replaces.`
          : `${added}.`;
      }
      case "unmark": {
        if (!outSpan) return "First select words of the output.";
        const next = [];
        for (const e of s.edits) {
          if (e.type !== "paraphrase" || !overlaps(e.output_span, outSpan)) { next.push(e); continue; }
          if (e.output_span[0] < outSpan[0]) next.push({ ...e, output_span: [e.output_span[0], trimEnd(outText, outSpan[0])] });
          if (e.output_span[1] > outSpan[1]) next.push({ ...e, output_span: [trimStart(outText, outSpan[1]), e.output_span[1]] });
        }
        s.edits = next.filter((e) => e.type !== "paraphrase" || e.output_span[0] < e.output_span[1]);
        return "Highlight removed from the selected words.";
      }
      case "add-split": {
        if (!outRange) return "First select the output word that starts the new sentence.";
        const anchor = out[outRange[0]][0];
        const refused = splitRefusal(s.edits, anchor, null);
        if (refused) return `Not added: ${refused}`;
        s.edits.push({ type: "split", source_span: null, output_span: null, anchor });
        return "Split marker added.";
      }
      case "add-del": {
        if (!srcRange) return "First select the deleted words in the complex sentence.";
        const anchor = outRange ? out[outRange[0]][0] : outText.length;
        const span = [this.sourceTokens[srcRange[0]][0], this.sourceTokens[srcRange[1]][1]];
        const already = s.edits.find((e) => e.type === "deletion" && overlaps(e.source_span, span));
        if (already) {
          return `Not added: “${this.sourceText.slice(...already.source_span)}” is already marked deleted. ` +
            "To move its caret use ◀ ▶ in the list of edits; to change it, remove it first.";
        }
        s.edits.push({ type: "deletion", source_span: span, output_span: null, anchor });
        return "Deletion caret added.";
      }
      case "remove": s.edits.splice(index, 1); return "Edit removed.";
      case "start-left": case "start-right": case "end-left": case "end-right":
        return this.moveBoundary(s.edits[index], act);
      case "left": case "right": {
        const e = s.edits[index];
        const stops = [...out.map((t) => t[0]), outText.length];
        const i = stops.findIndex((p) => p >= e.anchor);
        const j = act === "left" ? (stops[i] === e.anchor ? i - 1 : i - 1) : (stops[i] === e.anchor ? i + 1 : i);
        if (j < 0 || j >= stops.length) return "Cannot move further.";
        if (e.type === "split") {
          const refused = splitRefusal(s.edits, stops[j], e);
          if (refused) return `Not moved: ${refused}`;
        }
        e.anchor = stops[j];
        return "Marker moved.";
      }
      default: return "";
    }
  }

  moveBoundary(e, act) {
    const out = this.session.tokens.output;
    const [start, end] = e.output_span;
    if (act.startsWith("start")) {
      const starts = out.map((t) => t[0]);
      const i = starts.findIndex((p) => p >= start);
      const j = act === "start-left" ? (starts[i] === start ? i - 1 : i - 1) : (starts[i] === start ? i + 1 : i);
      if (j < 0 || j >= starts.length || starts[j] >= end) return "Cannot move the start further.";
      e.output_span = [starts[j], end];
    } else {
      const ends = out.map((t) => t[1]);
      let i = ends.length - 1;
      while (i > 0 && ends[i] > end) i--;
      const j = act === "end-left" ? (ends[i] === end ? i - 1 : i) : i + 1;
      if (j < 0 || j >= ends.length || ends[j] <= start) return "Cannot move the end further.";
      e.output_span = [start, ends[j]];
    }
    return `Paraphrase is now “${this.session.unit.text.slice(...e.output_span)}”.`;
  }

  onKey(e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); this.close(true); return; }
    const inList = e.target.closest?.("[data-edit-list] button");
    if (inList && ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"].includes(e.key)) {
      e.preventDefault();
      const buttons = [...this.editList.querySelectorAll("button")];
      const at = buttons.indexOf(inList);
      const to = { ArrowLeft: at - 1, ArrowUp: at - 1, ArrowRight: at + 1, ArrowDown: at + 1, Home: 0, End: buttons.length - 1 }[e.key];
      buttons[Math.max(0, Math.min(buttons.length - 1, to))]?.focus();
      return;
    }
    if (e.key === "Tab") {
      // Keep the focus inside the dialog.
      const focusables = [...this.dialog.querySelectorAll("button:not([disabled]), [tabindex]")]
        .filter((el) => el.offsetParent !== null && el.tabIndex >= 0);
      const first = focusables[0];
      const last = focusables[focusables.length - 1];
      if (e.shiftKey && document.activeElement === first) { e.preventDefault(); last.focus(); }
      else if (!e.shiftKey && document.activeElement === last) { e.preventDefault(); first.focus(); }
    }
  }

  // --- drawing -------------------------------------------------------------------------------
  draw() {
    this.drawTokens("source");
    this.drawTokens("output");
    const s = this.session;
    this.preview.replaceChildren(renderMarked(s.unit.text, s.edits, this.sourceText, { focusable: false }));
    s.edits = sortEdits(s.edits);
    this.editList.replaceChildren(...s.edits.map((e, i) => this.editItem(e, i)));
    if (!s.edits.length) this.editList.append(h("li", { class: "muted" }, "No edits."));
    this.roveEditList();
  }

  /** The list of edits is one Tab stop: the button last used (or the first) is tabbable; arrows move. */
  roveEditList(focused = null) {
    const buttons = [...this.editList.querySelectorAll("button")];
    if (!buttons.length) return;
    const keep = focused || buttons[Math.min(this.editFocus || 0, buttons.length - 1)];
    buttons.forEach((b) => { b.tabIndex = b === keep ? 0 : -1; });
  }

  drawTokens(side) {
    const s = this.session;
    const text = side === "source" ? this.sourceText : s.unit.text;
    const range = this.range(side);
    const covered = (span, list) => list.some((x) => x && span[0] < x[1] && x[0] < span[1]);
    const para = s.edits.filter((e) => e.type === "paraphrase").map((e) => (side === "source" ? e.source_span : e.output_span));
    const dels = s.edits.filter((e) => e.type === "deletion").map((e) => e.source_span);
    const row = this.rows[side];
    const nodes = [];
    s.tokens[side].forEach((span, i) => {
      if (side === "output") {
        for (const m of s.edits.filter((e) => e.type !== "paraphrase" && e.anchor === span[0])) {
          nodes.push(h("span", { class: m.type === "split" ? "mk-split" : "mk-del", "aria-hidden": "true" }, m.type === "split" ? "||" : "^"));
        }
      }
      const classes = ["tok"];
      if (range && i >= range[0] && i <= range[1]) classes.push("sel");
      if (covered(span, para)) classes.push("para");
      if (side === "source" && covered(span, dels)) classes.push("del");
      nodes.push(h("span", {
        class: classes.join(" "), role: "option", "aria-selected": classes.includes("sel") ? "true" : "false",
        tabindex: i === s.focus[side] ? "0" : "-1", dataset: { i: String(i) },
      }, text.slice(...span)));
      nodes.push(" ");
    });
    if (side === "output") {
      for (const m of s.edits.filter((e) => e.type !== "paraphrase" && e.anchor >= text.length)) {
        nodes.push(h("span", { class: m.type === "split" ? "mk-split" : "mk-del", "aria-hidden": "true" }, m.type === "split" ? "||" : "^"));
      }
    }
    row.replaceChildren(...nodes);
  }

  editItem(e, i) {
    const text = this.session.unit.text;
    const btn = (act, label, aria) => h("button", { type: "button", class: "secondary small", dataset: { act, edit: String(i) }, "aria-label": aria, title: aria }, label);
    if (e.type === "paraphrase") {
      const label = editLabel(e, text, this.sourceText);
      const what = `the edit ${label}`;
      return h("li", { class: "edit-item" },
        h("span", { class: "edit-desc" }, label),
        h("span", { class: "edit-btns" },
          btn("start-left", "◀ start", `Move the start of ${what} one word left`),
          btn("start-right", "start ▶", `Move the start of ${what} one word right`),
          btn("end-left", "◀ end", `Move the end of ${what} one word left`),
          btn("end-right", "end ▶", `Move the end of ${what} one word right`),
          btn("remove", "Remove", `Remove ${what}`)));
    }
    const label = editLabel(e, text, this.sourceText);
    return h("li", { class: "edit-item" },
      h("span", { class: "edit-desc" }, h("strong", {}, e.type === "split" ? "|| " : "^ "), label),
      h("span", { class: "edit-btns" },
        btn("left", "◀", `Move the marker of: ${label} one word left`),
        btn("right", "▶", `Move the marker of: ${label} one word right`),
        btn("remove", "Remove", `Remove: ${label}`)));
  }
}

/** Why a split cannot go at `anchor` of the output (null when it can): a new sentence starts before a word
 * inside the output, never before its first word, and not where a split already is. */
function splitRefusal(edits, anchor, moving) {
  if (anchor <= 0) return "a split goes before a word inside the output, not at its start (there is no sentence before it).";
  if (edits.some((e) => e !== moving && e.type === "split" && e.anchor === anchor)) return "there is already a split there.";
  return null;
}

/** `span` less the characters of `cut`: zero, one or two spans, without surrounding spaces or empty parts. */
function spanWithout(span, cut, text) {
  const parts = [[span[0], Math.min(span[1], cut[0])], [Math.max(span[0], cut[1]), span[1]]];
  return parts.filter(([a, b]) => a < b).map(([a, b]) => trimSpan(text, a, b)).filter(([a, b]) => a < b && text.slice(a, b).trim());
}

function overlaps(a, b) { return a && b && a[0] < b[1] && b[0] < a[1]; }
function trimEnd(text, at) { let i = at; while (i > 0 && /\s/.test(text[i - 1])) i--; return i; }
function trimStart(text, at) { let i = at; while (i < text.length && /\s/.test(text[i])) i++; return i; }
