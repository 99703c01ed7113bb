// Never lose work: every change is written to localStorage at once and, debounced, to the server
// as a draft (PUT {state, revision}); failed saves retry with backoff and an offline banner shows.
// Submitting reuses one submit_key per attempt so that retries are idempotent.

const DEBOUNCE_MS = 800;
const MAX_BACKOFF_MS = 30000;

export class NetworkError extends Error {}

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.detail) || `The server answered ${status}.`);
    this.status = status;
    this.field = body && body.field;
    this.body = body;
  }
}

export class Connection {
  constructor({ csrf, banner }) {
    this.csrf = csrf;
    this.banner = banner;
    addEventListener("offline", () => this.setOnline(false));
    addEventListener("online", () => this.setOnline(true));
    if (!navigator.onLine) this.setOnline(false);
  }

  setOnline(online) {
    if (this.banner) this.banner.hidden = online;
  }

  async send(method, url, body, { keepalive = false } = {}) {
    let response;
    try {
      response = await fetch(url, {
        method, keepalive, credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": this.csrf, Accept: "application/json" },
        body: JSON.stringify(body),
      });
    } catch (err) {
      this.setOnline(false);
      throw new NetworkError(err.message);
    }
    this.setOnline(true);
    let data = null;
    try { data = await response.json(); } catch { /* empty or non-JSON body */ }
    if (response.status >= 500) throw new NetworkError(`server error ${response.status}`);
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }
}

/** Reads the local copy; writes it on every change; pushes drafts to the server in the background. */
export class Autosave {
  constructor({ store, connection, url, storageKey, status, onFatal }) {
    this.store = store;
    this.connection = connection;
    this.url = url; // null: local only (tutorial)
    this.storageKey = storageKey;
    this.status = status;
    this.onFatal = onFatal;
    this.savedRevision = 0;
    this.timer = null;
    this.inFlight = null;
    this.backoff = 1000;
    this.stopped = false;
    addEventListener("online", () => this.flush());
    addEventListener("pagehide", () => this.flush({ keepalive: true }));
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "hidden") { this.writeLocal(); this.flush({ keepalive: true }); }
    });
  }

  static readLocal(storageKey) {
    try { return JSON.parse(localStorage.getItem(storageKey) || "null"); } catch { return null; }
  }

  writeLocal() {
    try { localStorage.setItem(this.storageKey, JSON.stringify(this.store.state)); } catch { /* full or disabled */ }
  }

  clearLocal() { try { localStorage.removeItem(this.storageKey); } catch { /* ignore */ } }

  /** Called on every change. */
  schedule() {
    if (this.stopped) return;
    this.writeLocal();
    if (!this.url) { this.show("Saved in this browser"); return; }
    this.show("Unsaved changes…");
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), DEBOUNCE_MS);
  }

  pending() { return this.url && this.store.state.revision > this.savedRevision; }

  async flush({ keepalive = false } = {}) {
    clearTimeout(this.timer);
    if (this.stopped || !this.pending()) return;
    if (this.inFlight) { this.again = true; return; }
    const state = JSON.parse(JSON.stringify(this.store.state));
    this.inFlight = this.connection.send("PUT", this.url, { state, revision: state.revision }, { keepalive });
    try {
      const answer = await this.inFlight;
      this.savedRevision = Math.max(this.savedRevision, answer ? answer.revision : state.revision, state.revision);
      this.backoff = 1000;
      this.show(this.pending() ? "Saving…" : "All changes saved");
    } catch (err) {
      if (err instanceof ApiError) {
        this.stopped = true;
        this.show("Not saved");
        this.onFatal(err);
      } else {
        this.show(`Offline — saved in this browser; retrying in ${Math.round(this.backoff / 1000)} s`);
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.flush(), this.backoff);
        this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
      }
    } finally {
      this.inFlight = null;
    }
    if (this.again) { this.again = false; this.flush(); }
  }

  stop() { this.stopped = true; clearTimeout(this.timer); }

  show(text) { if (this.status) this.status.textContent = text; }
}

/** POST the submission; network failures retry with backoff using the same key. */
export async function submitWithRetry(connection, url, body, { onRetry, attempts = 6 } = {}) {
  let wait = 1000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await connection.send("POST", url, body);
    } catch (err) {
      if (!(err instanceof NetworkError) || attempt >= attempts) throw err;
      if (onRetry) onRetry(wait);
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, MAX_BACKOFF_MS);
    }
  }
}

export function newSubmitKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("");
}
