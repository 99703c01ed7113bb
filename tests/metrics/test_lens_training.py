"""LENS in the product: training snapshots, the registry (train, promote, roll back, cancel, failure), the
training API's permissions and the live progress websocket. Tiny offline encoder, CPU, one thread."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from django.db import IntegrityError, transaction

from annotation.models import (
    Campaign,
    Output,
    OutputJudgement,
)
from metrics.learned.callbacks import Callback, ProgressEvent
from metrics.lens import TrainConfig
from metrics.models import LearnedVersion, TrainingEvent
from metrics.services import training as training_service
from metrics.services.snapshot import lens_training_snapshot, split_sources
from metrics.services.training import (
    learned_version_cancel,
    learned_version_promote,
    learned_version_train,
    lens_version_create,
)
from tests.factories import rated_campaign as make_rated_campaign
from tests.factories import succeeded_version
from tests.tiny import TINY_OPTIONS

pytestmark = pytest.mark.usefixtures("lens_on_cpu")


@pytest.fixture
def rated(annotators) -> Campaign:
    return make_rated_campaign("rated", annotators)


# --- Snapshot ---------------------------------------------------------------------------------------------


def test_snapshot_is_deterministic_hashes_the_ratings_and_splits_by_source(rated: Campaign) -> None:
    first = lens_training_snapshot(campaigns=[rated], heldout_fraction=0.2, seed=0)
    again = lens_training_snapshot(campaigns=[rated], heldout_fraction=0.2, seed=0)
    assert first.sha256 == again.sha256 and first.canonical == again.canonical
    assert first.sha256 == hashlib.sha256(first.canonical).hexdigest()
    assert [s.source_id for s in first.heldout] == [s.source_id for s in again.heldout]
    # One source in five held out (of six, rounded), never mixed with training sources.
    assert first.counts["heldout_sources"] == 1 and first.counts["train_sources"] == 5
    assert {s.source_id for s in first.train}.isdisjoint({s.source_id for s in first.heldout})
    assert first.counts["outputs"] == 18 and first.counts["ratings"] == 18 * 3
    # Another seed: same data (same hash), another split.
    other = lens_training_snapshot(campaigns=[rated], heldout_fraction=0.5, seed=1)
    assert other.sha256 == first.sha256 and other.counts["heldout_sources"] == 3
    # Samples carry raw ratings per rater and the mean z of the output's ratings.
    sample = first.train[0]
    assert len(sample.ratings) == 3 and all(0 <= r <= 100 for r in sample.ratings.values())
    assert sample.references and sample.source_id.startswith("rated/")
    # A changed rating changes the hash.
    judgement = OutputJudgement.objects.filter(output__source__campaign=rated).first()
    judgement.rating = 1.0
    judgement.save(update_fields=["rating"])
    assert lens_training_snapshot(campaigns=[rated], heldout_fraction=0.2, seed=0).sha256 != first.sha256


def test_snapshot_mean_z_categories_skipped_sources_and_several_campaigns(annotators) -> None:
    past = make_rated_campaign("past", annotators, n_sources=4, without_references=1, categories={"trim": "deletion"})
    # The raters call "random" a split in two of three judgements: the majority wins over the given category.
    for i, judgement in enumerate(OutputJudgement.objects.filter(output__source__campaign=past,
                                                                 output__system__name="random")):
        judgement.category = "split" if i % 3 else "paraphrase"
        judgement.save(update_fields=["category"])
    other = make_rated_campaign("other", annotators[:2], n_sources=3, seed=5)
    snapshot = lens_training_snapshot(campaigns=[past, other], heldout_fraction=0.0, seed=0)
    assert snapshot.heldout == []
    assert snapshot.counts["sources_skipped_no_reference"] == 1
    assert any("without references" in w and w.startswith("past") for w in snapshot.warnings)
    assert snapshot.counts["sources"] == 3 + 3 and snapshot.counts["campaigns"] == 2
    by_system = {(s.source_id, s.output_id): s for s in snapshot.train}
    assert by_system[("past/s1", "trim")].category == "deletion"  # given category
    assert by_system[("past/s1", "copy-ref")].category == "unknown"  # no vote, given or automatic category
    assert sum(s.category == "split" for s in snapshot.train if s.output_id == "random") >= 2
    # Per output: the mean of the raters' z-scores (each rater z-scored over their own ratings).
    from evaluation.selectors import campaign_zscores

    zs = campaign_zscores(campaign=past)
    output = Output.objects.get(source__campaign=past, source__external_id="s2", system__name="trim")
    expected = [z for (_, out_id), z in zs.items() if out_id == output.pk]
    assert by_system[("past/s2", "trim")].z == pytest.approx(sum(expected) / len(expected))


def test_split_sources_is_seeded_and_keeps_a_training_source() -> None:
    ids = [f"s{i}" for i in range(20)]
    assert split_sources(ids, heldout_fraction=0.1, seed=3) == split_sources(list(reversed(ids)), heldout_fraction=0.1,
                                                                              seed=3)
    assert len(split_sources(ids, heldout_fraction=0.1, seed=3)) == 2
    assert split_sources(["a"], heldout_fraction=0.5, seed=0) == set()
    assert len(split_sources(["a", "b"], heldout_fraction=0.5, seed=0)) == 1


# --- Training through the API (eager Celery) ---------------------------------------------------------------


def test_admin_starts_training_from_the_api_and_progress_is_stored_and_broadcast(
    rated: Campaign, admin_user, client_for, tiny_encoder_dir: Path, django_capture_on_commit_callbacks,
    monkeypatch: pytest.MonkeyPatch, settings,
) -> None:
    from channels.layers import get_channel_layer

    settings.LIVE_EVENTS_FEED = False  # over the layer, as with Redis (the feed: tests/core/test_live_feed.py)

    # Record what the training task sends to the Channels layer (the real layer: in-memory or Redis). The group
    # name is only known once the version exists, so every "learned-*" send is kept and filtered afterwards.
    layer = get_channel_layer()
    sent: list[tuple[str, dict]] = []
    real_group_send = layer.group_send

    async def recording_group_send(group: str, message: dict) -> None:
        sent.append((group, message))
        await real_group_send(group, message)

    monkeypatch.setattr(layer, "group_send", recording_group_send)

    body = {"campaigns": ["rated"], "encoder": str(tiny_encoder_dir), "k": 2, "epochs": 2, "heldout": 0.2,
            "options": TINY_OPTIONS}
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(admin_user).post("/api/learned/versions/", body, format="json")
    assert response.status_code == 201, response.content
    version = LearnedVersion.objects.get(pk=response.json()["id"])
    assert version.status == LearnedVersion.Status.SUCCEEDED, version.error
    assert response.json()["status"] == "queued"  # the captured on_commit callbacks ran after the response
    assert version.started_by == admin_user and not version.is_active
    assert len(version.data_sha256) == 64 and version.data_counts["heldout_sources"] == 1
    assert version.hyperparameters["k"] == 2 and version.hyperparameters["model"]["hidden_sizes"] == [16]
    assert set(version.heldout_results["tau"]) >= {"all"} and "pearson" in version.heldout_results
    assert version.encoder_identity["hidden_size"] == 32 and version.device == "cpu"
    assert Path(version.checkpoint_path, "model.safetensors").is_file()
    assert Path(version.checkpoint_path).parent.joinpath("snapshot.json").is_file()
    epochs = TrainingEvent.objects.filter(version=version, kind="epoch").order_by("epoch")
    assert [e.epoch for e in epochs] == [1, 2] and epochs[0].heldout is not None
    assert TrainingEvent.objects.filter(version=version, kind="step").count() >= 2

    received = [message["payload"] for group, message in sent if group == f"learned-{version.pk}"]
    kinds = [p["event"] for p in received]
    assert kinds[0] == "training.status" and kinds[-1] == "training.status" and "training.progress" in kinds
    assert received[-1]["status"] == "succeeded"
    detail = client_for(admin_user).get(f"/api/learned/versions/{version.pk}/events/").json()
    assert len(detail["events"]) == TrainingEvent.objects.filter(version=version).count()


def test_only_admins_may_start_promote_or_cancel(
    rated: Campaign, annotators, researcher, admin_user, client_for, tiny_checkpoint: Path,
    django_capture_on_commit_callbacks,
) -> None:
    version = succeeded_version(tiny_checkpoint)
    body = {"campaigns": ["rated"], "epochs": 1}
    for user in (annotators[0], researcher):
        client = client_for(user)
        with django_capture_on_commit_callbacks(execute=True):
            assert client.post("/api/learned/versions/", body, format="json").status_code == 403
        assert client.post(f"/api/learned/versions/{version.pk}/promote/").status_code == 403
        assert client.post(f"/api/learned/versions/{version.pk}/cancel/").status_code == 403
    assert LearnedVersion.objects.count() == 1 and not LearnedVersion.objects.get().is_active
    assert client_for(researcher).get("/api/learned/versions/").status_code == 200
    assert client_for(annotators[0]).get("/api/learned/versions/").status_code == 403
    # Admin input errors are readable 400s.
    bad = client_for(admin_user).post("/api/learned/versions/", {"campaigns": ["nope"]}, format="json")
    assert bad.status_code == 400 and "nope" in bad.json()["detail"]
    bad = client_for(admin_user).post("/api/learned/versions/", {"campaigns": ["rated"], "options": {"warp": 9}},
                                      format="json")
    assert bad.status_code == 400 and "warp" in bad.json()["detail"]
    # The admin can promote.
    assert client_for(admin_user).post(f"/api/learned/versions/{version.pk}/promote/").status_code == 200


def test_lens_pages_are_for_admins(client, admin_user, researcher, tiny_checkpoint: Path) -> None:
    version = succeeded_version(tiny_checkpoint)
    client.force_login(researcher)
    assert client.get("/learned/").status_code == 403
    client.force_login(admin_user)
    running = LearnedVersion.objects.create(status=LearnedVersion.Status.RUNNING, encoder="tiny")
    page = client.get("/learned/")
    html = page.content.decode()
    assert page.status_code == 200 and f"v{version.pk}" in html
    # A live chart for the running version only, wired through data-* attributes.
    assert html.count("data-learned-chart") == 1 and f'data-ws-path="/ws/learned/{running.pk}/"' in html
    assert f"/api/learned/versions/{running.pk}/events/" in html
    assert client.get(f"/learned/{version.pk}/").status_code == 200
    assert client.post(f"/learned/{version.pk}/promote/", {"confirm": "1"}).status_code == 302
    version.refresh_from_db()
    assert version.is_active
    assert client.get("/admin/metrics/learnedversion/").status_code == 200
    assert client.get("/admin/metrics/learnedversion/train/").status_code == 200


def test_former_lens_addresses_redirect_permanently_and_keep_the_method(
    client, admin_user, tiny_checkpoint: Path, client_for,
) -> None:
    """The learned-metric pages and registry API moved from /lens/ and /api/lens/versions/: the old
    addresses answer 308 (method and body kept) with the new one; the old websocket address still routes."""
    version = succeeded_version(tiny_checkpoint)
    client.force_login(admin_user)
    for old, new in (("/lens/", "/learned/"), (f"/lens/{version.pk}/", f"/learned/{version.pk}/"),
                     ("/lens/?page=2", "/learned/?page=2")):
        response = client.get(old)
        assert (response.status_code, response["Location"]) == (308, new)
    promoted = client.post(f"/lens/{version.pk}/promote/", {"confirm": "1"}, follow=True)
    assert promoted.redirect_chain[0] == (f"/learned/{version.pk}/promote/", 308)
    version.refresh_from_db()
    assert version.is_active
    api = client_for(admin_user)
    moved = api.post("/api/lens/versions/", {"campaigns": ["nope"]}, format="json")
    assert (moved.status_code, moved["Location"]) == (308, "/api/learned/versions/")
    followed = api.post("/api/lens/versions/", {"campaigns": ["nope"]}, format="json", follow=True)
    assert followed.status_code == 400 and "nope" in followed.json()["detail"]  # the body reached the new view
    events = api.get(f"/api/lens/versions/{version.pk}/events/", follow=True)
    assert events.status_code == 200 and events.json()["version"] == version.pk

    from metrics.routing import websocket_urlpatterns

    def route(path: str) -> str | None:
        for pattern in websocket_urlpatterns:
            match = pattern.resolve(path)
            if match is not None:
                return match.kwargs.get("version_id")
        return None

    assert route(f"ws/learned/{version.pk}/") == route(f"ws/lens/{version.pk}/") == str(version.pk)


def test_admin_train_form_and_retrain_action_queue_versions(
    rated: Campaign, client, admin_user, tiny_encoder_dir: Path, django_capture_on_commit_callbacks,
) -> None:
    client.force_login(admin_user)
    form = {"campaigns": [rated.pk], "encoder": str(tiny_encoder_dir), "k": 2, "epochs": 1, "heldout": 0.2,
            "seed": 4, "batch_size": 4}
    response = client.post("/admin/metrics/learnedversion/train/", form)
    assert response.status_code == 302
    queued = LearnedVersion.objects.get()
    assert queued.status == "queued" and queued.k == 2 and queued.seed == 4
    assert queued.hyperparameters["batch_size"] == 4 and queued.started_by == admin_user
    LearnedVersion.objects.filter(pk=queued.pk).update(
        hyperparameters={**queued.hyperparameters, "model": {**queued.hyperparameters["model"], **{
            "hidden_sizes": [16], "max_length": 24}}})
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/admin/metrics/learnedversion/", {"action": "retrain", "_selected_action": [queued.pk]})
    retrained = LearnedVersion.objects.exclude(pk=queued.pk).get()
    assert retrained.status == "succeeded", retrained.error
    assert retrained.hyperparameters["model"]["hidden_sizes"] == [16] and retrained.note == f"retrain of v{queued.pk}"
    client.post("/admin/metrics/learnedversion/", {"action": "promote", "_selected_action": [retrained.pk]})
    assert LearnedVersion.objects.get(is_active=True) == retrained


# --- Promotion and rollback ---------------------------------------------------------------------------------


def test_promotion_is_atomic_and_rollback_promotes_a_previous_version(tiny_checkpoint: Path, admin_user) -> None:
    first, second = succeeded_version(tiny_checkpoint), succeeded_version(tiny_checkpoint)
    failed = LearnedVersion.objects.create(status=LearnedVersion.Status.FAILED, encoder="tiny", error="boom")

    def active() -> list[int]:
        return list(LearnedVersion.objects.filter(is_active=True).values_list("pk", flat=True))

    learned_version_promote(version=first, user=admin_user)
    assert active() == [first.pk]
    learned_version_promote(version=second, user=admin_user)
    assert active() == [second.pk]
    learned_version_promote(version=first)  # rollback
    assert active() == [first.pk]
    learned_version_promote(version=first)  # idempotent
    assert active() == [first.pk]

    from core.errors import Conflict

    with pytest.raises(Conflict, match="only a succeeded version"):
        learned_version_promote(version=failed)
    assert active() == [first.pk]
    # The database refuses a second active row whatever the code path.
    with pytest.raises(IntegrityError), transaction.atomic():
        LearnedVersion.objects.filter(pk=second.pk).update(is_active=True)
    assert active() == [first.pk]


# --- Failure and cancellation -------------------------------------------------------------------------------


def _explode_in_epoch(monkeypatch: pytest.MonkeyPatch, epoch: int, action) -> None:
    """Wrap the training loop so ``action(version_id)`` runs at the first progress event of ``epoch``."""
    real_train = training_service.train  # the name the service calls

    def wrapped(kind, config, inputs, *, out_dir, callbacks):
        version_id = int(Path(out_dir).name[1:])

        class Explode(Callback):
            def on_progress(self, event: ProgressEvent) -> None:
                if event.epoch == epoch:
                    action(version_id)

        return real_train(kind, config, inputs, out_dir=out_dir, callbacks=[*callbacks, Explode()])

    monkeypatch.setattr(training_service, "train", wrapped)


def test_a_run_failing_in_epoch_two_leaves_the_active_model_untouched(
    rated: Campaign, admin_user, tiny_checkpoint: Path, tiny_encoder_dir: Path, monkeypatch,
) -> None:
    serving = learned_version_promote(version=succeeded_version(tiny_checkpoint))

    def fail(version_id: int) -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    _explode_in_epoch(monkeypatch, 2, fail)
    version = lens_version_create(
        campaigns=[rated], started_by=admin_user, enqueue=False,
        config=TrainConfig.from_options({"encoder": str(tiny_encoder_dir), "epochs": 3, **TINY_OPTIONS}),
    )
    version = learned_version_train(version=version)
    assert version.status == LearnedVersion.Status.FAILED
    assert version.error == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert version.finished_at is not None and not version.is_active and version.checkpoint_path == ""
    assert list(LearnedVersion.objects.filter(is_active=True)) == [serving]
    assert not (training_service.learned_version_dir(version) / "best").exists()
    # The curve up to the failure stays for the page.
    assert TrainingEvent.objects.filter(version=version, kind="epoch", epoch=1).exists()
    # A failed version can be neither promoted nor cancelled; a redelivered task does nothing.
    from core.errors import Conflict

    with pytest.raises(Conflict):
        learned_version_promote(version=version)
    with pytest.raises(Conflict):
        learned_version_cancel(version=version)
    assert learned_version_train(version=version).status == LearnedVersion.Status.FAILED


def test_cancel_a_running_training_and_a_queued_one(
    rated: Campaign, admin_user, client_for, tiny_checkpoint: Path, tiny_encoder_dir: Path, monkeypatch,
) -> None:
    serving = learned_version_promote(version=succeeded_version(tiny_checkpoint))
    _explode_in_epoch(monkeypatch, 1, lambda pk: learned_version_cancel(version=LearnedVersion.objects.get(pk=pk)))
    version = lens_version_create(
        campaigns=[rated], started_by=admin_user, enqueue=False,
        config=TrainConfig.from_options({"encoder": str(tiny_encoder_dir), "epochs": 3, **TINY_OPTIONS}),
    )
    version = learned_version_train(version=version)
    assert version.status == LearnedVersion.Status.CANCELLED and version.cancel_requested
    assert version.error.startswith("Cancelled at epoch 1") and "active model was not changed" in version.error
    assert list(LearnedVersion.objects.filter(is_active=True)) == [serving]
    assert not TrainingEvent.objects.filter(version=version, epoch__gte=2).exists()

    # Queued (the worker has not started it): cancelled at once, and the task then does nothing.
    monkeypatch.undo()
    client = client_for(admin_user)
    response = client.post("/api/learned/versions/", {"campaigns": ["rated"], "encoder": str(tiny_encoder_dir),
                                                   "epochs": 1, "options": TINY_OPTIONS}, format="json")
    queued = LearnedVersion.objects.get(pk=response.json()["id"])
    assert queued.status == LearnedVersion.Status.QUEUED  # on_commit callbacks were not run
    cancelled = client.post(f"/api/learned/versions/{queued.pk}/cancel/")
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
    from metrics.tasks import learned_train_run

    assert learned_train_run(queued.pk) == "cancelled"
    assert not TrainingEvent.objects.filter(version=queued).exists()
    assert client.post(f"/api/learned/versions/{queued.pk}/cancel/").status_code == 409


# --- Live progress websocket ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_progress_websocket_sends_the_stored_curve_then_live_events(make_user, tiny_checkpoint: Path) -> None:
    from asgiref.sync import async_to_sync
    from channels.testing import WebsocketCommunicator

    from core.events import broadcast
    from metrics.consumers import TrainingProgressConsumer

    admin = make_user("ws-admin", "admin")
    annotator = make_user("ws-ann")
    version = succeeded_version(tiny_checkpoint)
    TrainingEvent.objects.create(version=version, kind="epoch", epoch=1, step=5, total_steps=10, loss=0.7,
                                     heldout_tau=0.25, is_best=True)

    async def session(user):
        communicator = WebsocketCommunicator(TrainingProgressConsumer.as_asgi(), f"/ws/learned/{version.pk}/")
        communicator.scope["user"] = user
        communicator.scope["url_route"] = {"kwargs": {"version_id": str(version.pk)}}
        connected, _ = await communicator.connect()
        if not connected:
            return None
        first = await communicator.receive_json_from()
        from asgiref.sync import sync_to_async

        await sync_to_async(broadcast)(f"learned-{version.pk}", {"event": "training.progress", "step": 6, "loss": 0.6})
        second = await communicator.receive_json_from()
        await communicator.disconnect()
        return first, second

    assert async_to_sync(session)(annotator) is None
    first, second = async_to_sync(session)(admin)
    assert first["event"] == "training.snapshot" and first["status"] == "succeeded"
    assert first["events"] == [{"kind": "epoch", "epoch": 1, "step": 5, "total_steps": 10, "loss": 0.7,
                                "heldout_tau": 0.25, "heldout_pearson": None, "heldout_loss": None,
                                "is_best": True}]
    assert second == {"event": "training.progress", "step": 6, "loss": 0.6}


# --- One TrainConfig for every interface -------------------------------------------------------------------


def test_every_interface_checks_training_options_with_the_train_config(
    rated: Campaign, client, admin_user, client_for, tiny_encoder_dir: Path,
) -> None:
    from io import StringIO

    from django.core.management import CommandError, call_command

    api = client_for(admin_user)
    # API: an option out of its bounds or unknown is a 400 naming it; an option given twice is refused.
    response = api.post("/api/learned/versions/", {"campaigns": ["rated"], "options": {"grad_clip": 0}}, format="json")
    assert response.status_code == 400
    assert response.json() == {"detail": "grad_clip must be above 0 (got 0)", "field": "grad_clip"}
    response = api.post("/api/learned/versions/", {"campaigns": ["rated"], "k": 21}, format="json")
    assert response.status_code == 400 and "k" in response.json()
    response = api.post("/api/learned/versions/", {"campaigns": ["rated"], "k": 2, "options": {"k": 3}}, format="json")
    assert response.status_code == 400 and response.json()["field"] == "options"
    # The admin form and the LENS page share the form: the config's error lands on the field.
    client.force_login(admin_user)
    form = {"campaigns": [rated.pk], "encoder": str(tiny_encoder_dir), "k": 2, "epochs": 1, "heldout": 0.2,
            "seed": 4, "head_lr": "nan"}
    for url in ("/admin/metrics/learnedversion/train/", "/learned/"):
        page = client.post(url, form)
        assert page.status_code == 200 and "head_lr" in page.context["form"].errors, url
    page = client.post("/learned/", {**form, "head_lr": "", "heldout": 0.7})
    assert "Ensure this value is less than or equal to 0.5" in str(page.context["form"].errors["heldout"])
    # train_lens: a value that is not JSON is an error (it used to become the raw string), as is an unknown key.
    for options, message in (
        (["--option", "head_lr=fast"], "--option 'head_lr=fast': the value is not JSON"),
        (["--option", "warp=9"], r"unknown training option\(s\): warp"),
        (["--option", "hidden_sizes=[0]"], r"hidden_sizes\[0\] must be between 1 and 8192"),
        (["--k", "2", "--option", "k=3"], "k is given twice"),
    ):
        with pytest.raises(CommandError, match=message):
            call_command("train_lens", "--campaign", "rated", *options, stdout=StringIO())
    assert not LearnedVersion.objects.exists()
