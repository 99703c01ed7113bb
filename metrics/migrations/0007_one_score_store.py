"""One store for metric scores: the LENS scores of campaign rescoring (``LensScore``) move into ``MetricScore``.

Each row becomes the row the LENS suite metric stores for the output: metric ``lens:<version id>``, value z,
components ``{"score": 100 * Phi(z), "truncated": 0 or 1}``, with the time it was scored. A migration cannot
know the precision a row was served at, and reads no checkpoint, so a moved row's signature says
``ckpt:migrated``: it never equals the metric's current signature, so the rows are shown until the campaign is
scored again, which replaces them. A row already stored under ``lens:<id>`` for the same output is kept.

Backwards, every ``lens:<id>`` score of a LENS version is copied into the recreated ``LensScore``.
"""

from __future__ import annotations

import math
from typing import Any

from django.db import migrations, models

BATCH = 2000
SUITE_VERSION = "1.0"  # the suite version of the metric signatures when the scores moved


def _signature(version: Any) -> str:
    encoder = (version.encoder_identity or {}).get("name") or version.encoder
    weight = float((version.hyperparameters or {}).get("rank_weight") or 0.0)
    loss = f"topk+rank{weight:g}" if weight else "topk"
    return (f"{version.kind}:v{version.pk}|enc:{encoder}|k:{version.k}|loss:{loss}|seed:{version.seed}|"
            f"ckpt:migrated|unknown|value:z|version:{SUITE_VERSION}")


def move_scores(apps: Any, schema_editor: Any) -> None:
    lens_score = apps.get_model("metrics", "LensScore")
    metric_score = apps.get_model("metrics", "MetricScore")
    created_at = metric_score._meta.get_field("created_at")
    created_at.auto_now = False  # keep when each score was computed (the newest signature is the one shown)
    try:
        signatures: dict[int, str] = {}
        rows = lens_score.objects.select_related("version").order_by("pk")
        batch: list[Any] = []
        for row in rows.iterator(chunk_size=BATCH):
            version = row.version
            if version.pk not in signatures:
                signatures[version.pk] = _signature(version)
            batch.append(metric_score(
                output_id=row.output_id, metric=f"{version.kind}:{version.pk}", signature=signatures[version.pk],
                value=row.z, components={"score": row.score, "truncated": float(row.truncated)},
                created_at=row.created_at,
            ))
            if len(batch) >= BATCH:
                metric_score.objects.bulk_create(batch, ignore_conflicts=True)
                batch = []
        metric_score.objects.bulk_create(batch, ignore_conflicts=True)
    finally:
        created_at.auto_now = True


def move_scores_back(apps: Any, schema_editor: Any) -> None:
    lens_score = apps.get_model("metrics", "LensScore")
    metric_score = apps.get_model("metrics", "MetricScore")
    version_model = apps.get_model("metrics", "LearnedVersion")
    names = {f"lens:{pk}": pk for pk in version_model.objects.filter(kind="lens").values_list("pk", flat=True)}
    batch: list[Any] = []
    rows = metric_score.objects.filter(metric__in=list(names)).order_by("pk")
    for output_id, metric, value, components in rows.values_list("output_id", "metric", "value", "components"):
        parts = components or {}
        score = parts.get("score", 50.0 * (1.0 + math.erf(value / math.sqrt(2.0))))
        batch.append(lens_score(version_id=names[metric], output_id=output_id, z=value, score=score,
                                truncated=bool(parts.get("truncated"))))
        if len(batch) >= BATCH:
            lens_score.objects.bulk_create(batch, ignore_conflicts=True)
            batch = []
    lens_score.objects.bulk_create(batch, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("metrics", "0006_generic_learned_names"),
    ]

    operations = [
        migrations.RunPython(move_scores, move_scores_back),
        migrations.DeleteModel(name="LensScore"),
    ]
