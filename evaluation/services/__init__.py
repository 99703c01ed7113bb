"""Statistics of a campaign, computed by the pure core (evaluation.stats) on the stored ratings."""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.core.cache import cache
from django.utils import timezone

from annotation.models import AnnotatorExclusion, Campaign
from annotation.selectors import campaign_analysis_counts
from core.csvsafe import csv_row
from evaluation.selectors import (
    campaign_aspect_ratings,
    campaign_judgements,
    campaign_rating_records,
    campaign_report_fingerprint,
    campaign_system_features,
)
from evaluation.stats import build_report
from evaluation.stats.aspects import aspect_tables
from evaluation.stats.records import RatingRecord
from evaluation.stats.zscores import with_zscores

REPORT_CACHE_SECONDS = 24 * 3600
HISTOGRAM_BINS = 10  # 0-10, 10-20, ..., 90-100 on the raw 0-100 scale
LEADERBOARD_COLUMNS = (
    "rank", "system", "cluster", "n", "n_outputs", "raw_mean", "raw_ci_low", "raw_ci_high",
    "z_mean", "ci_low", "ci_high",
)


def campaign_zscores(*, campaign: Campaign) -> dict[tuple[int, int], float]:
    """WMT z-scores of collected ratings, keyed by (annotation id, output id). Imported ones keep theirs."""
    judgements = list(campaign_judgements(campaign))
    records = [
        RatingRecord(source=str(j.annotation.source_id), output=str(j.output_id), system="",
                     rater=j.annotation.rater_key, raw=j.rating, z=j.z_score)
        for j in judgements
    ]
    filled, _ = with_zscores(records)
    return {
        (j.annotation_id, j.output_id): r.z
        for j, r in zip(judgements, filled, strict=True)
        if r.z is not None and j.z_score is None
    }


def _summary(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    q = np.quantile(np.asarray(values, dtype=np.float64), [0.0, 0.25, 0.5, 0.75, 1.0])
    return {
        "min": float(q[0]), "q1": float(q[1]), "median": float(q[2]), "q3": float(q[3]), "max": float(q[4]),
        "mean": math.fsum(values) / len(values),
    }


def rating_distributions(records: Sequence[RatingRecord]) -> list[dict[str, Any]]:
    """Per system: histogram of raw ratings (ten 10-point bins) and five-number summaries of raw and z.

    Missing z-scores are computed per rater as in the report, so both describe the same numbers.
    """
    scored, _ = with_zscores(records)
    raw: dict[str, list[float]] = defaultdict(list)
    zs: dict[str, list[float]] = defaultdict(list)
    for record in scored:
        raw[record.system].append(record.raw)
        if record.z is not None:
            zs[record.system].append(record.z)
    rows = []
    for system in sorted(raw):
        bins = np.clip((np.asarray(raw[system]) // (100 / HISTOGRAM_BINS)).astype(int), 0, HISTOGRAM_BINS - 1)
        rows.append(
            {
                "system": system,
                "n": len(raw[system]),
                "histogram": np.bincount(bins, minlength=HISTOGRAM_BINS).tolist(),
                "raw": _summary(raw[system]),
                "z": _summary(zs[system]),
            }
        )
    return rows


def campaign_aspect_report(*, campaign: Campaign, n_boot: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """The report's ``aspects`` block: per aspect of a multi-aspect campaign, mean raw and mean z per system
    with 95% bootstrap CIs over sources (``evaluation.stats.aspects.aspect_tables``); [] for none."""
    ratings = campaign_aspect_ratings(campaign)
    tables = aspect_tables(ratings.records, scales=ratings.scales, z_origins=ratings.z_origins, n_boot=n_boot,
                           seed=seed)
    for table in tables:
        prefix = f"{table['aspect']}: "
        table["warnings"] = [w for w in ratings.warnings if w.startswith(prefix)] + table["warnings"]
    return tables


def campaign_exclusion_note(*, campaign: Campaign) -> list[dict[str, Any]]:
    """The open exclusions of a campaign as reports and exports state them: pseudonym, when and why."""
    return [
        {"annotator": e.annotator.pseudonym, "excluded_at": e.excluded_at.isoformat(), "reason": e.reason}
        for e in AnnotatorExclusion.objects.filter(campaign=campaign, reincluded_at__isnull=True)
        .select_related("annotator").order_by("annotator__pseudonym")
    ]


def campaign_report_build(
    *, campaign: Campaign, n_boot: int = 1000, seed: int = 0, fingerprint: str | None = None
) -> dict[str, Any]:
    """The full report document, computed now: the core's report plus features and rating distributions."""
    if fingerprint is None:
        fingerprint = campaign_report_fingerprint(campaign=campaign)
    records = campaign_rating_records(campaign)
    report = build_report(records, n_boot=n_boot, seed=seed)
    return {
        "campaign": {"slug": campaign.slug, "name": campaign.name},
        "fingerprint": fingerprint,
        "generated_at": timezone.now().isoformat(),
        "n_boot": n_boot,
        "seed": seed,
        **report,
        "features": campaign_system_features(campaign=campaign),
        "analysis": campaign_analysis_counts(campaign=campaign),
        "distributions": rating_distributions(records),
        "aspects": campaign_aspect_report(campaign=campaign, n_boot=n_boot, seed=seed),
        # Quality control: the annotators left out of every number above (leaderboard, alpha), by pseudonym.
        "excluded_annotators": campaign_exclusion_note(campaign=campaign),
    }


def campaign_report(*, campaign: Campaign, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The report, from the cache while the campaign's judgements and analysis are unchanged.

    The key holds a fingerprint of the judgements (count, last id, last submission) and of the analysis,
    so a new submission, a reopened annotation or a re-analysis makes the next call recompute.
    """
    fingerprint = campaign_report_fingerprint(campaign=campaign)
    key = f"evaluation:report:{campaign.pk}:{n_boot}:{seed}:{fingerprint}"
    report: dict[str, Any] | None = cache.get(key)
    if report is None:
        report = campaign_report_build(campaign=campaign, n_boot=n_boot, seed=seed, fingerprint=fingerprint)
        cache.set(key, report, REPORT_CACHE_SECONDS)
    return report


def report_leaderboard_csv(report: dict[str, Any]) -> str:
    """The report's system leaderboard as CSV, best first, floats as written by Python (full precision)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LEADERBOARD_COLUMNS)
    for row in report["systems"]:
        # System names come from imports: guard them against spreadsheet formula injection.
        writer.writerow(csv_row("" if row.get(c) is None else row.get(c) for c in LEADERBOARD_COLUMNS))
    return buffer.getvalue()
