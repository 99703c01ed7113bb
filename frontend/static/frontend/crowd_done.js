// The completion page: a copy button for the code (the field stays selectable where the clipboard is
// refused), and, when the study gives the platform's completion URL, a visible countdown before going back
// there, which the worker can stop or skip.
(() => {
  "use strict";
  const field = document.getElementById("completion-code");
  const copy = document.getElementById("copy-code");
  const status = document.getElementById("copy-status");
  if (field && copy && status) {
    copy.hidden = false;
    status.textContent = "";
    field.addEventListener("focus", () => field.select());
    copy.addEventListener("click", async () => {
      field.focus();
      field.select();
      try {
        await navigator.clipboard.writeText(field.value);
        status.textContent = "Code copied.";
      } catch {
        // No clipboard permission (or no secure context): the code is selected, ready for Ctrl+C / ⌘C.
        let copied = false;
        try {
          copied = document.execCommand("copy");
        } catch {
          copied = false;
        }
        status.textContent = copied ? "Code copied." : "The code is selected: press Ctrl+C (⌘C on a Mac) to copy it.";
      }
    });
  }

  const box = document.getElementById("completion-redirect");
  if (!box) return;
  const url = box.dataset.url;
  let left = Number.parseInt(box.dataset.seconds || "10", 10);
  const note = document.getElementById("redirect-note");
  const stay = document.getElementById("completion-stay");
  if (!url || !note || !stay || !(left > 0)) return;
  const say = () => {
    note.textContent = `you go back to the platform in ${left} second${left === 1 ? "" : "s"}.`;
  };
  say();
  stay.hidden = false;
  const timer = window.setInterval(() => {
    left -= 1;
    if (left <= 0) {
      window.clearInterval(timer);
      note.textContent = "going back to the platform…";
      window.location.assign(url);
      return;
    }
    say();
  }, 1000);
  stay.addEventListener("click", () => {
    window.clearInterval(timer);
    note.textContent = "you stay here; follow the link below when you are ready.";
    stay.hidden = true;
  });
})();
