"""The one place the product turns a metric name into a suite metric: the command, the API and the page.

``metric_get("sari")``, ``metric_get("lens:latest")``... return a :class:`metrics.suite.Metric`; every
bad name (unknown metric, unknown variant, unknown or unusable learned version) is a ``ServiceError`` naming
the field. Trained versions of every learned kind (``metrics.learned.kinds``: LENS, REFEREE, SIERA...) enter
the suite's registry through the one provider registered here (``MetricsConfig.ready``): ``<kind>`` = the
active version, ``<kind>:latest`` = the newest succeeded one, ``<kind>:<id>`` = that version; each is stored
and shown under its concrete name ``<kind>:<id>``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from django.conf import settings

from core.errors import Conflict, ServiceError
from metrics.learned.kinds import LearnedKind, StaleComponentError, get_kind, kinds, stale_components
from metrics.models import LearnedVersion
from metrics.selectors import learned_active_version, learned_latest_version, learned_succeeded_ids
from metrics.services.learned import learned_version_components, learned_version_info
from metrics.services.scoring import learned_scorer
from metrics.suite import (
    Item,
    Metric,
    MetricError,
    Score,
    UnknownMetricError,
    create_metric,
)

PRODUCT_METRICS = ("fkgl", "bleu", "gleu", "sari", "sari:lens", "bertscore", "self-bertscore")
"""What ``all`` means in the product: one entry per family (BERTScore as F1), and every succeeded learned
version."""

ACCELERATED_SUITE_FAMILIES = frozenset({"bertscore", "self-bertscore"})
"""Suite families whose scoring runs on the ``gpu`` queue when one is configured (every learned kind does too)."""


class LearnedMetric(Metric):
    """A trained version of a learned kind as a suite metric.

    Its kind says what it reads (LENS the references too; REFEREE and SIERA the complex sentence and the
    output only), what its value is (LENS and REFEREE a z-scored rating, SIERA the probability that the
    output is simpler than its source) and how its signature reads. Components come from the kind's scorer:
    ``truncated`` (1 when an input was longer than the version reads), and LENS's ``score`` (100 * Phi(z)).
    """

    higher_is_better = True
    needs_complex = True

    def __init__(self, version: LearnedVersion) -> None:
        self.version = version
        self.kind: LearnedKind = get_kind(version.kind)
        self.needs_references = self.kind.needs_references
        self.name = f"{version.kind}:{version.pk}"

    @property
    def signature(self) -> str:
        return self.kind.signature(learned_version_info(self.version))

    @cached_property
    def scores_empty_outputs(self) -> bool:
        """Whether an empty output gets a score (the kind says, per version: the blend when all its
        components define one). Asked once per metric: scoring asks it of every empty output, and the blend
        answers by reading its checkpoint."""
        return self.kind.scores_empty_outputs(learned_version_info(self.version))

    def stale(self) -> str | None:
        """Why the version cannot score now (a blend whose components changed since it was trained: the
        message its scoring raises), or None."""
        error = stale_components(learned_version_components(self.version))
        return f"{self.name}: {error}" if error is not None else None

    def _score(self, items: Sequence[Item]) -> list[Score]:
        try:
            scored = learned_scorer(self.version).score(items)
        except StaleComponentError as exc:  # a blend whose components changed since it was trained
            raise Conflict(f"{self.name}: {exc}", field="metric") from None
        return [Score(value, parts) for value, parts in scored]


def learned_version_lookup(family: str, which: str) -> LearnedVersion:
    """The version ``family[:which]`` names: ``""``/``active`` the active one, ``latest`` the newest
    succeeded one, ``<id>`` that version; an UnknownMetricError saying why none scores."""
    label = get_kind(family).label
    if which in ("", "active"):
        version = learned_active_version(family)
        if version is None:
            raise UnknownMetricError(
                f"{family}: no {label} version is active (promote one, or use {family}:latest / {family}:<id>)"
            )
    elif which == "latest":
        version = learned_latest_version(family)
        if version is None:
            raise UnknownMetricError(f"{family}:latest: no {label} version has succeeded yet")
    elif which.isascii() and which.isdigit() and len(which) <= 18:
        version = LearnedVersion.objects.filter(pk=int(which), kind=family).first()
        if version is None:
            raise UnknownMetricError(f"{family}:{which}: no {label} version {which}")
    else:
        raise UnknownMetricError(
            f"unknown variant {which!r} of {family!r}; variants: {family}, {family}:latest, {family}:<version id>"
        )
    if version.status != LearnedVersion.Status.SUCCEEDED:
        raise UnknownMetricError(
            f"{family}:{version.pk}: {label} v{version.pk} is {version.status}; only succeeded versions score"
        )
    return version


def learned_provider(name: str, options: dict[str, Any]) -> Metric | None:
    """The suite provider of ``<kind>[:active|latest|<id>]`` for every learned kind (None for other names)."""
    family, _, which = name.partition(":")
    if family not in kinds():
        return None
    return LearnedMetric(learned_version_lookup(family, which))


def learned_metric_names() -> list[str]:
    """``<kind>:<id>`` of every succeeded version of every kind, kind by kind, newest first."""
    return [f"{family}:{pk}" for family in kinds() for pk in learned_succeeded_ids(family)]


def _options(family: str) -> dict[str, Any]:
    """Per-family options from settings (``METRIC_OPTIONS = {"bertscore": {"model": "/models/roberta-large"}}``)."""
    configured: dict[str, dict[str, Any]] = getattr(settings, "METRIC_OPTIONS", {}) or {}
    options = dict(configured.get(family, {}))
    if family in ("bertscore", "self-bertscore") and "device" not in options:
        device = os.environ.get("METRIC_DEVICE") or getattr(settings, "METRIC_DEVICE", "")
        if device:
            options["device"] = device
    return options


def metric_get(name: str, *, field: str = "metric") -> Metric:
    """The metric ``name`` names; a 400 ``ServiceError`` on ``field`` when it names none."""
    if not isinstance(name, str) or not name.strip():
        raise ServiceError("name a metric (e.g. sari, fkgl, lens:latest; 'all' for every metric)", field=field)
    spec = name.strip()
    try:
        return create_metric(spec, **_options(spec.partition(":")[0]))
    except UnknownMetricError as exc:
        message = str(exc)
        if message.startswith("unknown metric"):
            message += ", " + ", ".join(f"{family}[:latest|<version id>]" for family in kinds())
        raise ServiceError(message, field=field) from None
    except MetricError as exc:
        raise ServiceError(str(exc), field=field) from None


def metric_names(spec: str | Sequence[str], *, field: str = "metric") -> list[str]:
    """Metric names from ``"all"``, ``"sari,fkgl"`` or a list: ``all`` = the product set plus every succeeded
    learned version."""
    raw = [spec] if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for part in raw:
        for name in (p.strip() for p in part.split(",")):
            if not name:
                continue
            expanded = [*PRODUCT_METRICS, *learned_metric_names()] if name == "all" else [name]
            names.extend(n for n in expanded if n not in names)
    if not names:
        raise ServiceError("name a metric (e.g. sari, fkgl, lens:latest; 'all' for every metric)", field=field)
    return names


def metrics_get(spec: str | Sequence[str], *, field: str = "metric") -> list[Metric]:
    """:func:`metric_get` for every name of ``spec`` (see :func:`metric_names`), each once by concrete name."""
    out: list[Metric] = []
    for name in metric_names(spec, field=field):
        metric = metric_get(name, field=field)
        if all(m.name != metric.name for m in out):
            out.append(metric)
    return out


def metric_stale(name: str) -> str | None:
    """Why the metric ``name`` cannot score new outputs now (a blend whose components changed since it was
    trained), or None: it can, or it is no learned version (one that no longer exists scores nothing new
    either, which its lookup says where it is scored)."""
    if name.partition(":")[0] not in kinds():
        return None
    try:
        metric = metric_get(name)
    except ServiceError:
        return None
    return metric.stale() if isinstance(metric, LearnedMetric) else None


def metrics_that_score(metrics: Sequence[Metric], *, every: bool, field: str = "metric",
                       ) -> tuple[list[Metric], dict[str, str]]:
    """``metrics`` without the learned versions that cannot score now (a blend whose components changed since
    it was trained), and why each was left out. ``every``: they came from ``all``, so they are left out; named,
    they are refused (a 409 naming them), since a run that fails on them halfway helps no one."""
    stale = {m.name: why for m in metrics if isinstance(m, LearnedMetric) and (why := m.stale()) is not None}
    if stale and not every:
        raise Conflict("; ".join(stale.values()), field=field)
    return [m for m in metrics if m.name not in stale], stale


def metric_is_accelerated(metric: Metric) -> bool:
    family = metric.name.partition(":")[0]
    return family in ACCELERATED_SUITE_FAMILIES or family in kinds()

