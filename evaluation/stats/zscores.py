"""Per-rater z-scores, WMT style.

For each rater, ``z = (raw - mean) / std`` with the sample standard deviation
(``ddof=1``) over all of that rater's ratings.  Records that already carry a
z-score (imported datasets, whose z-scores were computed over a larger pool of
ratings than the file holds) keep it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from evaluation.stats.records import RatingRecord


@dataclass(frozen=True)
class RaterScale:
    """Mean and sample standard deviation of one rater's raw ratings."""

    n: int
    mean: float
    std: float | None  # None when undefined (fewer than 2 ratings) or zero


def rater_scales(records: Sequence[RatingRecord]) -> dict[str, RaterScale]:
    """Mean and sample standard deviation (ddof=1) of each rater's raw ratings."""
    by_rater: dict[str, list[float]] = defaultdict(list)
    for record in records:
        by_rater[record.rater].append(record.raw)
    scales: dict[str, RaterScale] = {}
    for rater, values in by_rater.items():
        n = len(values)
        mean = math.fsum(values) / n
        std: float | None = None
        if n >= 2:
            var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
            std = math.sqrt(var) if var > 0 else None
        scales[rater] = RaterScale(n=n, mean=mean, std=std)
    return scales


def with_zscores(records: Sequence[RatingRecord]) -> tuple[list[RatingRecord], list[str]]:
    """Fill in missing z-scores.

    Returns:
        The records (those with a z-score unchanged) and warnings about raters
        whose z-scores cannot be computed (fewer than 2 ratings or zero spread);
        their records keep ``z=None``.
    """
    missing = [r for r in records if r.z is None]
    if not missing:
        return list(records), []
    scales = rater_scales(records)
    warnings: list[str] = []
    for rater in sorted({r.rater for r in missing}):
        scale = scales[rater]
        if scale.std is None:
            reason = "fewer than 2 ratings" if scale.n < 2 else "all ratings equal"
            warnings.append(f"rater {rater}: no z-scores ({reason}, n={scale.n})")
    out: list[RatingRecord] = []
    for record in records:
        if record.z is None:
            scale = scales[record.rater]
            if scale.std is not None:
                record = replace(record, z=(record.raw - scale.mean) / scale.std)
        out.append(record)
    return out, warnings
