"""One JSON-serialisable evaluation report for a campaign's ratings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluation.stats.agreement import alpha_with_ci, rating_matrix
from evaluation.stats.annotators import annotator_quality
from evaluation.stats.correlation import CATEGORIES
from evaluation.stats.leaderboard import system_leaderboard
from evaluation.stats.records import RatingRecord, count_ratings
from evaluation.stats.zscores import with_zscores


def _counts(records: Sequence[RatingRecord]) -> dict[str, int]:
    return {
        "ratings": count_ratings(records),
        "outputs": len({r.output for r in records}),
        "sources": len({r.source for r in records}),
        "systems": len({r.system for r in records}),
        "raters": len({r.rater for r in records}),
    }


def _alpha_block(
    records: Sequence[RatingRecord], *, n_boot: int, seed: int
) -> dict[str, dict[str, float | None]]:
    return {
        field: alpha_with_ci(rating_matrix(records, field=field), n_boot=n_boot, seed=seed)
        for field in ("raw", "z")
    }


def _table(records: Sequence[RatingRecord], *, n_boot: int, seed: int, label: str) -> dict[str, Any]:
    board = system_leaderboard(records, n_boot=n_boot, seed=seed)
    return {
        "counts": _counts(records),
        "ranked_by": board.ranked_by,
        "systems": board.rows,
        "alpha": _alpha_block(records, n_boot=n_boot, seed=seed),
        "warnings": [f"{label}: {w}" for w in board.warnings],
    }


def build_report(records: Sequence[RatingRecord], *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Leaderboard, agreement and annotator quality for a set of ratings.

    Missing z-scores are computed per rater (see :mod:`evaluation.stats.zscores`);
    given ones are kept.

    Returns:
        ``counts``, ``ranked_by``, ``systems`` (best first: ``system``, ``n``,
        ``raw_mean``, ``z_mean``, ``ci_low``, ``ci_high``, ``cluster``, ...),
        ``alpha`` (``{"raw"|"z": {"value", "ci_low", "ci_high"}}``), ``categories``
        (per category present: ``counts``, ``ranked_by``, ``systems``, ``alpha``),
        ``annotators`` and ``warnings``.  Floats are plain floats, undefined ones ``None``.
    """
    warnings: list[str] = []
    if not records:
        return {
            "counts": _counts(records),
            "ranked_by": "z",
            "systems": [],
            "alpha": {f: {"value": None, "ci_low": None, "ci_high": None} for f in ("raw", "z")},
            "categories": {},
            "annotators": [],
            "warnings": ["no ratings"],
        }
    scored, z_warnings = with_zscores(records)
    warnings.extend(z_warnings)

    raw_matrix = rating_matrix(scored, field="raw")
    if raw_matrix.duplicates:
        warnings.append(
            f"{raw_matrix.duplicates} (rater, output) pairs rated more than once: their mean is used"
        )
    single = int(((~np.isnan(raw_matrix.values)).sum(axis=0) < 2).sum())
    if single:
        warnings.append(f"{single} outputs have fewer than 2 ratings and do not count towards alpha")

    main = _table(scored, n_boot=n_boot, seed=seed, label="systems")
    warnings.extend(main["warnings"])
    for field, block in main["alpha"].items():
        if block["value"] is None:
            warnings.append(f"alpha on {field} ratings is undefined (no pairable outputs or no variation)")

    categories: dict[str, Any] = {}
    present = {r.category for r in scored if r.category is not None}
    ordered = [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))
    for category in ordered:
        subset = [r for r in scored if r.category == category]
        table = _table(subset, n_boot=n_boot, seed=seed, label=f"category {category}")
        warnings.extend(table.pop("warnings"))
        categories[category] = table
    uncategorised = sum(1 for r in scored if r.category is None)
    if present and uncategorised:
        warnings.append(f"{uncategorised} ratings have no category and appear in no category table")

    return {
        "counts": main["counts"],
        "ranked_by": main["ranked_by"],
        "systems": main["systems"],
        "alpha": main["alpha"],
        "categories": categories,
        "annotators": annotator_quality(scored),
        "warnings": warnings,
    }
