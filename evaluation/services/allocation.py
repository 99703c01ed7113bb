"""A live campaign's collected ratings as the allocation simulator's :class:`~evaluation.allocation.Study`.

The thin Django side of :mod:`evaluation.allocation`: it reads the judgements that count
(:func:`evaluation.selectors.campaign_judgement_rows`, the rows the report's leaderboard reads) and lays them
out as the grid ``(source, rater slot, system)`` the pure simulator replays. A *screen* there is one
submitted annotation: the ``k``-th annotation of a source (in the order they were made, by id) is rater
slot ``k`` of that source, so a screen that showed only some outputs stays one screen. Raters are the
annotations' rater keys (pseudonyms; ``"<import batch>:<slot>"`` for an imported slot).

z-scores follow the platform's rule (:func:`evaluation.stats.zscores.with_zscores`): a campaign whose
judgements all carry a released z-score (an imported SimpEval file) keeps them; otherwise they are
recomputed per named rater from what that rater has rated so far, as the simulator does for SimpDA_2022.
With every cell revealed, the simulator's statistics are then the campaign's leaderboard.

Automatic metric scores live in the ``metrics`` app, which sits above this one: its adapter
(:func:`metrics.services.allocation.campaign_allocation_study`) reads the stored scores and passes them in
as ``metric_scores``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from annotation.models import Campaign
from core.errors import ServiceError
from evaluation.allocation import Study
from evaluation.selectors import JudgementRow, campaign_judgement_rows


def rows_study(
    rows: Sequence[JudgementRow], *, name: str,
    metric_scores: Mapping[str, Mapping[int, float]] | None = None,
) -> Study:
    """The grid of ``rows`` (see the module's docstring); ``metric_scores`` is ``{metric: {output pk:
    score}}``, higher is better (a metric with no score for a cell's output leaves NaN there)."""
    if not rows:
        raise ServiceError(f"campaign {name!r} has no submitted ratings to simulate", field="campaign")
    recompute = any(row.z_score is None for row in rows)
    sources = list(dict.fromkeys(row.source for row in rows))  # the judgement order: source order
    systems = sorted({row.system for row in rows})
    raters = list(dict.fromkeys(row.rater for row in rows))
    src_ix = {s: i for i, s in enumerate(sources)}
    sys_ix = {s: i for i, s in enumerate(systems)}
    rater_ix = {r: i for i, r in enumerate(raters)}
    per_source: dict[str, set[int]] = {}
    for row in rows:
        per_source.setdefault(row.source, set()).add(row.annotation_id)
    slot_of = {ann: k for annotations in per_source.values() for k, ann in enumerate(sorted(annotations))}
    n_slots = max(len(annotations) for annotations in per_source.values())
    shape = (len(sources), n_slots, len(systems))
    raw = np.full(shape, np.nan)
    z = np.full(shape, np.nan)
    rater = np.full(shape, -1, dtype=np.int64)
    outputs = [["" for _ in systems] for _ in sources]
    output_pk = np.full((len(sources), len(systems)), -1, dtype=np.int64)
    for row in rows:
        s, slot, k = src_ix[row.source], slot_of[row.annotation_id], sys_ix[row.system]
        outputs[s][k] = str(row.output_id)
        output_pk[s, k] = row.output_id
        raw[s, slot, k] = row.rating
        z[s, slot, k] = np.nan if row.z_score is None else row.z_score
        rater[s, slot, k] = rater_ix[row.rater]
    names = list(metric_scores or {})
    grid: np.ndarray | None = None
    if names:
        grid = np.full((len(names), len(sources), len(systems)), np.nan)
        for m, metric in enumerate(names):
            scores = (metric_scores or {})[metric]
            for (s, k), pk in np.ndenumerate(output_pk):
                value = scores.get(int(pk)) if pk >= 0 else None
                if value is not None and np.isfinite(value):
                    grid[m, s, k] = value
    return Study(
        name=name, sources=sources, systems=systems, raw=raw, z=z, rater=rater, raters=raters, outputs=outputs,
        recompute_z=recompute, metric_scores=grid, metric_names=names,
    )


def campaign_study(campaign: Campaign, *, metric_scores: Mapping[str, Mapping[int, float]] | None = None) -> Study:
    """The campaign's counting ratings as a :class:`Study` (sources x rater slots x systems), named by its
    slug; ``metric_scores`` as in :func:`rows_study`. A campaign with no submitted rating is refused
    (``ServiceError`` on ``campaign``)."""
    return rows_study(campaign_judgement_rows(campaign), name=campaign.slug, metric_scores=metric_scores)
