"""The LENS scores stored before the one score store move into MetricScore, and back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from metrics.lens import z_to_score
from tests.migrating import migrate_to

BEFORE = [("metrics", "0006_generic_learned_names")]



@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_lens_scores_move_into_the_metric_store_and_back(campaign_with_outputs) -> None:
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    outputs = list(campaign_with_outputs.sources.first().outputs.order_by("pk"))
    first, second, third = outputs[:3]

    old = migrate_to(BEFORE).loader.project_state(BEFORE).apps
    version = old.get_model("metrics", "LearnedVersion").objects.create(
        kind="lens", status="succeeded", encoder="tiny", encoder_identity={"name": "tiny-minilm"}, k=3, seed=7,
        hyperparameters={"rank_weight": 0.5}, checkpoint_path="/gone",
    )
    lens_score = old.get_model("metrics", "LensScore")
    lens_score.objects.create(version=version, output_id=first.pk, z=0.25, score=z_to_score(0.25))
    lens_score.objects.create(version=version, output_id=second.pk, z=-1.0, score=z_to_score(-1.0), truncated=True)
    lens_score.objects.create(version=version, output_id=third.pk, z=2.0, score=z_to_score(2.0))
    # Scored already as a suite metric: the stored metric score stays.
    old.get_model("metrics", "MetricScore").objects.create(
        output_id=third.pk, metric=f"lens:{version.pk}", signature="fresh", value=1.5, components={"score": 93.3})

    new = migrate_to(latest).loader.project_state(latest).apps
    rows = new.get_model("metrics", "MetricScore").objects.filter(metric=f"lens:{version.pk}").order_by("output_id")
    signature = (f"lens:v{version.pk}|enc:tiny-minilm|k:3|loss:topk+rank0.5|seed:7|ckpt:migrated|unknown|value:z|"
                 "version:1.0")
    assert [(r.output_id, r.signature, r.value, r.components) for r in rows] == [
        (first.pk, signature, 0.25, {"score": pytest.approx(z_to_score(0.25)), "truncated": 0.0}),
        (second.pk, signature, -1.0, {"score": pytest.approx(z_to_score(-1.0)), "truncated": 1.0}),
        (third.pk, "fresh", 1.5, {"score": 93.3}),
    ]
    with connection.cursor() as cursor:
        assert "metrics_lensscore" not in connection.introspection.table_names(cursor)

    old = migrate_to(BEFORE).loader.project_state(BEFORE).apps
    back = old.get_model("metrics", "LensScore").objects.order_by("output_id")
    assert [(r.output_id, r.z, r.truncated) for r in back] == [
        (first.pk, 0.25, False), (second.pk, -1.0, True), (third.pk, 1.5, False)]
    assert back.get(output_id=third.pk).score == pytest.approx(93.3)
    migrate_to(latest)
