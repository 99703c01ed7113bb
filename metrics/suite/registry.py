"""Name -> metric class registry (COMET-style) with run-time providers.

``create_metric("sari:lens")`` looks the full name up first, then the family (``"sari"``) with the
variant passed to the class.  Entries are added with :func:`register`; names that only exist at run
time (the Django layer's trained ``lens:VERSION`` checkpoints) come from *providers*: callables
registered with :func:`register_provider` that return a metric for a name they know, or ``None``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from metrics.suite.base import Metric, UnknownMetricError


class MetricFactory(Protocol):
    def __call__(self, variant: str | None = None, **options: Any) -> Metric: ...


Provider = Callable[[str, dict[str, Any]], Metric | None]
"""``provider(name, options)``: a metric for ``name`` (e.g. ``"lens:3"``) or ``None`` if not its name."""

_REGISTRY: dict[str, MetricFactory] = {}
_VARIANTS: dict[str, tuple[str, ...]] = {}

BUILTIN: dict[str, tuple[str, tuple[str, ...]]] = {
    "bertscore": ("metrics.suite.bertscore", ("precision", "recall", "f1")),
    "self-bertscore": ("metrics.suite.bertscore", ("precision", "recall", "f1")),
    "bleu": ("metrics.suite.bleu", ()),
    "fkgl": ("metrics.suite.fkgl", ()),
    "gleu": ("metrics.suite.gleu", ()),
    "pomme": ("metrics.suite.pomme", ()),
    "sari": ("metrics.suite.sari", ("lens", "del-precision")),
}
"""The suite's own families: family -> (module that registers it, its variants).

Their modules are imported on first use, so importing the suite (every Django process does) does not import
torch, sacreBLEU or NLTK; ``tests/metrics/suite`` checks this table against what each module registers."""
_PROVIDERS: list[tuple[str, Provider, Callable[[], Iterable[str]] | None]] = []

M = TypeVar("M", bound=type[Metric])


def register(family: str, *, variants: tuple[str, ...] = ()) -> Callable[[M], M]:
    """Class decorator: register a metric class under ``family`` (and ``family:variant`` for each variant).

    The class is called as ``cls(variant=..., **options)``.
    """

    def wrap(cls: M) -> M:
        if family in _REGISTRY:
            raise ValueError(f"metric {family!r} is already registered")
        if family in BUILTIN and BUILTIN[family] != (cls.__module__, variants):
            raise ValueError(f"metric {family!r} disagrees with its BUILTIN entry {BUILTIN[family]!r}")
        _REGISTRY[family] = cls  # type: ignore[assignment]  # subclasses take (variant, **options)
        _VARIANTS[family] = variants
        return cls

    return wrap


def register_provider(key: str, provider: Provider, *, names: Callable[[], Iterable[str]] | None = None) -> None:
    """Add (or replace, by ``key``) a run-time provider of metrics.

    The Django layer registers ``lens`` here: ``provider("lens:3", options)`` loads that checkpoint's
    scorer, and ``names()`` lists the versions available now, for error messages and ``--metric all``.
    """
    global _PROVIDERS
    _PROVIDERS = [entry for entry in _PROVIDERS if entry[0] != key]
    _PROVIDERS.append((key, provider, names))


def unregister_provider(key: str) -> None:
    global _PROVIDERS
    _PROVIDERS = [entry for entry in _PROVIDERS if entry[0] != key]


def available_metrics() -> list[str]:
    """Every name :func:`create_metric` accepts now (families, their variants, provided names)."""
    out: list[str] = []
    families = {family: variants for family, (_, variants) in BUILTIN.items()}
    families.update(_VARIANTS)
    for family, variants in families.items():
        out.append(family)
        out.extend(f"{family}:{variant}" for variant in variants)
    for _, _, names in _PROVIDERS:
        if names is not None:
            out.extend(names())
    return out


def create_metric(name: str, **options: Any) -> Metric:
    """Instantiate the metric called ``name`` (``"family"`` or ``"family:variant"``).

    Raises:
        UnknownMetricError: no registered family, variant or provider knows ``name``.
    """
    spec = name.strip()
    family, _, variant = spec.partition(":")
    for _, provider, _names in _PROVIDERS:
        metric = provider(spec, dict(options))
        if metric is not None:
            return metric
    factory = _REGISTRY.get(family)
    if factory is None and family in BUILTIN:
        importlib.import_module(BUILTIN[family][0])
        factory = _REGISTRY.get(family)
    if factory is None:
        raise UnknownMetricError(f"unknown metric {spec!r}; known: {', '.join(available_metrics())}")
    if variant and variant not in _VARIANTS[family]:
        known = ", ".join(f"{family}:{v}" for v in _VARIANTS[family]) or "none"
        raise UnknownMetricError(f"unknown variant {variant!r} of {family!r}; variants: {known}")
    return factory(variant=variant or None, **options)


def create_metrics(names: Iterable[str], options: Mapping[str, Mapping[str, Any]] | None = None) -> list[Metric]:
    """:func:`create_metric` for each name; ``"all"`` expands to every name available now.

    Args:
        names: Metric names (``"sari"``, ``"sari:lens"``, ``"all"``...).
        options: Keyword options per family, e.g. ``{"bertscore": {"model": "/models/roberta-large"}}``.
    """
    per_family = options or {}
    out: list[Metric] = []
    for name in names:
        expanded = available_metrics() if name.strip() == "all" else [name]
        for each in expanded:
            family = each.strip().partition(":")[0]
            out.append(create_metric(each, **dict(per_family.get(family, {}))))
    return out
