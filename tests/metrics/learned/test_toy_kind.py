"""Adding a learned metric: a fourth kind registered in one line trains, checkpoints, loads and scores
through the pure family and through the product (versions, the metric registry, ``train_metric``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotation.models import Campaign
from metrics.learned.kinds import load, register_kind, unregister_kind
from metrics.models import KIND_LABELS, LearnedVersion
from metrics.services.metric_registry import metric_get, metric_is_accelerated, metric_names
from metrics.services.training import learned_version_create, learned_version_train
from metrics.suite import Item
from tests.factories import rated_campaign as make_rated_campaign
from tests.tiny import lens_samples

pytestmark = pytest.mark.usefixtures("lens_on_cpu")


@pytest.fixture
def toy() -> Iterator[None]:
    from tests.metrics.learned import toy_kind  # registers the kind on its first import

    register_kind(toy_kind.TOY)  # again, after a previous test removed it
    yield
    unregister_kind("toy")


def test_the_toy_kind_trains_checkpoints_and_loads_through_the_pure_family(toy: None, tmp_path: Path) -> None:
    from metrics.learned.kinds import TrainingInputs, get_kind

    kind = get_kind("toy")
    samples = lens_samples(8, 4, seed=1)
    config = kind.config({"epochs": 4, "seed": 3})
    result = kind.train(config, TrainingInputs(train=samples[:24], heldout=samples[24:]), out_dir=tmp_path,
                        callbacks=())
    assert [h["epoch"] for h in result.history] == [1, 2, 3, 4]
    assert result.history[result.best_epoch - 1]["best"]
    items = [Item(s.complex, s.output, tuple(s.references)) for s in samples[:5]]
    scores = load(result.best_checkpoint).score(items)
    assert len(scores) == 5 and len({value for value, _ in scores}) > 1


def test_the_toy_kind_is_a_product_metric(toy: None, annotators: list[Any], tmp_path: Path) -> None:
    rated: Campaign = make_rated_campaign("rated", annotators)
    assert KIND_LABELS["toy"] == "Toy"
    version = learned_version_train(version=learned_version_create(
        kind="toy", options={"epochs": 2, "seed": 1}, campaigns=[rated], started_by=None, enqueue=False))
    assert version.status == LearnedVersion.Status.SUCCEEDED, version.error
    assert (version.kind, version.label, version.seed) == ("toy", "Toy", 1)
    assert version.encoder_identity == {"name_or_path": "none"}

    metric = metric_get("toy:latest")
    assert metric.name == f"toy:{version.pk}" and metric_is_accelerated(metric)
    assert metric.signature.startswith(f"toy:v{version.pk}|enc:none|seed:1|ckpt:")
    assert metric.signature.endswith("|value:z|version:" + metric.signature.rsplit("version:", 1)[1])
    item = Item("the cat sat on the mat today", "the cat sat", ("a cat sat",))
    assert len(metric.score_batch([item, item])) == 2
    assert f"toy:{version.pk}" in metric_names("all")

    out = StringIO()
    call_command("train_metric", "--kind", "toy", "--campaign", "rated", "--seed", "2", "--option", "epochs=1",
                 "-v", "0", stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    assert report["kind"] == "toy" and report["status"] == "succeeded"
    assert metric_get("toy:latest").name == f"toy:{report['version']}"


def test_without_the_registration_line_the_kind_is_unknown(db: None) -> None:
    from core.errors import ServiceError

    with pytest.raises(ServiceError, match="unknown learned metric 'toy'"):
        learned_version_create(kind="toy", options={}, started_by=None, enqueue=False)
    with pytest.raises(ServiceError, match="unknown metric"):
        metric_get("toy:latest")


def test_the_stored_kind_choices_are_the_registered_built_in_kinds() -> None:
    """The version row's choices are a literal (the migrations record them); they must be the registry's."""
    from metrics.learned.kinds import kind_labels

    assert dict(LearnedVersion.Kind.choices) == kind_labels()
