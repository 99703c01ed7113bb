"""Statistics of a campaign, computed by the pure core (evaluation.stats) on the stored ratings."""

from __future__ import annotations

import io
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
from django.core.cache import cache
from django.utils import timezone

from annotation.models import AnnotatorExclusion, Campaign
from annotation.selectors import campaign_analysis_counts
from core.budgets import n_boot_check
from core.csvsafe import csv_writer
from core.heavy import heavy_gate
from evaluation.selectors import (
    campaign_aspect_ratings,
    campaign_rating_records,
    campaign_report_fingerprint,
    campaign_system_features,
)
from evaluation.stats import build_report
from evaluation.stats.aspects import aspect_tables
from evaluation.stats.records import RatingRecord
from evaluation.stats.zscores import with_zscores

REPORT_CACHE_SECONDS = 24 * 3600
REPORT_LIVE_SECONDS = 15
"""A live campaign's dashboard (``live=True``) reuses a report built this many seconds ago, so it is rebuilt at
most this often however fast ratings arrive (the dashboard reloads on every submit it hears of)."""
HISTOGRAM_BINS = 10  # 0-10, 10-20, ..., 90-100 on the raw 0-100 scale
LEADERBOARD_COLUMNS = (
    "rank", "system", "cluster", "n", "n_outputs", "raw_mean", "raw_ci_low", "raw_ci_high",
    "z_mean", "ci_low", "ci_high",
)


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
    n_boot_check(n_boot)
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


def campaign_report(
    *, campaign: Campaign, n_boot: int = 1000, seed: int = 0, live: bool = False, gated: bool = False
) -> dict[str, Any]:
    """The report (see `campaign_report_timed`, which also says whether a live one is behind the ratings)."""
    return campaign_report_timed(campaign=campaign, n_boot=n_boot, seed=seed, live=live, gated=gated)[0]


def campaign_report_timed(
    *, campaign: Campaign, n_boot: int = 1000, seed: int = 0, live: bool = False, gated: bool = False
) -> tuple[dict[str, Any], float | None]:
    """The report, from the cache while the campaign's ratings are unchanged.

    Versioned cache: the key holds the ratings' version, ``campaign_report_fingerprint`` (count, last id and
    last submission of the counting judgements, aspect ratings, analysis), computed by three aggregate queries
    on the same judgement query the report reads, so any change to what counts (a submission, a reopened
    annotation, a re-analysis, an excluded annotator) gives a new key, and going back to an earlier state finds
    its report again. Reports are built whole (the statistics resample every rating, so no part of them can be
    updated incrementally); ``live=True`` (the dashboard) bounds the rebuilds instead: the report built last is
    returned as long as it is younger than ``REPORT_LIVE_SECONDS``, whatever arrived since. Its ``fingerprint``
    and ``generated_at`` say which ratings it covers. The second value is None for a report of the current
    ratings, else the seconds until the report may be rebuilt on them: a dashboard asks again then, so that
    the last submissions of a burst are not left out until the next one arrives.

    ``gated=True`` (the API) builds a missing report only inside ``core.heavy.heavy_gate``: when the web
    process is already computing as many heavy reads as it may, the request gets a 429 at once.
    """
    fingerprint = campaign_report_fingerprint(campaign=campaign)
    key = f"evaluation:report:{campaign.pk}:{n_boot}:{seed}:{fingerprint}"
    report: dict[str, Any] | None = cache.get(key)
    if report is not None:
        return report, None
    latest_key = f"evaluation:report:{campaign.pk}:{n_boot}:{seed}:latest"
    if live:
        latest: tuple[float, dict[str, Any]] | None = cache.get(latest_key)
        age = time.time() - latest[0] if latest is not None else None
        if latest is not None and age is not None and age < REPORT_LIVE_SECONDS:
            return latest[1], REPORT_LIVE_SECONDS - age
    with heavy_gate() if gated else nullcontext():
        if gated:
            report = cache.get(key)  # built meanwhile by the request that held the gate
            if report is not None:
                return report, None
        report = campaign_report_build(campaign=campaign, n_boot=n_boot, seed=seed, fingerprint=fingerprint)
    cache.set(key, report, REPORT_CACHE_SECONDS)
    cache.set(latest_key, (time.time(), report), REPORT_LIVE_SECONDS)
    return report, None


def report_leaderboard_csv(report: dict[str, Any]) -> str:
    """The report's system leaderboard as CSV, best first, floats as written by Python (full precision)."""
    buffer = io.StringIO()
    writer = csv_writer(buffer, lineterminator="\n")
    writer.writerow(LEADERBOARD_COLUMNS)
    for row in report["systems"]:
        writer.writerow("" if row.get(c) is None else row.get(c) for c in LEADERBOARD_COLUMNS)
    return buffer.getvalue()
