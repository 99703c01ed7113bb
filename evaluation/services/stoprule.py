"""The dashboard's stop rule and the study planner for a campaign: the thin Django side of
:mod:`evaluation.allocation.stoprule` and :mod:`evaluation.allocation.planner`.

:func:`campaign_settledness` is the one function the dashboard panel ("How settled is the ranking") and the
API answer from: the campaign's counting ratings as a :class:`~evaluation.allocation.Study`
(:func:`evaluation.services.allocation.campaign_study`) through the pure stop rule, cached like the report
(a versioned key on :func:`evaluation.selectors.campaign_report_fingerprint`, so a new or reopened rating
gives a new key; ``live=True`` reuses one built in the last ``SETTLED_LIVE_SECONDS``). A campaign run with
uniform allocation (its ``allocation`` setting says ``uniform``) reports 0 ratings saved by definition;
otherwise uniform allocation is modelled over all the campaign's sources, ``ratings_per_output`` raters each.

:func:`study_plan` runs the planner from a pilot: a campaign's ratings or a released study read from
``SIMPEVAL_DATA_DIR``. Its work is bounded (``WORK_MAX`` and ``STUDIES_MAX`` of the planner: under 5 s on
SimpEval_past), so it runs in the request, inside ``core.heavy.heavy_gate`` like the other heavy reads.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache

from annotation.models import Campaign
from annotation.selectors import CampaignPurpose, campaign_get_visible
from core.budgets import seed_check
from core.errors import Conflict, ServiceError
from core.heavy import heavy_gate
from evaluation.selectors import campaign_report_fingerprint

if TYPE_CHECKING:
    from evaluation.allocation.planner import PlanRequest
    from evaluation.allocation.study import Study

SETTLED_CACHE_SECONDS = 24 * 3600
SETTLED_LIVE_SECONDS = 15
SETTLED_SEED = 0
SETTLED_N_BOOT = 200
# The pure core (numpy, scipy) is imported inside the functions: the URL configuration imports this module,
# and start-up stays light (tests/test_startup_imports.py).


def campaign_is_uniform(campaign: Campaign) -> bool:
    """Whether the campaign hands out work uniformly (its ``allocation`` setting)."""
    return bool(campaign.allocation == Campaign.Allocation.UNIFORM)


def campaign_design(campaign: Campaign) -> tuple[int, int]:
    """The sources uniform allocation would spread over (the campaign's, quality-control copies and tutorial
    left out) and the ratings wanted per output."""
    sources = campaign.sources.filter(is_tutorial=False, repeat_of__isnull=True).count()
    return sources, int(campaign.ratings_per_output or 1)


def campaign_settledness_build(*, campaign: Campaign, fingerprint: str = "") -> dict[str, Any]:
    """The stop rule's figures on the campaign's ratings now (``ratings: 0`` and no pairs before any)."""
    from evaluation.allocation.stoprule import settledness
    from evaluation.services.allocation import campaign_study

    try:
        study = campaign_study(campaign)
    except ServiceError:
        study = None
    if study is None:
        return {"campaign": campaign.slug, "fingerprint": fingerprint, "ratings": 0, "pairs": [], "order": [],
                "adjacent_pairs": 0, "settled_pairs": 0, "tau_expected": None,
                "ratings_needed_top1": None, "ratings_needed_tau": None, "ratings_saved": None,
                "uniform_ratings": None, "expected_discordant": None, "near_ties": 0,
                "uniform": campaign_is_uniform(campaign), "n_boot": SETTLED_N_BOOT, "seed": SETTLED_SEED,
                "level": 0.95}
    population, slots = campaign_design(campaign)
    figures = settledness(study, n_boot=SETTLED_N_BOOT, seed=SETTLED_SEED, uniform=campaign_is_uniform(campaign),
                          population=max(population, study.shape[0]), slots=max(slots, study.shape[1]))
    return {"campaign": campaign.slug, "fingerprint": fingerprint, "population": population, **figures.as_dict()}


def campaign_settledness(*, campaign: Campaign, live: bool = False) -> dict[str, Any]:
    """The stop rule's figures, from the cache while the campaign's ratings are unchanged (see the module)."""
    fingerprint = campaign_report_fingerprint(campaign=campaign)
    population, slots = campaign_design(campaign)
    setting = f"{campaign.pk}:{campaign_is_uniform(campaign)}:{population}:{slots}"
    key = f"evaluation:settled:{setting}:{fingerprint}"
    found: dict[str, Any] | None = cache.get(key)
    if found is not None:
        return found
    # live: figures of the last few seconds under the same setting (new ratings may be missing from them; a
    # switch of the allocation or of the design is not)
    latest_key = f"evaluation:settled:{setting}:latest"
    if live:
        latest: tuple[float, dict[str, Any]] | None = cache.get(latest_key)
        if latest is not None and time.time() - latest[0] < SETTLED_LIVE_SECONDS:
            # figures of fewer ratings than there are now: the page says so and asks again once they expire
            return {**latest[1], "stale": True, "fresh_in": SETTLED_LIVE_SECONDS}
    figures = campaign_settledness_build(campaign=campaign, fingerprint=fingerprint)
    cache.set(key, figures, SETTLED_CACHE_SECONDS)
    cache.set(latest_key, (time.time(), figures), SETTLED_LIVE_SECONDS)
    return figures


def released_pilot(name: str) -> Study:
    """Released study ``name`` (``past``, ``2022``, ``simpda``) from ``SIMPEVAL_DATA_DIR``."""
    from evaluation.allocation.released import RELEASED, released_study

    if name not in RELEASED:
        raise ServiceError(f"pilot: unknown released study {name!r}; known: {', '.join(RELEASED)}", field="pilot")
    try:
        return released_study(name, Path(settings.SIMPEVAL_DATA_DIR))
    except FileNotFoundError as exc:
        raise Conflict(f"pilot: {RELEASED[name]} is not under SIMPEVAL_DATA_DIR ({exc.filename})",
                       field="pilot") from exc


def plan_request_check(request: PlanRequest, *, systems: int | None = None) -> PlanRequest:
    """The planner's checks, as a ``ServiceError`` (400) naming the field."""
    from evaluation.allocation.planner import PlanError, check_plan

    try:
        return check_plan(request, systems=systems)
    except PlanError as exc:
        raise ServiceError(str(exc), field=exc.field, reason=exc.message) from exc


def study_plan(*, pilot: Study, request: PlanRequest) -> dict[str, Any]:
    """The planner's answer for ``request`` from ``pilot`` (a campaign's study or a released one)."""
    from evaluation.allocation.planner import PlanError, plan

    plan_request_check(request, systems=pilot.shape[2])
    with heavy_gate():
        try:
            return plan(pilot, request).as_dict()
        except PlanError as exc:
            raise ServiceError(str(exc), field=exc.field, reason=exc.message) from exc


def _number(data: Mapping[str, Any], name: str, kind: type, default: Any) -> Any:
    value = data.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise ServiceError(f"{name} must be a number (got {value!r})", field=name, reason="Give a number.")
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise ServiceError(f"{name} must be a number (got {str(value)[:20]!r})", field=name,
                           reason="Give a number.") from None
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ServiceError(f"{name} must be a whole number (got {value!r})", field=name,
                           reason="Give a whole number.")
    return number


def _sizes(data: Mapping[str, Any], name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    from evaluation.allocation.planner import SIZES_MAX, PlanError, parse_sizes

    value = data.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, list | tuple):
        if len(value) > SIZES_MAX or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ServiceError(f"{name} must be a list of at most {SIZES_MAX} whole numbers", field=name,
                               reason=f"Give at most {SIZES_MAX} whole numbers.")
        value = ",".join(str(v) for v in value)
    try:
        return parse_sizes(str(value)[:200], field=name)
    except PlanError as exc:
        raise ServiceError(str(exc), field=exc.field, reason=exc.message) from exc


def plan_request_parse(data: Mapping[str, Any]) -> PlanRequest:
    """A :class:`PlanRequest` from the page's form or the API's JSON (the same names: target, k, p, w,
    sources, raters, sims, seed; sizes as a list or a comma list), checked; ``ServiceError`` naming the
    field."""
    from evaluation.allocation.planner import PlanRequest

    default = PlanRequest()
    target = str(data.get("target") or default.target)
    request = PlanRequest(
        target=target, k=_number(data, "k", int, default.k), p=_number(data, "p", float, default.p),
        w=_number(data, "w", float, default.w), sources=_sizes(data, "sources", default.sources),
        raters=_sizes(data, "raters", default.raters), sims=_number(data, "sims", int, default.sims),
        seed=_number(data, "seed", int, default.seed),
    )
    seed_check(request.seed)
    return plan_request_check(request)


def planner_pilot(*, user: Any, campaign: str = "", dataset: str = "") -> Study:
    """The planner's pilot: a campaign the user manages (by slug) or a released study (by name), exactly
    one of them; ``ServiceError`` on ``pilot`` otherwise."""
    campaign, dataset = (campaign or "").strip(), (dataset or "").strip()
    if bool(campaign) == bool(dataset):
        raise ServiceError("pilot: give either a campaign or a released dataset, not both or neither",
                           field="pilot", reason="Choose a campaign or a released dataset as the pilot.")
    if dataset:
        return released_pilot(dataset)
    from evaluation.services.allocation import campaign_study

    found = campaign_get_visible(user=user, slug=campaign[:100], purpose=CampaignPurpose.MANAGE)
    try:
        return campaign_study(found)
    except ServiceError as exc:
        raise ServiceError(f"pilot: {exc.message}", field="pilot", reason=exc.reason) from exc


def planner_defaults() -> dict[str, Any]:
    """The planner's default sizes and the released studies it can read, for the page's form."""
    from evaluation.allocation.planner import PlanRequest
    from evaluation.allocation.released import RELEASED

    default = PlanRequest()
    return {"sources": default.sources, "raters": default.raters, "sims": default.sims,
            "released": dict(RELEASED)}
