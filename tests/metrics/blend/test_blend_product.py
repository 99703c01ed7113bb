"""The blend in the product: versions trained, promoted and rolled back through the family code, the
``train_metric --kind blend`` / ``meta_evaluate --metric blend:latest`` commands, and the 409 when a learned
version it read has changed since it was trained."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from core.errors import Conflict
from metrics.blend.learners import candidates
from metrics.learned.config import Json
from metrics.learned.kinds import register_kind, unregister_kind
from metrics.models import LearnedVersion, TrainingEvent
from metrics.services.metric_registry import LearnedMetric, metric_get
from metrics.services.training import (
    learned_version_create,
    learned_version_promote,
    learned_version_promotion,
    learned_version_train,
)
from metrics.suite import Item
from tests.factories import rated_campaign

pytestmark = pytest.mark.usefixtures("lens_on_cpu")
FAST: dict[str, Json] = {"suite": "sari,fkgl", "folds": 3}
"""Suite metrics without an encoder, so the tests stay fast."""
ITEM = Item("the cat sat on the mat in the sun today", "the cat sat on the mat", ("a cat sat on a mat",))


def train_blend(campaign: Any, **options: Json) -> LearnedVersion:
    version = learned_version_train(version=learned_version_create(
        kind="blend", options={**FAST, **options}, campaigns=[campaign], started_by=None, enqueue=False))
    assert version.status == LearnedVersion.Status.SUCCEEDED, version.error
    return version


def test_blend_versions_train_promote_and_roll_back_through_the_family(annotators: list[Any]) -> None:
    campaign = rated_campaign("rated", annotators, n_sources=8)
    first = train_blend(campaign, seed=1)
    assert first.label == "Blend" and first.data_counts["learned_versions"] == 0
    assert first.heldout_results["components"] == ["suite:sari", "suite:fkgl", "text:length", "text:compression",
                                                   "text:sentences", "text:overlap"]
    assert first.heldout_results["learner"] and first.heldout_results["cv_tau"] is not None
    second = train_blend(campaign, seed=2)

    learned_version_promote(version=second, force=True)
    assert metric_get("blend").name == f"blend:{second.pk}"
    promotion = learned_version_promotion(first)
    assert promotion.rollback and promotion.active is not None and promotion.active.pk == second.pk
    learned_version_promote(version=first, force=True)  # the rollback
    assert metric_get("blend").name == f"blend:{first.pk}"
    assert list(LearnedVersion.objects.filter(kind="blend", is_active=True).values_list("pk", flat=True)) == [first.pk]
    metric = metric_get(f"blend:{first.pk}")
    assert metric.signature.startswith(f"blend:v{first.pk}|learner:")
    assert len(metric.score_batch([ITEM, ITEM])) == 2


def test_train_metric_and_meta_evaluate_run_the_blend_end_to_end(annotators: list[Any]) -> None:
    rated_campaign("rated", annotators, n_sources=8)
    out = StringIO()
    call_command("train_metric", "--kind", "blend", "--campaign", "rated", "--seed", "3",
                 "--option", 'suite="sari,fkgl"', "--option", "folds=3", "-v", "0", stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    assert report["kind"] == "blend" and report["status"] == "succeeded"
    version = LearnedVersion.objects.get(pk=report["version"])
    assert version.seed == 3 and version.hyperparameters["suite"] == "sari,fkgl"

    out = StringIO()
    call_command("meta_evaluate", "--campaign", "rated", "--metric", "blend:latest", "--json", "--n-boot", "50",
                 stdout=out)
    result = json.loads(out.getvalue())
    assert f"blend:{version.pk}" in json.dumps(result)


def test_train_metric_chooses_the_blend_by_held_out_sources_and_systems(annotators: list[Any]) -> None:
    rated_campaign("rated", annotators, n_sources=8)
    out = StringIO()
    call_command("train_metric", "--kind", "blend", "--campaign", "rated", "--option", 'suite="sari,fkgl"',
                 "--option", "folds=3", "--option", 'cv="sources-systems"', "--option", "system_folds=2", "-v", "0",
                 stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    version = LearnedVersion.objects.get(pk=report["version"])
    assert report["status"] == "succeeded", version.error
    assert version.hyperparameters["cv"] == "sources-systems" and version.heldout_results["cv"] == "sources-systems"
    with pytest.raises(CommandError, match="cv"):
        call_command("train_metric", "--kind", "blend", "--campaign", "rated", "--option", 'cv="systems"', "-v", "0",
                     stdout=StringIO())


@pytest.fixture
def toy() -> Iterator[None]:
    from tests.metrics.learned import toy_kind

    register_kind(toy_kind.TOY)
    yield
    unregister_kind("toy")


def promoted_toy(campaign: Any) -> LearnedVersion:
    """A toy learned version trained on ``campaign`` and made active (what a blend then reads)."""
    version = learned_version_train(version=learned_version_create(
        kind="toy", options={"epochs": 1}, campaigns=[campaign], started_by=None, enqueue=False))
    learned_version_promote(version=version)
    return version


def test_a_blend_reads_the_active_learned_versions_and_refuses_once_one_changed(
    toy: None, annotators: list[Any], client_for: Any, researcher: Any,
) -> None:
    campaign = rated_campaign("rated", annotators, n_sources=8)
    toy_version = promoted_toy(campaign)
    blend = train_blend(campaign, seed=1)
    assert blend.data_counts["learned_versions"] == 1
    assert f"learned:toy:{toy_version.pk}" in blend.heldout_results["components"]
    assert len(metric_get(f"blend:{blend.pk}").score_batch([ITEM])) == 1

    # the toy version's weights change on disk (retrained in place, restored from another backup...)
    weights = Path(toy_version.checkpoint_path) / "model.safetensors"
    import torch
    from safetensors.torch import save_model

    model = torch.nn.Linear(2, 1)
    torch.nn.init.constant_(model.weight, 3.0)
    save_model(model, str(weights))
    with pytest.raises(Conflict, match=f"learned:toy:{toy_version.pk} was 'toy:v{toy_version.pk}"):
        metric_get(f"blend:{blend.pk}").score_batch([ITEM])
    response = client_for(researcher).post("/api/metrics/score", {"metric": f"blend:{blend.pk}", "items": [
        {"complex": ITEM.complex, "output": ITEM.output, "references": list(ITEM.references)}]}, format="json")
    assert response.status_code == 409, response.content
    assert "train a new blend version" in response.json()["detail"]


def test_a_learned_version_trained_on_the_blends_campaign_is_cross_fitted(
    toy: None, annotators: list[Any],
) -> None:
    campaign = rated_campaign("rated", annotators, n_sources=8)
    other = rated_campaign("other", annotators, n_sources=8, seed=1)
    toy_version = promoted_toy(campaign)
    name = f"learned:toy:{toy_version.pk}"

    same = train_blend(campaign, seed=1)
    record = same.heldout_results["crossfit"]["components"][name]
    assert same.heldout_results["crossfit"]["mode"] == "auto" and record["folds"] == 3
    assert record["trainings"] >= 3 and record["seconds"] >= 0 and record["shared_sources"] == 8
    # one training event per trained fold, stored like every other epoch of the run
    epochs = TrainingEvent.objects.filter(version=same, kind="epoch").count()
    assert epochs == record["trainings"] + len(candidates()) + 1
    assert not any("crossfit" in warning for warning in same.data_warnings)

    elsewhere = train_blend(other, seed=1)
    assert name in elsewhere.heldout_results["components"]
    assert elsewhere.heldout_results["crossfit"] == {"mode": "auto", "components": {}}

    off = train_blend(campaign, seed=1, crossfit="off")
    assert off.heldout_results["crossfit"] == {"mode": "off", "components": {}}
    assert any(f"{name} trained on 8 of the blend's sources and crossfit=off" in w for w in off.data_warnings)


def test_a_bad_crossfit_option_is_refused_naming_it(annotators: list[Any], admin_user: Any) -> None:
    # the form of the learned page, the service behind it and the command (the API's POST trains LENS only)
    from core.errors import ServiceError
    from metrics.admin import LearnedTrainForm

    campaign = rated_campaign("rated", annotators, n_sources=4)
    with pytest.raises(ServiceError, match="crossfit") as caught:
        learned_version_create(kind="blend", options={"crossfit": "sometimes"}, campaigns=[campaign],
                               started_by=admin_user, enqueue=False)
    assert caught.value.field == "crossfit"
    form = LearnedTrainForm({"kind": "blend", "campaigns": [campaign.pk], "options": '{"crossfit": "sometimes"}',
                             "encoder": "none", "k": 1, "epochs": 1, "heldout": 0.1, "seed": 0})
    assert not form.is_valid() and "crossfit" in str(form.errors.get("options")), form.errors
    with pytest.raises(CommandError, match="crossfit"):
        call_command("train_metric", "--kind", "blend", "--campaign", "rated", "--option", 'crossfit="sometimes"',
                     "-v", "0", stdout=StringIO())
    good = learned_version_create(kind="blend", options={"crossfit": "off"}, campaigns=[campaign],
                                  started_by=admin_user, enqueue=False)
    assert good.hyperparameters["crossfit"] == "off"


def test_a_blend_scores_empty_outputs_unless_it_reads_a_learned_version(toy: None, annotators: list[Any]) -> None:
    from metrics.services.metric_scores import _scoreable

    campaign = rated_campaign("rated", annotators, n_sources=8)
    empty = Item(ITEM.complex, "", ITEM.references)
    plain = metric_get(f"blend:{train_blend(campaign, seed=1).pk}")
    assert isinstance(plain, LearnedMetric)
    assert plain.scores_empty_outputs and _scoreable(plain, empty)
    assert len(plain.score_batch([empty], allow_empty=True)) == 1

    toy_version = promoted_toy(campaign)
    toy_metric = metric_get(f"toy:{toy_version.pk}")
    stacked = metric_get(f"blend:{train_blend(campaign, seed=2).pk}")
    assert isinstance(toy_metric, LearnedMetric) and isinstance(stacked, LearnedMetric)
    assert not toy_metric.scores_empty_outputs and not _scoreable(toy_metric, empty)
    assert not stacked.scores_empty_outputs and not _scoreable(stacked, empty)


def test_a_components_training_data_read_again_say_when_they_changed(toy: None, annotators: list[Any]) -> None:
    from metrics.services.learned import learned_training_again

    campaign = rated_campaign("rated", annotators, n_sources=8)
    toy_version = learned_version_train(version=learned_version_create(
        kind="toy", options={"epochs": 1}, campaigns=[campaign], started_by=None, enqueue=False))
    again = learned_training_again(toy_version, device=None)
    assert again.warnings == [] and len(again.inputs.train) + len(again.inputs.heldout) == 8 * 3
    toy_version.data_sha256 = "0" * 64  # e.g. ratings added to its campaign since it was trained
    assert "its training data changed since" in learned_training_again(toy_version, device=None).warnings[-1]


def test_whether_a_blend_scores_empty_outputs_is_read_once_per_metric(
    annotators: list[Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from metrics.blend.kind import BlendKind
    from metrics.services.metric_scores import _scoreable

    blend = metric_get(f"blend:{train_blend(rated_campaign('rated', annotators, n_sources=8), seed=1).pk}")
    asked = []
    answer = BlendKind.scores_empty_outputs

    def counting(self: BlendKind, version: Any) -> bool:
        asked.append(version.pk)
        return answer(self, version)

    monkeypatch.setattr(BlendKind, "scores_empty_outputs", counting)
    empty = Item(ITEM.complex, " ", ITEM.references)
    assert all(_scoreable(blend, empty) for _ in range(50)) and len(asked) == 1


def test_the_command_says_what_cross_fitting_will_train_before_it_starts(toy: None, annotators: list[Any]) -> None:
    campaign = rated_campaign("rated", annotators, n_sources=8)
    toy_version = promoted_toy(campaign)
    out = StringIO()
    call_command("train_metric", "--kind", "blend", "--campaign", "rated", "--option", 'suite="sari,fkgl"',
                 "--option", "folds=3", stdout=out)
    lines = out.getvalue().splitlines()
    preview = next(i for i, line in enumerate(lines) if f"learned:toy:{toy_version.pk} trained on 8" in line)
    assert "trained again up to 4 times" in lines[preview]
    assert preview < next(i for i, line in enumerate(lines) if " epoch 1 " in line)
    # each epoch line says what the epoch was: a cross-fitting training, a cross-validated setting, the fit
    epochs = [line for line in lines if line.startswith("[") and " epoch " in line]
    assert f"(cross-fitting learned:toy:{toy_version.pk}, fold 1/3)" in epochs[0]
    assert any("(cross-validation of " in line for line in epochs)
    assert "fitted on every training output)" in epochs[-1] and "*best*" in epochs[-1]


def test_the_learned_page_says_what_cross_fitting_will_train_when_it_queues_a_blend(
    toy: None, annotators: list[Any], admin_user: Any, client: Any,
) -> None:
    campaign = rated_campaign("rated", annotators, n_sources=8)
    toy_version = promoted_toy(campaign)
    client.force_login(admin_user)
    page = client.post("/learned/", {"kind": "blend", "campaigns": [campaign.pk], "encoder": "none", "k": 1,
                                     "epochs": 1, "heldout": 0.1, "seed": 0,
                                     "options": json.dumps({**FAST, "learned": True})}, follow=True)
    body = page.content.decode()
    assert "queued for training" in body, body[-3000:]
    assert f"learned:toy:{toy_version.pk} trained on 8 of these sources" in body


def test_the_api_trains_the_kind_it_is_asked_for(annotators: list[Any], client_for: Any, admin_user: Any,
                                                 django_capture_on_commit_callbacks: Any) -> None:
    """POST /api/learned/versions/ with ``kind`` trains that kind (it used to train LENS whatever the kind, so
    a blend's options were refused as unknown LENS options); a blend's bad option or a LENS-only top-level
    option is a 400 naming it."""
    rated_campaign("rated", annotators, n_sources=6)
    api = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/learned/versions/", {"kind": "blend", "campaigns": ["rated"], "options": FAST},
                            format="json")
    assert response.status_code == 201, response.content
    version = LearnedVersion.objects.get(pk=response.json()["id"])
    assert version.kind == "blend" and version.status == LearnedVersion.Status.SUCCEEDED, version.error
    assert version.hyperparameters["suite"] == "sari,fkgl"
    for body, field in (({"kind": "blend", "campaigns": ["rated"], "options": {"learner": "svr"}}, "learner"),
                        ({"kind": "blend", "campaigns": ["rated"], "k": 3}, "k"),
                        ({"kind": "blend"}, "campaigns")):
        refused = api.post("/api/learned/versions/", body, format="json")
        assert refused.status_code == 400 and refused.json()["field"] == field, (body, refused.content)
    unknown = api.post("/api/learned/versions/", {"kind": "nope", "campaigns": ["rated"]}, format="json")
    assert unknown.status_code == 400 and unknown.json()["field"] == "kind" and "blend" in unknown.json()["detail"]
    assert LearnedVersion.objects.count() == 1


def test_the_version_page_shows_what_the_blend_read_and_which_component_changed(
    toy: None, annotators: list[Any], admin_user: Any, client_for: Any,
) -> None:
    """The page of a blend version says what it read (each component with its signature when trained and now),
    the learner cross-validation chose and its figure, the cross-fitting record and the warnings; once a
    component changed it says the version no longer scores, and which component changed, and it cannot be
    promoted."""
    from django.test import Client

    campaign = rated_campaign("rated", annotators, n_sources=8)
    toy_version = promoted_toy(campaign)
    blend = train_blend(campaign, seed=1)
    off = train_blend(campaign, seed=1, crossfit="off")
    client = Client()
    client.force_login(admin_user)
    body = client.get(f"/learned/{blend.pk}/").content.decode()
    # a blend has no encoder and no top-k: the page does not show a "none" encoder and a k of 0
    assert "<th>Encoder</th>" not in body and "<th>held-out / seed</th>" in body
    table = body[body.index('id="components-table"'):body.index("</table>", body.index('id="components-table"'))]
    name = f"learned:toy:{toy_version.pk}"
    for component in ("suite:sari", "suite:fkgl", "text:length", name):
        assert f"<code>{component}</code>" in table, component
    assert f"toy:v{toy_version.pk}|" in table and "changed:</span>" not in table and table.count("unchanged") == 7
    learner = body[body.index('id="blend-learner"'):]
    assert blend.heldout_results["learner"] in learner[:300]
    assert f"{blend.heldout_results['cv_tau']:.3f}" in learner[:600]
    crossfit = body[body.index('id="blend-crossfit"'):]
    record = blend.heldout_results["crossfit"]["components"][name]
    assert f"{record['folds']} folds, {record['trainings']} trainings" in crossfit[:600]
    assert 'id="components-changed"' not in body
    warned = client.get(f"/learned/{off.pk}/").content.decode()
    assert "crossfit=off" in warned[warned.index('id="version-warnings"'):]

    change_weights(toy_version)
    body = client.get(f"/learned/{blend.pk}/").content.decode()
    assert 'id="components-changed"' in body and f"{name} changed since it was trained" in body
    table = body[body.index('id="components-table"'):]
    assert 'class="changed"' in table and "changed:</span>" in table
    # nor can it be promoted: an active blend that scores nothing would break every "blend" score
    assert f"/learned/{blend.pk}/promote/" not in body
    refused = client_for(admin_user).post(f"/api/learned/versions/{blend.pk}/promote/", {"force": True},
                                          format="json")
    assert refused.status_code == 409 and refused.json()["field"] == "version", refused.content
    assert f"{name} was" in refused.json()["detail"]
    blend.refresh_from_db()
    assert not blend.is_active
    # the API's version says the same
    components = client_for(admin_user).get(f"/api/learned/versions/{blend.pk}/").json()["components"]
    assert [c["name"] for c in components if c["changed"]] == [name]
    assert all(c["trained"] == c["now"] for c in components if not c["changed"])


def test_scoring_a_campaign_with_a_changed_blend_is_refused_up_front_and_all_leaves_it_out(
    toy: None, annotators: list[Any], admin_user: Any, client_for: Any, django_capture_on_commit_callbacks: Any,
) -> None:
    """A blend whose component changed was queued (202) and its job failed in the background, and "all" (the
    dashboard's button) failed with it, for every metric of its queue (``meta_evaluate --metric all`` too). Named,
    it is now a 409 in the API and an error of the command; "all" scores the other metrics and says which it
    left out, and why (the API's ``skipped``, a message on the dashboard, a warning of the command)."""
    from django.test import Client

    from core.models import BackgroundJob
    from metrics.models import MetricScore

    campaign = rated_campaign("rated", annotators, n_sources=8)
    toy_version = promoted_toy(campaign)
    blend = train_blend(campaign, seed=1)
    change_weights(toy_version)

    api = client_for(admin_user)
    refused = api.post("/api/campaigns/rated/metrics/score/", {"metric": f"blend:{blend.pk}"}, format="json")
    assert refused.status_code == 409 and refused.json()["field"] == "metric", refused.content
    assert f"blend:{blend.pk}" in refused.json()["detail"] and "train a new blend version" in refused.json()["detail"]
    assert not BackgroundJob.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        queued = api.post("/api/campaigns/rated/metrics/score/", {"metric": "all"}, format="json")
    assert queued.status_code == 202, queued.content
    assert list(queued.json()["skipped"]) == [f"blend:{blend.pk}"]
    assert set(BackgroundJob.objects.values_list("status", flat=True)) == {BackgroundJob.Status.DONE}
    assert MetricScore.objects.filter(metric="fkgl").exists()
    assert not MetricScore.objects.filter(metric=f"blend:{blend.pk}").exists()

    page = Client()
    page.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = page.post("/research/campaigns/rated/metrics-score/", follow=True)
    body = response.content.decode()
    assert response.status_code == 200 and f"Not scored: blend:{blend.pk}: the blend&#x27;s components changed" in body

    # the command line: named, refused; in "all", left out with a warning
    with pytest.raises(CommandError, match=f"blend:{blend.pk}: the blend's components changed"):
        call_command("meta_evaluate", "--metric", f"blend:{blend.pk}", "--campaign", "rated", "--n-boot", "0",
                     stdout=StringIO())
    err = StringIO()
    call_command("meta_evaluate", "--metric", "all", "--campaign", "rated", "--n-boot", "0", stdout=StringIO(),
                 stderr=err)
    assert f"not scored: blend:{blend.pk}: the blend's components changed" in err.getvalue()


def change_weights(version: LearnedVersion) -> None:
    """The version's weights change on disk (retrained in place, restored from another backup...)."""
    import torch
    from safetensors.torch import save_model

    model = torch.nn.Linear(2, 1)
    torch.nn.init.constant_(model.weight, 3.0)
    save_model(model, str(Path(version.checkpoint_path) / "model.safetensors"))


def test_the_metric_card_of_a_changed_blend_says_it_scores_no_new_output(
    toy: None, annotators: list[Any], admin_user: Any, client_for: Any,
) -> None:
    """Its stored figures stay (they were computed before the change); the card says, on the page and in the
    API, that the version scores no new output and why."""
    from django.test import Client

    from metrics.services.metric_registry import metrics_get
    from metrics.services.metric_scores import campaign_metric_scores_compute

    campaign = rated_campaign("rated", annotators, n_sources=8)
    toy_version = promoted_toy(campaign)
    blend = train_blend(campaign, seed=1)
    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get(f"blend:{blend.pk},fkgl"))
    page = Client()
    page.force_login(admin_user)
    url = f"/research/campaigns/rated/metrics/blend:{blend.pk}/"
    assert 'id="card-stale"' not in page.get(url).content.decode()
    api_url = f"/api/campaigns/rated/metrics/blend:{blend.pk}/card/?n_boot=0"
    assert client_for(admin_user).get(api_url).json()["stale"] is None

    change_weights(toy_version)
    body = page.get(url).content.decode()
    assert 'id="card-stale"' in body and f"learned:toy:{toy_version.pk} was" in body
    card = client_for(admin_user).get(api_url).json()
    assert card["stale"].startswith(f"blend:{blend.pk}: the blend's components changed")
    assert card["output"]["outputs"] == 24  # the stored figures are still there


def test_the_testbed_refuses_a_changed_blend_by_name_and_leaves_it_out_of_all(
    toy: None, annotators: list[Any],
) -> None:
    """The perturbation testbed queued a run with a changed blend and failed in the background; named, it is
    now refused before the run (409 on the field metrics); ``all`` leaves out an active one."""
    from core.errors import ServiceError
    from metrics.services.testbed import perturbation_metric_names, perturbation_metrics_check

    campaign = rated_campaign("rated", annotators, n_sources=8)
    toy_version = promoted_toy(campaign)
    blend = train_blend(campaign, seed=1)
    learned_version_promote(version=blend, force=True)
    assert "blend" in perturbation_metric_names(["all"])
    perturbation_metrics_check([f"blend:{blend.pk}"])

    change_weights(toy_version)
    with pytest.raises(ServiceError, match="components changed") as refused:
        perturbation_metrics_check([f"blend:{blend.pk}", "fkgl"])
    assert refused.value.field == "metrics" and refused.value.status == 409
    assert "blend" not in perturbation_metric_names(["all"]) and "fkgl" in perturbation_metric_names(["all"])
