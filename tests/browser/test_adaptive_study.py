"""A simulated live study of adaptive allocation (issue 45) in Chromium, on released ratings.

A subset of SimpEval_2022 (every second of its 60 sources, all 6 systems) becomes two campaigns of 3 ratings
per output. The worker's service stores FKGL, SARI and BLEU (so the adaptive priorities exist); the researcher
sets one campaign to adaptive through the dashboard's form and staffs it with three annotators. Each annotator
is a script standing for one released rating slot: through the real HTTP API (token, ``next``, the blinded
assignment, submit) it gives every output shown the rating its slot gave that output's text. The study stops
at 45% of the full ratings; the dashboard's "How settled is the ranking" panel then shows the stop rule and the
saving against uniform, the same figures as the API. The same raters on a uniform campaign with the same
budget cover fewer distinct sources (uniform rates each source three times before the next).

The released data is read from SIMPEVAL_DATA_DIR (the test skips without it); nothing is copied into the
repository.
"""

from __future__ import annotations

import json
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from annotation.formats import read_simpeval
from annotation.models import Assignment, Campaign, Slot
from annotation.services.assignments import campaign_add_annotators
from annotation.services.imports import campaign_import
from metrics.services.metric_registry import metrics_get
from metrics.services.metric_scores import campaign_metric_scores_compute
from tests.browser.actions import login
from tests.factories import PASSWORD, STEPS_REVIEWED

pytestmark = pytest.mark.browser


def text_key(text: str) -> str:
    return " ".join(text.split())


SLOTS = 3
SHARE = 0.45  # of the full ratings: the study stops mid-way
STEP = 2  # every second source of the 60 (sorted by id): 30 sources, 540 ratings in all


class Released:
    """The subset of SimpEval_2022: per source text, per output text, the systems' released ratings by slot."""

    def __init__(self, root: Path) -> None:
        folder = root / "simpeval"
        parsed = read_simpeval((folder / "simpeval_2022.csv").read_text(encoding="utf-8").splitlines(keepends=True),
                               name="simpeval_2022.csv")
        refs = dict(zip((folder / "simpeval_2022_references.src").read_text(encoding="utf-8").splitlines(),
                        (folder / "simpeval_2022_references.dst").read_text(encoding="utf-8").splitlines(),
                        strict=True))
        by_source: dict[str, list[Any]] = defaultdict(list)
        for row in parsed.rows:
            by_source[row.original_id].append(row)
        self.ids = sorted(by_source, key=int)[::STEP]
        self.rows = {sid: by_source[sid] for sid in self.ids}
        self.references = {sid: [r for r in [refs.get(rows[0].original.strip(), "")] if r]
                           for sid, rows in self.rows.items()}
        # source text key -> output text key -> [(ratings by slot, category)] (identical texts share a unit)
        self.answers: dict[str, dict[str, list[tuple[tuple[float | None, ...], str]]]] = defaultdict(
            lambda: defaultdict(list))
        for rows in self.rows.values():
            for row in rows:
                shown = (row.processed_generation or row.generation).strip()
                answer = (row.ratings, row.category or "paraphrase")
                self.answers[text_key(row.original)][text_key(shown)].append(answer)
        self.full = sum(len(rows) * SLOTS for rows in self.rows.values())

    def jsonl(self, path: Path) -> Path:
        lines = [json.dumps({"id": sid, "source": rows[0].original, "references": self.references[sid],
                             "outputs": [{"system": row.system, "text": (row.processed_generation or row.generation)}
                                         for row in rows]})
                 for sid, rows in self.rows.items()]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def answer(self, detail: dict[str, Any], slot: int) -> tuple[list[dict[str, Any]], int]:
        """The submit's units for an assignment as the API shows it (blinded, shuffled) by released slot
        ``slot``, and how many ratings (outputs) it reveals."""
        outputs = self.answers[text_key(detail["source"]["text"])]
        rated: list[tuple[str, float, str]] = []
        revealed = 0
        for unit in detail["units"]:
            systems = outputs[text_key(unit["text"])]
            assert systems, f"output text not in the released data: {unit['text'][:60]!r}"
            values = [value for ratings, _ in systems if (value := ratings[slot]) is not None]
            revealed += len(systems)
            rated.append((unit["id"], sum(values) / len(values), systems[0][1]))
        rank = {uid: i + 1 for i, (uid, _, _) in enumerate(sorted(rated, key=lambda r: -r[1]))}  # best first
        units = [{"unit": uid, "category": category, "rating": rating, "rank": rank[uid]}
                 for uid, rating, category in rated]
        return units, revealed


class ApiRater:
    """A scripted annotator using the REST API over HTTP with a token, as a script of a researcher would."""

    def __init__(self, base: str, username: str, slot: int) -> None:
        self.base, self.slot = base, slot
        self.token = self._call("POST", "/api/auth/token/", {"username": username, "password": PASSWORD},
                                auth=False)["token"]

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None, *, auth: bool = True) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        if auth:
            request.add_header("Authorization", f"Token {self.token}")
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status in (200, 201), (path, response.status)
            return json.loads(response.read() or b"null")

    def rate_next(self, slug: str, released: Released) -> tuple[str, int] | None:
        """Take the next source, rate it as the released slot did, submit; (source id, ratings) or None."""
        pk = self._call("POST", f"/api/campaigns/{slug}/next/")["assignment"]
        if pk is None:
            return None
        detail = self._call("GET", f"/api/assignments/{pk}/")
        assert "system" not in json.dumps(detail["units"])  # blinded: no system names
        units, revealed = released.answer(detail, self.slot)
        done = self._call("POST", f"/api/assignments/{pk}/submit/",
                          {"submit_key": f"study-{pk}", "steps_reviewed": STEPS_REVIEWED, "units": units})
        assert done["status"] == "submitted"
        return detail["source"]["id"], revealed


def _study(slug: str, raters: list[ApiRater], released: Released, budget: int) -> list[str]:
    """The raters take turns (next, rate, submit) until ``budget`` ratings are in; the sources rated, in order."""
    handed: list[str] = []
    spent = 0
    while spent < budget:
        progressed = False
        for rater in raters:
            if spent >= budget:
                break
            got = rater.rate_next(slug, released)
            if got is not None:
                handed.append(got[0])
                spent += got[1]
                progressed = True
        assert progressed, f"{slug}: the pool ran dry at {spent} ratings"
    return handed


def _policy_order(slots: list[tuple[Any, ...]], screens: int) -> list[str]:
    """The sources the adaptive policy hands out to raters taking turns, from the free slots' keys before any
    claim (taking a source's first free slot leaves every other key as it is)."""
    free = sorted(slots, key=lambda s: (-s[0], s[1], s[2], s[3]))
    had: list[set[str]] = [set() for _ in range(SLOTS)]
    order: list[str] = []
    while len(order) < screens:
        mine = had[len(order) % SLOTS]
        slot = next(s for s in free if s[4] not in mine)
        free.remove(slot)
        mine.add(slot[4])
        order.append(slot[4])
    return order


def _import(slug: str, released: Released, path: Path, researcher: Any) -> Campaign:
    with path.open("rb") as handle:
        campaign_import(kind="jsonl", file=handle, filename=f"{slug}.jsonl", campaign_slug=slug, user=researcher,
                        campaign_name=f"SimpEval_2022 live ({slug})", analyse=False)
    campaign = Campaign.objects.get(slug=slug)
    Campaign.objects.filter(pk=campaign.pk).update(ratings_per_output=SLOTS)
    campaign.ratings_per_output = SLOTS
    campaign.owners.add(researcher)
    # the worker's "Score with metrics" service, with the metrics the adaptive policy reads (fast ones)
    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get("fkgl,sari,bleu"))
    return campaign


def _panel(page: Any) -> dict[str, str]:
    names = ("pairs", "needed-tau", "needed-top1", "saved")
    return {name: (page.text_content(f"#settled-{name}") or "").strip() for name in names}


def _api_figures(page: Any, slug: str) -> dict[str, Any]:
    response = page.request.get(f"/api/campaigns/{slug}/settledness/")
    assert response.status == 200
    return dict(response.json())


def _shown(value: Any) -> str:
    return "–" if value is None else str(value)


def test_adaptive_live_study_on_simpeval_2022(page, live_server, transactional_db, researcher, annotators,
                                              make_user, screenshots, simpeval_data_dir, tmp_path) -> None:
    shots = screenshots / "adaptive-study"
    shots.mkdir(exist_ok=True)
    released = Released(simpeval_data_dir)
    assert len(released.ids) == 30 and released.full == 540
    study_file = released.jsonl(tmp_path / "simpeval2022-subset.jsonl")
    adaptive = _import("live-adaptive", released, study_file, researcher)
    uniform = _import("live-uniform", released, study_file, researcher)
    raters = [make_user(f"slot{k + 1}") for k in range(SLOTS)]

    # 1. The researcher sets the campaign to adaptive through the dashboard's form, then adds the raters.
    login(page, researcher.username, to="/research/campaigns/live-adaptive/", ready="#dashboard[data-ready]")
    page.select_option("#allocation-form select[name=allocation]", "adaptive")
    page.click("#allocation-form button[type=submit]")
    page.wait_for_selector("#dashboard[data-ready]")
    assert page.input_value("#allocation-form select[name=allocation]") == "adaptive"
    adaptive.refresh_from_db()
    assert adaptive.allocation == Campaign.Allocation.ADAPTIVE
    page.locator("#allocation-form").screenshot(path=shots / "01-allocation-adaptive.png")
    page.fill("#add-usernames", ", ".join(user.username for user in raters))
    page.click("#people form.inline-form button:has-text('Add')")
    page.wait_for_selector(f"#people-table tr[data-pseudonym='{raters[-1].pseudonym}']")
    campaign_add_annotators(campaign=uniform, annotators=raters)

    # Nothing is dealt in advance (the pool keeps every slot for `next`); the priorities exist (metric variance
    # per source, from the stored SARI/BLEU/FKGL) and differ.
    assert not Assignment.objects.filter(campaign=adaptive).exists()
    assert Assignment.objects.filter(campaign=uniform).count() == len(released.ids) * SLOTS  # uniform: dealt
    slots = list(Slot.objects.filter(campaign=adaptive).values_list(
        "allocation_key", "position", "source_id", "index", "source__external_id", "priority"))
    priority = {row[4]: row[5] for row in slots}
    assert len(priority) == len(released.ids) and len(set(priority.values())) > len(priority) // 2
    by_priority = sorted(priority, key=lambda s: -priority[s])

    # 2. Three scripted raters, one per released slot, through the HTTP API, to 45% of the full ratings.
    budget = round(SHARE * released.full)
    api = [ApiRater(live_server.url, user.username, slot=k) for k, user in enumerate(raters)]
    handed_adaptive = _study("live-adaptive", api, released, budget)
    handed_uniform = _study("live-uniform", api, released, budget)

    # The hand-out follows the priorities: each `next` takes the free slot of highest key (priority / (1 +
    # the source's screens so far)) among the sources the rater has not had, the raters taking turns.
    assert handed_adaptive == _policy_order(slots, len(handed_adaptive)), (handed_adaptive, by_priority)
    assert handed_adaptive[:SLOTS] == by_priority[:SLOTS]  # the first round: the three widest spreads
    covered = set(handed_adaptive)
    # Uniform: source order, each source to all three raters before the next.
    assert handed_uniform[:2 * SLOTS] == [released.ids[0]] * SLOTS + [released.ids[1]] * SLOTS
    # 5. Same budget, more of the data seen: adaptive spreads its screens over more distinct sources.
    assert len(set(handed_adaptive)) > len(set(handed_uniform)), (len(set(handed_adaptive)), len(set(handed_uniform)))
    rated = {slug: Assignment.objects.filter(campaign__slug=slug, status="submitted").count()
             for slug in ("live-adaptive", "live-uniform")}
    assert rated["live-adaptive"] == len(handed_adaptive) and rated["live-uniform"] == len(handed_uniform)

    # 3. The stop rule on the dashboard, the same figures as the API. The API first: a page load within
    # SETTLED_LIVE_SECONDS of the last one may reuse that one's figures (the live panel's bound on the work);
    # the API's are computed for the ratings now and cached under their fingerprint, which the page then reads.
    figures = _api_figures(page, "live-adaptive")
    page.goto("/research/campaigns/live-adaptive/?after=study")
    page.wait_for_selector("#dashboard[data-ready]")
    assert figures["ratings"] == sum(6 for _ in handed_adaptive) >= budget  # SimpEval_2022: 6 systems a source
    assert figures["adjacent_pairs"] == 5 and not figures["uniform"]
    shown = _panel(page)
    assert shown["pairs"] == str(figures["settled_pairs"])
    for key, name in (("ratings_needed_tau", "needed-tau"), ("ratings_needed_top1", "needed-top1")):
        assert shown[name] == str(figures[key]) if figures[key] is not None else shown[name].startswith("over ")
    assert shown["saved"] == _shown(figures["ratings_saved"])
    assert page.locator("#settled-table tbody tr").count() == figures["adjacent_pairs"]
    panel_text = page.text_content("#settled-panel") or ""
    if figures["uniform_ratings"] is not None:
        assert f"uniform would need {figures['uniform_ratings']} for the same settledness" in panel_text
        assert figures["ratings_saved"] == figures["uniform_ratings"] - figures["ratings"]
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.locator("#settled-panel").screenshot(path=shots / "02-settled-adaptive.png")
    page.screenshot(path=shots / "03-dashboard-adaptive.png", full_page=True)

    # The uniform campaign's panel: 0 saved by definition.
    figures_uniform = _api_figures(page, "live-uniform")
    page.goto("/research/campaigns/live-uniform/")
    page.wait_for_selector("#dashboard[data-ready]")
    assert figures_uniform["uniform"] and figures_uniform["ratings_saved"] == 0
    assert _panel(page)["saved"] == "0"
    page.locator("#settled-panel").screenshot(path=shots / "04-settled-uniform.png")
    print(f"\nadaptive: {len(handed_adaptive)} screens, {len(covered)} sources, {figures['ratings']} ratings; "
          f"settled {figures['settled_pairs']}/{figures['adjacent_pairs']}, still needed "
          f"{figures['ratings_needed_tau']} (tau) / {figures['ratings_needed_top1']} (top 1), "
          f"saved {figures['ratings_saved']} (uniform would need "
          f"{figures['uniform_ratings']}); P(order kept) {[p.get('p_kept') for p in figures['pairs']]}\n"
          f"uniform: {len(handed_uniform)} screens, {len(set(handed_uniform))} sources, "
          f"{figures_uniform['ratings']} ratings; settled {figures_uniform['settled_pairs']}, "
          f"still needed {figures_uniform['ratings_needed_tau']} (tau) / "
          f"{figures_uniform['ratings_needed_top1']} (top 1)")
