"""axe-core in every page the browser tests open: zero violations of serious or critical impact.

axe-core (MPL-2.0, Deque Systems; licence header kept in the file, full text in vendor/axe-core.LICENSE)
is vendored under ``vendor/`` and injected from disk, so nothing is fetched at test time. ``install`` adds
it to a browser context: every document then runs axe once after its ``load`` event, as soon as the
page's own requests (``fetch``) have finished and two frames passed without one (the dashboards fetch
their data, then draw), and reports what it found back to Python. ``check`` runs it again on
the page as it is now (a dialog open, step 3 shown), so a test can check states that no load reaches.
The ``page`` fixture of conftest.py installs it and fails the test when any run reported a violation,
so every page of every browser test is covered, including pages other engineers add.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
IMPACTS = ("serious", "critical")
SETTLE_LIMIT_MS = 5000  # the most the load-time run waits for the page's requests to finish

# Runs in every document. Runs are queued, so an explicit check never overlaps the automatic one
# (axe refuses to run twice at once).
RUNNER = """
(() => {
  // The application's pages only: not about:blank, where the page fixture leaves each test.
  if (window.top !== window || window.__rrAxe || !location.protocol.startsWith("http")) return;
  let queue = Promise.resolve();
  // The page's requests in flight: a request counts until its whole body has arrived (the page draws then).
  let pending = 0;
  const pageFetch = window.fetch.bind(window);
  window.fetch = (...args) => {
    pending += 1;
    let counted = true;
    const finish = () => { if (counted) { counted = false; pending -= 1; } };
    return pageFetch(...args).then((response) => {
      response.clone().arrayBuffer().then(finish, finish);
      return response;
    }, (error) => { finish(); throw error; });
  };
  const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const settled = async () => {
    const deadline = performance.now() + %(limit)d;
    for (let quiet = 0; quiet < 2 && performance.now() < deadline;) {
      await nextFrame();
      quiet = pending ? 0 : quiet + 1;
    }
  };
  const once = async (label) => {
    if (!window.axe) return [{id: "axe-missing", impact: "critical", help: "axe-core was not injected", targets: []}];
    const result = await window.axe.run(document, {resultTypes: ["violations"]});
    return result.violations.filter((v) => %(impacts)s.includes(v.impact)).map((v) => ({
      id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
      targets: v.nodes.slice(0, 6).map((n) => n.target.join(" ")),
    }));
  };
  window.__rrAxe = (label) => {
    const run = queue.then(() => once(label)).then((found) => {
      if (window.__rrAxeReport) window.__rrAxeReport(label, location.pathname + location.search, found);
      return found;
    });
    queue = run.catch(() => null);
    return run;
  };
  addEventListener("load", () => settled().then(() => window.__rrAxe("on load")));
})();
"""


@dataclass
class AxeLog:
    """What the runs in one browser context found: the pages checked and the violations, if any."""

    checked: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    runs: list[tuple[str, str, list[dict[str, Any]]]] = field(default_factory=list)  # (label, where, found)

    def record(self, label: str, where: str, found: list[dict[str, Any]]) -> None:
        self.checked.append(f"{where} ({label})")
        self.runs.append((label, where, found))
        for v in found:
            self.violations.append(f"{where} ({label}): {v['impact']} {v['id']}: {v['help']} at {v['targets']}")


def install(context: Any) -> AxeLog:
    """Inject axe-core and the runner into every document of a Playwright browser context."""
    log = AxeLog()
    context.expose_function("__rrAxeReport", log.record)
    context.add_init_script(path=str(AXE))
    context.add_init_script(script=RUNNER % {"impacts": list(IMPACTS), "limit": SETTLE_LIMIT_MS})
    return log


def check(page: Any, label: str = "explicit") -> list[dict[str, Any]]:
    """Run axe on the page as it is now; the serious and critical violations (also logged)."""
    found: list[dict[str, Any]] = page.evaluate("(label) => window.__rrAxe(label)", label)
    return found


def assert_accessible(page: Any, label: str = "explicit") -> None:
    """Fail with axe's findings unless the page as it is now has no serious or critical violation."""
    found = check(page, label)
    assert not found, f"axe at {page.url} ({label}): {found}"
