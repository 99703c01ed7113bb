"""A simulated study in Chromium: a researcher creates a campaign, adds two annotators from the dashboard and
one through an invite link, a Prolific worker arrives through the crowd link and gets a completion code;
one scripted annotator rates carefully and one at random; the dashboard flags the random one with its MWU
p-value and reason; excluding it changes the leaderboard and alpha, and the export says so."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from annotation.models import Assignment, User
from tests.browser.actions import login
from tests.factories import submit_like_a_rater

pytestmark = pytest.mark.browser
QUALITY = {"Keep": 80.0, "Trim": 62.0, "Split": 45.0, "Garble": 20.0}
WORDS = ["river", "city", "old", "house", "friend", "park", "ferry", "harbour", "storm", "morning", "boat",
         "island", "market", "road", "bridge", "winter", "summer", "village", "teacher", "doctor"]


def _study_file(path: Path, n: int = 14) -> Path:
    rng = random.Random(5)
    lines = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(14)]
        source = "The " + " ".join(words) + f" number {i}."
        lines.append(json.dumps({
            "id": f"s{i}", "source": source, "references": ["The " + " ".join(words[:8]) + "."],
            "outputs": [{"system": name, "text": f"{name} says: " + " ".join(words[: 12 - k * 2]) + f" ({i})."}
                        for k, name in enumerate(QUALITY)],
        }))
    path.write_text("\n".join(lines) + "\n")
    return path


def _rate_all(user: User, *, careless: bool, rng: random.Random) -> None:
    # The careless rater rates at random and never notices an attention item (it rates them in the upper
    # half), so it fails the attention check whichever items the campaign drew: the draw is seeded with the
    # campaign's primary key, which on SQLite depends on the tests that ran before, and a purely random
    # rater passes the check about one time in twenty.
    for assignment in Assignment.objects.filter(annotator=user).exclude(status="released").select_related("source"):
        submit_like_a_rater(
            assignment, careless=careless, rng=rng, quality=QUALITY, spread=6, careless_attention=(50, 100),
            step_seconds={"1": 2.0, "2": 2.0, "3": 3.0} if careless else {"1": 40.0, "2": 50.0, "3": 45.0})


def _report(page: Any, slug: str) -> dict[str, Any]:
    response = page.request.get(f"/api/campaigns/{slug}/report/")
    assert response.status == 200
    return dict(response.json())


def test_simulated_study(browser, page, live_server, transactional_db, researcher, annotators, screenshots,
                         tmp_path) -> None:
    shots = screenshots / "study"
    shots.mkdir(exist_ok=True)
    # 1. The researcher creates the campaign from a file.
    login(page, researcher.username, to="/research/import/", ready=None)
    page.fill("#id_name", "Simulated study")
    page.fill("#id_slug", "sim")
    page.fill("#id_ratings_per_output", "4")
    page.set_input_files("#id_file", str(_study_file(tmp_path / "study.jsonl")))
    page.screenshot(path=shots / "01-import.png", full_page=True)
    # The import analyses the outputs (eagerly in tests): slow on a loaded machine.
    page.click("form.import-form button[type=submit]", timeout=180_000)
    page.wait_for_selector("#people-title", timeout=180_000)
    # 2. Quality items, then two annotators from the dashboard.
    page.fill("#attention-rate", "1")
    page.fill("#repeat-share", "0.25")
    page.click("#quality button[type=submit]", timeout=180_000)
    page.wait_for_selector("text=Attention items added to 14 source(s)", timeout=180_000)
    page.fill("#add-usernames", f"{annotators[0].username}, {annotators[1].username}")
    page.click("#people form.inline-form button:has-text('Add')")
    page.wait_for_selector(f"#people-table tr[data-pseudonym='{annotators[0].pseudonym}']")
    # 3. An invite link and a crowd link.
    page.click("text=Create invite link")
    invite_url = page.locator("#invite-list code").first.text_content()
    assert invite_url and "/invite/" in invite_url
    page.click("text=Open a crowd link")
    crowd_url = page.locator("#crowd-link").text_content()
    assert crowd_url
    page.screenshot(path=shots / "02-dashboard-people.png", full_page=True)

    guest = browser.new_context(viewport={"width": 1280, "height": 800})
    invited = guest.new_page()
    invited.goto(invite_url)
    invited.screenshot(path=shots / "03-invite.png", full_page=True)
    invited.fill("#id_username", "invitee")
    invited.fill("#id_password", "Invited-pw-2026")
    invited.click("button[type=submit]")
    invited.wait_for_selector("h1")
    assert "/campaigns/sim/instructions/" in invited.url
    guest.close()

    crowd = browser.new_context(viewport={"width": 1280, "height": 800})
    worker_page = crowd.new_page()
    base = crowd_url.split("?")[0]
    worker_page.goto(base + "?PROLIFIC_PID=60a1b2c3d4&STUDY_ID=study9&SESSION_ID=sess1")
    assert "/campaigns/sim/instructions/" in worker_page.url
    worker = User.objects.get(crowd_worker__worker_id="60a1b2c3d4")

    # 4. Scripted annotators: ann1, the invitee and the worker rate carefully; ann2 at random.
    rng = random.Random(11)
    for user in (annotators[0], User.objects.get(username="invitee"), worker):
        _rate_all(user, careless=False, rng=rng)
    _rate_all(annotators[1], careless=True, rng=rng)
    worker_page.goto(f"{live_server.url}/campaigns/sim/done/")
    code = worker_page.locator("#completion-code").input_value()
    assert code
    worker_page.screenshot(path=shots / "04-completion-code.png", full_page=True)
    crowd.close()

    # 5. The dashboard flags the random rater with its MWU p-value and reason.
    page.goto("/research/campaigns/sim/?after=ratings")  # a new load, not a jump within the page
    page.wait_for_selector("#dashboard[data-ready]")
    careless_row = page.locator(f"#quality-table tr[data-pseudonym='{annotators[1].pseudonym}']")
    assert careless_row.get_attribute("data-flagged") == "true", page.locator("#quality-table").text_content()
    assert "MWU p =" in (careless_row.text_content() or "")
    for user in (annotators[0], worker):
        assert page.locator(f"#quality-table tr[data-pseudonym='{user.pseudonym}']").get_attribute(
            "data-flagged") == "false"
    page.locator("#quality").screenshot(path=shots / "05-quality-flagged.png")
    before = _report(page, "sim")
    assert before["excluded_annotators"] == []

    # 6. Exclude it with one click: the leaderboard and alpha change, and the export says so.
    careless_row.locator("button:has-text('Exclude')").click()
    page.click("#confirm-form button[type=submit]")  # the confirmation step says what excluding does
    page.wait_for_selector("#excluded-note")
    page.locator("#quality").screenshot(path=shots / "06-quality-excluded.png")
    after = _report(page, "sim")
    assert [e["annotator"] for e in after["excluded_annotators"]] == [annotators[1].pseudonym]
    assert after["alpha"]["raw"]["value"] > before["alpha"]["raw"]["value"]
    z_before = {r["system"]: r["z_mean"] for r in before["systems"]}
    z_after = {r["system"]: r["z_mean"] for r in after["systems"]}
    assert z_before != z_after and set(z_after) == set(QUALITY)
    assert [r["system"] for r in after["systems"]] == list(QUALITY)
    export = page.request.get("/api/campaigns/sim/export/?type=csv")
    assert export.headers["x-excluded-annotators"] == annotators[1].pseudonym
    page.wait_for_selector("#leaderboard-table tbody tr")
    page.screenshot(path=shots / "07-dashboard-after-exclusion.png", full_page=True)
    print(f"alpha raw {before['alpha']['raw']['value']:.3f} -> {after['alpha']['raw']['value']:.3f}; "
          f"completion code {code}")

    # 7. The per-item view of one of the careless rater's sources.
    item = Assignment.objects.filter(annotator=annotators[1], source__campaign__slug="sim").first()
    assert item is not None
    page.goto(f"/research/campaigns/sim/items/{item.pk}/")
    page.wait_for_selector("text=Version 1")
    page.screenshot(path=shots / "08-item.png", full_page=True)
