"""The study planner: how many sources and raters a study needs for a target, by simulation from a pilot.

The pilot is a :class:`~evaluation.allocation.study.Study`: a campaign's ratings so far, or a similar
released study (:mod:`evaluation.allocation.released`). Its sources stand for the population of sources
and its rater screens (one rater slot's ratings of one source's outputs) for the population of raters:
a simulated study of ``N`` sources x ``R`` raters draws ``N`` sources with replacement, and for each of
them ``R`` of its screens with replacement, and reads the ratings they hold (z-scores, each rating
standardised by its rater over the whole pilot as the leaderboard does, for the ranking; raw 0-100
ratings for agreement). Targets:

* ``top_k``: the top ``k`` systems of the simulated study (by the leaderboard's rule: mean per output,
  then per system) are the pilot's top ``k``, as a set (for ``k = 1``: the right best system), with
  probability at least ``p`` (the share of ``sims`` simulated studies that get it right);
* ``alpha``: Krippendorff's interval alpha of the raw ratings (the dashboard's agreement) has a 95%
  interval narrower than ``w``: the 2.5-97.5% spread of alpha over the simulated studies of that size.

The planner tries every size of a bounded grid (``sources`` x ``raters``) and recommends the one that
meets the target with the fewest ratings (``N x R x`` the pilot's mean outputs per source); with none,
it says so and gives the table. The pilot's own order is the truth the simulations are scored against,
so a pilot too small to order its systems plans for its own noise: use a pilot of a few dozen sources,
or a released study of the same kind. Every size that sizes work is bounded (:func:`check_plan`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from evaluation.allocation.study import Study, system_means
from evaluation.stats.agreement import alpha_interval
from evaluation.stats.bootstrap import FloatArray

Target = Literal["top_k", "alpha"]
TARGETS: tuple[str, ...] = ("top_k", "alpha")
SOURCES_MAX = 2000
RATERS_MAX = 20
SIZES_MAX = 12  # candidate values per dimension
SIMS_DEFAULT = 200
SIMS_MAX = 1000
WORK_MAX = 150_000_000  # simulated cells (sims x sources x raters x systems) over the whole grid
STUDIES_MAX = 30_000  # simulated studies (sims x sizes): alpha is computed once per study
CHUNK_CELLS = 4_000_000  # simulated cells held at once
DEFAULT_SOURCES = (25, 50, 100, 200, 400, 800)
DEFAULT_RATERS = (1, 2, 3, 5)


class PlanError(ValueError):
    """Bad planner input; ``field`` names the parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class PlanRequest:
    target: str = "top_k"
    k: int = 1
    p: float = 0.9
    w: float = 0.1
    sources: tuple[int, ...] = DEFAULT_SOURCES
    raters: tuple[int, ...] = DEFAULT_RATERS
    sims: int = SIMS_DEFAULT
    seed: int = 0


@dataclass
class Plan:
    request: PlanRequest
    pilot: str
    pilot_sources: int
    pilot_systems: int
    outputs_per_source: float
    truth_top: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per size: sources, raters, ratings, value, met
    recommended: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        r = self.request
        return {
            "target": r.target, "k": r.k, "p": r.p, "w": r.w, "sims": r.sims, "seed": r.seed,
            "pilot": self.pilot, "pilot_sources": self.pilot_sources, "pilot_systems": self.pilot_systems,
            "outputs_per_source": round(self.outputs_per_source, 2), "truth_top": self.truth_top,
            "recommended": self.recommended, "rows": self.rows,
        }


def check_plan(request: PlanRequest, *, systems: int | None = None) -> PlanRequest:
    """The request, or :class:`PlanError` naming the first bad field."""
    if request.target not in TARGETS:
        raise PlanError("target", f"must be one of {', '.join(TARGETS)} (got {request.target!r})")
    if request.target == "top_k":
        top = SOURCES_MAX if systems is None else systems - 1
        if not isinstance(request.k, int) or not 1 <= request.k <= max(top, 1):
            raise PlanError("k", f"must be an integer from 1 to {max(top, 1)} (fewer than the systems)")
        if not 0.5 <= request.p < 1:
            raise PlanError("p", f"must be a probability from 0.5 to below 1 (got {request.p})")
    elif not 0 < request.w <= 2:
        raise PlanError("w", f"must be an interval width above 0 and at most 2 (got {request.w})")
    for name, values, high, low in (("sources", request.sources, SOURCES_MAX, 2),
                                    ("raters", request.raters, RATERS_MAX, 1)):
        if not values:
            raise PlanError(name, "give at least one size")
        if len(values) > SIZES_MAX:
            raise PlanError(name, f"at most {SIZES_MAX} sizes (got {len(values)})")
        bad = [v for v in values if not isinstance(v, int) or not low <= v <= high]
        if bad:
            raise PlanError(name, f"each size must be an integer from {low} to {high} (got {bad[0]!r})")
    if not isinstance(request.sims, int) or not 20 <= request.sims <= SIMS_MAX:
        raise PlanError("sims", f"must be an integer from 20 to {SIMS_MAX} (got {request.sims!r})")
    studies = request.sims * len(request.sources) * len(request.raters)
    if studies > STUDIES_MAX:
        raise PlanError("sims", f"{request.sims} simulations of {len(request.sources) * len(request.raters)} sizes "
                                f"are {studies:,} simulated studies, above the bound {STUDIES_MAX:,}")
    if systems is not None:
        work = request.sims * sum(request.sources) * sum(request.raters) * systems
        if work > WORK_MAX:
            raise PlanError("sims", f"{request.sims} simulations of these sizes are {work:,} simulated ratings, "
                                    f"above the bound {WORK_MAX:,}: fewer simulations or smaller sizes")
    return request


def parse_sizes(text: str, *, field: str) -> tuple[int, ...]:
    """``"25, 50, 100"`` -> (25, 50, 100), sorted, distinct; :class:`PlanError` naming ``field`` otherwise."""
    parts = [p.strip() for p in str(text).replace(";", ",").split(",") if p.strip()]
    if len(parts) > SIZES_MAX:
        raise PlanError(field, f"at most {SIZES_MAX} sizes (got {len(parts)})")
    values = []
    for part in parts:
        if not (part.isascii() and part.isdigit()) or len(part) > 6:
            raise PlanError(field, f"sizes are whole numbers separated by commas (got {part[:20]!r})")
        values.append(int(part))
    if not values:
        raise PlanError(field, "give at least one size")
    return tuple(sorted(set(values)))


def _top_set(means: FloatArray, k: int) -> frozenset[int]:
    filled = np.where(np.isfinite(means), means, -np.inf)
    return frozenset(np.argsort(-filled, kind="stable")[:k].tolist())


def _top_hits(zs: FloatArray, k: int, truth_top: frozenset[int]) -> list[float]:
    """Per simulated study (``zs``: ``(sims, sources, raters, systems)``), 1.0 when its top ``k`` is the truth's."""
    has = np.isfinite(zs)
    with np.errstate(invalid="ignore", divide="ignore"):
        om = np.where(has.any(axis=2), np.where(has, zs, 0.0).sum(axis=2) / has.sum(axis=2), np.nan)  # (b, n, K)
        seen = np.isfinite(om)
        means = np.where(seen.any(axis=1), np.where(seen, om, 0.0).sum(axis=1) / seen.sum(axis=1), -np.inf)
    top = np.argsort(-means, axis=1, kind="stable")[:, :k]
    return [float(frozenset(row.tolist()) == truth_top) for row in top]


def plan(pilot: Study, request: PlanRequest) -> Plan:
    """Simulate every size of the request's grid from ``pilot`` and recommend the cheapest that meets the
    target (see the module's docstring)."""
    n_sources, _, n_systems = pilot.shape
    check_plan(request, systems=n_systems)
    present = pilot.present
    if n_sources < 2 or not present.any():
        raise PlanError("pilot", f"{pilot.name} has too few ratings to plan from (at least 2 sources)")
    z = pilot.zscores(present) if pilot.recompute_z else np.where(present, pilot.z, np.nan)
    z = np.where(np.isfinite(z), z, np.where(present, 0.0, np.nan))  # a rater with one rating: z 0
    raw = pilot.raw
    counts = present.any(axis=2).sum(axis=1)  # screens per source
    width = max(int(counts.max()), 1)
    screens = np.zeros((n_sources, width), dtype=np.int64)  # each source's screens, first ``counts`` used
    for s in range(n_sources):
        found = np.flatnonzero(present[s].any(axis=1))
        screens[s, : len(found)] = found
    usable = counts > 0
    truth = system_means(pilot.output_means(present))
    k = request.k if request.target == "top_k" else 1
    truth_top = _top_set(truth, k)
    outputs = float(present.any(axis=1).sum(axis=1)[usable].mean())
    rng = np.random.default_rng(request.seed)
    pool = np.flatnonzero(usable)
    out = Plan(request=request, pilot=pilot.name, pilot_sources=int(usable.sum()), pilot_systems=n_systems,
               outputs_per_source=outputs,
               truth_top=[pilot.systems[i] for i in sorted(truth_top, key=lambda i: -truth[i])])
    for n in request.sources:
        for r in request.raters:
            values: list[float] = []
            chunk = max(1, CHUNK_CELLS // (n * r * n_systems))
            for first in range(0, request.sims, chunk):
                b = min(chunk, request.sims - first)
                src = pool[rng.integers(0, len(pool), size=(b, n))]  # (b, n)
                pick = (rng.random((b, n, r)) * counts[src][:, :, None]).astype(np.int64)
                slots = screens[src[:, :, None], pick]  # (b, n, r)
                cells = (src[:, :, None], slots)
                if request.target == "top_k":
                    values += _top_hits(z[cells], k, truth_top)
                else:
                    ratings = raw[cells]  # (b, n, r, K): per simulation raters x units = r x (n*K)
                    for one in ratings:
                        matrix = one.transpose(1, 0, 2).reshape(r, n * n_systems)
                        values.append(alpha_interval(matrix) if r >= 2 else float("nan"))
            row: dict[str, Any] = {"sources": n, "raters": r, "ratings": round(n * r * outputs)}
            if request.target == "top_k":
                row["probability"] = round(float(np.mean(values)), 4)
                row["met"] = row["probability"] >= request.p
            else:
                arr = np.asarray(values)
                if np.isfinite(arr).mean() < 0.95:
                    row.update(alpha=None, width=None, met=False)
                else:
                    low, mid, high = np.nanquantile(arr, [0.025, 0.5, 0.975])
                    row.update(alpha=round(float(mid), 4), width=round(float(high - low), 4),
                               met=bool(high - low < request.w))
            out.rows.append(row)
    met = [row for row in out.rows if row["met"]]
    if met:
        out.recommended = min(met, key=lambda row: (row["ratings"], row["raters"]))
    return out

