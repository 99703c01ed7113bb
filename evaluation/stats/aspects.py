"""Multi-aspect ratings (fluency, meaning, simplicity, ...): per-aspect z-scores, output means, system tables.

Each aspect is a separate set of :class:`RatingRecord` objects (``raw`` on the aspect's own scale). Released
z-scores are kept; missing ones are the WMT z of the rater over that rater's ratings *of that aspect*
(:func:`evaluation.stats.zscores.with_zscores`), since a rater's leniency differs between aspects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluation.stats.leaderboard import output_scores, system_leaderboard
from evaluation.stats.records import RatingRecord
from evaluation.stats.zscores import with_zscores

ZOrigin = Literal["released", "computed", "mixed", "none"]


@dataclass(frozen=True)
class AspectOutputMeans:
    """One output's mean raw rating and mean z-score per aspect (aspects it has no z for are absent in ``z``)."""

    raw: dict[str, float]
    z: dict[str, float]


def aspects_with_zscores(
    records_by_aspect: Mapping[str, Sequence[RatingRecord]],
) -> tuple[dict[str, list[RatingRecord]], list[str]]:
    """Fill in each aspect's missing z-scores per rater; warnings name the aspect and the rater."""
    filled: dict[str, list[RatingRecord]] = {}
    warnings: list[str] = []
    for aspect, records in records_by_aspect.items():
        filled[aspect], aspect_warnings = with_zscores(records)
        warnings.extend(f"{aspect}: {w}" for w in aspect_warnings)
    return filled, warnings


def z_origin(records: Sequence[RatingRecord], released: int) -> ZOrigin:
    """Where an aspect's z-scores come from, given how many of its records carried a released one."""
    if released == len(records) and records:
        return "released"
    if released:
        return "mixed"
    return "computed" if any(r.z is not None for r in records) else "none"


def aspect_output_means(records_by_aspect: Mapping[str, Sequence[RatingRecord]]) -> dict[str, AspectOutputMeans]:
    """Output id -> its mean raw rating and mean z per aspect (records already carry their z-scores)."""
    means: dict[str, AspectOutputMeans] = {}
    for aspect, records in records_by_aspect.items():
        for score in output_scores(records):
            entry = means.setdefault(score.output, AspectOutputMeans(raw={}, z={}))
            entry.raw[aspect] = score.raw
            if score.z is not None:
                entry.z[aspect] = score.z
    return means


def aspect_tables(
    records_by_aspect: Mapping[str, Sequence[RatingRecord]],
    *,
    scales: Mapping[str, str],
    z_origins: Mapping[str, ZOrigin],
    n_boot: int = 1000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Per aspect, in the given order: counts and the system table (mean raw and mean z with 95% bootstrap
    CIs over sources, rank and significance cluster, as the Rank & Rate leaderboard computes them).

    Returns:
        ``[{"aspect", "scale", "z": "released"|"computed"|"mixed"|"none", "counts": {"ratings", "outputs",
        "sources", "systems", "raters"}, "ranked_by", "systems": [leaderboard rows], "warnings"}]``.
    """
    tables: list[dict[str, Any]] = []
    for aspect, records in records_by_aspect.items():
        board = system_leaderboard(records, n_boot=n_boot, seed=seed)
        tables.append(
            {
                "aspect": aspect,
                "scale": scales.get(aspect),
                "z": z_origins.get(aspect, "none"),
                "counts": {
                    "ratings": len(records),
                    "outputs": len({r.output for r in records}),
                    "sources": len({r.source for r in records}),
                    "systems": len({r.system for r in records}),
                    "raters": len({r.rater for r in records}),
                },
                "ranked_by": board.ranked_by,
                "systems": board.rows,
                "warnings": [f"{aspect}: {w}" for w in board.warnings],
            }
        )
    return tables
