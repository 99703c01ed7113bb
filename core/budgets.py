"""Work budgets: the one bound of every request parameter that sizes work, checked before any work starts.

Pure Python (no Django), so a page, an API view, a management command and a service all call the same
function and give the same answer: a ``ServiceError`` (400) that names the field and the bound. Each
parameter has one rule here; a caller never re-states a limit.

How many jobs a user or the whole platform may have queued and running is a different budget (it needs the
database): ``core.services.job_budget_check``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from core.errors import ServiceError

# Bootstrap resamples of a statistic (leaderboard CIs, alpha, metric correlations, paired tests). The
# default stays 1000; each resample costs a pass over every rating, so a request may ask for at most 2000.
N_BOOT_DEFAULT = 1000
N_BOOT_MAX = 2000

# The perturbation testbed: each (magnitude, perturbation, sampled source, metric) is one scored text.
MAGNITUDES_MIN = 2
MAGNITUDES_MAX = 21  # 0,5,...,100
MAGNITUDES_TEXT_MAX = 400  # characters of the comma list as typed
TESTBED_SAMPLE_MAX = 2000  # sources
TESTBED_SCORES_MAX = 500_000  # sample x magnitudes x metrics

# Metric names in one request (a comma list or ``all`` expanded), and systems left out of one comparison.
METRICS_MAX = 30
METRIC_NAME_MAX = 80  # characters of one name (``lens:<id>``...)
EXCLUDED_SYSTEMS_MAX = 50


def bound_int(value: int, *, field: str, low: int, high: int) -> int:
    """``value`` when ``low <= value <= high``; otherwise a 400 naming ``field`` and the bound."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        shown = repr(value) if not isinstance(value, int) else (str(value) if abs(value) < 10**12 else "too large")
        raise ServiceError(f"{field} must be an integer from {low} to {high} (got {shown})", field=field,
                           reason=f"Give a whole number from {low} to {high} (got {shown}).")
    return value


def n_boot_check(value: int, *, field: str = "n_boot") -> int:
    """Bootstrap resamples: 0 (no intervals) to ``N_BOOT_MAX``."""
    return bound_int(value, field=field, low=0, high=N_BOOT_MAX)


def n_boot_param(raw: str | None, *, field: str = "n_boot") -> int:
    """``n_boot`` as written in a query string (``None``: the default)."""
    if raw is None or raw == "":
        return N_BOOT_DEFAULT
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
        raise ServiceError(f"{field} must be an integer from 0 to {N_BOOT_MAX} (got {raw[:20]!r})", field=field)
    return n_boot_check(int(raw), field=field)


def magnitudes_parse(text: str, *, field: str = "magnitudes") -> list[float]:
    """``"0,10,...,100"`` (or any comma list of percentages) -> sorted distinct magnitudes.

    ``...`` continues the step of the first two values up to the last. The count is known, and bounded,
    before any list is built: ``0,0.0001,...,100`` is refused without making a million floats.
    """
    if len(text) > MAGNITUDES_TEXT_MAX:
        raise ServiceError(f"{field}: at most {MAGNITUDES_TEXT_MAX} characters (got {len(text)})", field=field,
                           reason=f"Write at most {MAGNITUDES_TEXT_MAX} characters (got {len(text)}).")
    usage = f"{field} {text[:60]!r}: give percentages like 0,10,...,100 or 0,25,50"
    usage_reason = f"Give percentages like 0,10,...,100 or 0,25,50 (got {text[:60]!r})."
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        if "..." in parts:
            at = parts.index("...")
            if at != 2 or len(parts) != 4:
                raise ValueError
            first, second, last = float(parts[0]), float(parts[1]), float(parts[3])
            step = second - first
            if not (math.isfinite(first) and math.isfinite(last) and math.isfinite(step)) or step <= 0:
                raise ValueError
            count = math.floor((last - first) / step + 0.5) + 1
            if count > MAGNITUDES_MAX:
                many = count if count < 10**9 else "too many"
                raise ServiceError(f"{field} {text[:60]!r} gives {many} magnitudes; at most {MAGNITUDES_MAX}",
                                   field=field, reason=f"This gives {many} magnitudes; at most {MAGNITUDES_MAX}: "
                                                       "take a larger step.")
            values = [first + i * step for i in range(max(count, 0))]
        else:
            if len(parts) > MAGNITUDES_MAX:
                raise ServiceError(f"{field}: at most {MAGNITUDES_MAX} magnitudes (got {len(parts)})", field=field,
                                   reason=f"Give at most {MAGNITUDES_MAX} magnitudes (got {len(parts)}).")
            values = [float(p) for p in parts]
    except (ValueError, IndexError, OverflowError):
        raise ServiceError(usage, field=field, reason=usage_reason) from None
    distinct = sorted(set(values))
    if len(distinct) < MAGNITUDES_MIN or any(not 0 <= v <= 100 for v in distinct):
        raise ServiceError(f"{field} {text[:60]!r}: at least {MAGNITUDES_MIN} values, each from 0 to 100",
                           field=field, reason=f"Give at least {MAGNITUDES_MIN} values, each from 0 to 100.")
    return distinct


def magnitudes_check(values: Sequence[float], *, field: str = "magnitudes") -> list[float]:
    """Magnitudes given as numbers (a stored job's parameters): the same bounds as :func:`magnitudes_parse`."""
    if len(values) > MAGNITUDES_MAX:
        raise ServiceError(f"{field}: at most {MAGNITUDES_MAX} magnitudes (got {len(values)})", field=field)
    distinct = sorted(set(values))
    if len(distinct) < MAGNITUDES_MIN or any(not (math.isfinite(v) and 0 <= v <= 100) for v in distinct):
        raise ServiceError(f"{field}: at least {MAGNITUDES_MIN} values, each from 0 to 100", field=field)
    return distinct


def sample_check(value: int | None, *, field: str = "sample") -> int | None:
    """Testbed sources to sample: 1 to ``TESTBED_SAMPLE_MAX`` (``None``: every usable source, counted
    against the same bound by :func:`testbed_work_check` once known)."""
    if value is None:
        return None
    return bound_int(value, field=field, low=1, high=TESTBED_SAMPLE_MAX)


SEED_MAX = 2**32 - 1  # what numpy's and Python's generators take as a seed everywhere


def seed_check(value: int, *, field: str = "seed") -> int:
    """A random seed: 0 to ``SEED_MAX`` (a negative or larger one fails inside the worker, not the request)."""
    return bound_int(value, field=field, low=0, high=SEED_MAX)


def metric_names_check(names: Sequence[str], *, field: str = "metrics") -> list[str]:
    """A list of metric names: at most ``METRICS_MAX`` names of at most ``METRIC_NAME_MAX`` characters."""
    if len(names) > METRICS_MAX:
        raise ServiceError(f"{field}: at most {METRICS_MAX} metric names (got {len(names)})", field=field,
                           reason=f"Name at most {METRICS_MAX} metrics (got {len(names)}).")
    long = [n for n in names if len(n) > METRIC_NAME_MAX]
    if long:
        raise ServiceError(f"{field}: a metric name has at most {METRIC_NAME_MAX} characters "
                           f"({long[0][:20]!r}... has {len(long[0])})", field=field)
    return list(names)


def excluded_systems_check(names: Sequence[str], *, field: str = "exclude_system") -> list[str]:
    if len(names) > EXCLUDED_SYSTEMS_MAX:
        raise ServiceError(f"{field}: at most {EXCLUDED_SYSTEMS_MAX} systems (got {len(names)})", field=field)
    return list(names)


def work_check(factors: Sequence[tuple[int, str]], *, high: int, what: str, field: str, fewer: str) -> None:
    """The work a request asks for, the product of its ``factors`` (count, plural noun), within ``high``; else a
    400 on ``field`` that shows the product, the bound and what to lower (``fewer``)."""
    work = math.prod(count for count, _ in factors)
    if work > high:
        raise ServiceError(
            f"{field}: {' x '.join(f'{count} {noun}' for count, noun in factors)} = {work} {what}; at most {high}: "
            f"{fewer}", field=field,
            reason=f"{' × '.join(f'{count:,} {noun}' for count, noun in factors)} = {work:,} {what}; at most "
                   f"{high:,}: choose {fewer}.")


def testbed_work_check(*, sources: int, magnitudes: int, metrics: int) -> None:
    """A testbed run's size: sources within ``TESTBED_SAMPLE_MAX`` and sources x magnitudes x metrics (texts
    scored per perturbation) within ``TESTBED_SCORES_MAX``."""
    if sources > TESTBED_SAMPLE_MAX:
        raise ServiceError(f"sample: at most {TESTBED_SAMPLE_MAX} sources per run (this run has {sources}); "
                           f"give a smaller sample or rows", field="sample",
                           reason=f"At most {TESTBED_SAMPLE_MAX} sources per run (this run has {sources}): give a "
                                  "smaller sample or fewer rows.")
    work_check(((sources, "sources"), (magnitudes, "magnitudes"), (metrics, "metrics")), high=TESTBED_SCORES_MAX,
               what="scores per perturbation", field="sample", fewer="fewer sources, magnitudes or metrics")



# Allocation simulations of a campaign (issue 45: manage.py simulate_allocation, the research page, the API).
ALLOCATION_SEEDS_MAX = 200  # seeds per policy: the tables use 50
ALLOCATION_POLICY_TEXT_MAX = 400  # characters of the comma list of policy names as typed
ALLOCATION_WORK_MAX = 40_000_000  # policies x seeds x ratings replayed; every policy's 50 seeds on
# SimpEval_past (13 x 50 x 12,000 = 7.8 million) fit five times; about half a second of a worker a million


def allocation_seeds_check(value: int, *, field: str = "seeds") -> int:
    """Seeds per simulated policy: 1 to ``ALLOCATION_SEEDS_MAX``."""
    return bound_int(value, field=field, low=1, high=ALLOCATION_SEEDS_MAX)


def allocation_work_check(*, policies: int, seeds: int, ratings: int) -> None:
    """Policies x seeds x ratings within ``ALLOCATION_WORK_MAX`` (400 on ``seeds``, the factor most often set)."""
    work_check(((policies, "policies"), (seeds, "seeds"), (ratings, "ratings")), high=ALLOCATION_WORK_MAX,
               what="ratings replayed", field="seeds", fewer="fewer seeds or policies, or a smaller budget")


# Line-aligned reference files given with one import (ASSET has ten; SimpEval one) or one corpus.
REFERENCE_FILES_MAX = 20


def reference_files_check(count: int, *, field: str = "references") -> int:
    """Reference files of one import or corpus: 1 to ``REFERENCE_FILES_MAX``."""
    if count < 1:
        raise ServiceError(f"{field}: give at least one reference file, line-aligned with the sources", field=field)
    if count > REFERENCE_FILES_MAX:
        raise ServiceError(f"{field}: at most {REFERENCE_FILES_MAX} reference files (got {count})", field=field)
    return count


# CPU threads a command may ask torch for (``--threads``), and items per model call of a scoring command.
THREADS_MAX = 256
SCORE_BATCH_MAX = 1024

# What one learned-metric version trains on: rated campaigns and named corpora (the kind's own options are
# bounded by their rules, metrics.learned.config).
TRAINING_CAMPAIGNS_MAX = 50
TRAINING_CORPORA_MAX = 20


def training_sources_check(*, campaigns: Sequence[object], corpora: Sequence[object] = ()) -> None:
    """The campaigns (slugs or rows) and corpora a version trains on: at most ``TRAINING_CAMPAIGNS_MAX`` and
    ``TRAINING_CORPORA_MAX``; checked before any of them is looked up."""
    if len(campaigns) > TRAINING_CAMPAIGNS_MAX:
        raise ServiceError(f"campaigns: at most {TRAINING_CAMPAIGNS_MAX} campaigns per version "
                           f"(got {len(campaigns)})", field="campaigns")
    if len(corpora) > TRAINING_CORPORA_MAX:
        raise ServiceError(f"corpora: at most {TRAINING_CORPORA_MAX} corpora per version (got {len(corpora)})",
                           field="corpus")
