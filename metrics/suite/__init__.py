"""The metric suite: standard text-simplification metrics behind one registry, free of Django.

``create_metric("sari")`` returns a :class:`Metric`; ``metric.score_batch(items)`` scores
:class:`Item` objects (``complex``, ``output``, ``references``) and every metric states its exact variant
in ``metric.signature`` (sacreBLEU style).  Families: ``fkgl``, ``bleu``, ``gleu``, ``sari``
(``sari:lens``), ``bertscore``, ``self-bertscore`` and ``pomme``; run-time entries (the Django layer's
``lens:VERSION``) come from :func:`register_provider`.
"""

from metrics.suite.base import (
    EmptyTextError,
    Item,
    Metric,
    MetricError,
    MissingReferencesError,
    Score,
    UnknownMetricError,
)
from metrics.suite.registry import (
    available_metrics,
    create_metric,
    create_metrics,
    register,
    register_provider,
    unregister_provider,
)
from metrics.suite.version import SUITE_VERSION

__all__ = [
    "SUITE_VERSION",
    "EmptyTextError",
    "Item",
    "Metric",
    "MetricError",
    "MissingReferencesError",
    "Score",
    "UnknownMetricError",
    "available_metrics",
    "clear_caches",
    "create_metric",
    "create_metrics",
    "register",
    "register_provider",
    "unregister_provider",
]


def clear_caches() -> None:
    """Forget every cached tokenisation and n-gram count (for cold-start timings; never needed otherwise)."""
    from metrics.suite import bleu as _bleu
    from metrics.suite import gleu as _gleu
    from metrics.suite import sari as _sari
    from metrics.suite import tokenize as _tokenize

    for cached in (
        _tokenize._nltk_tokens,
        _tokenize.tokenize_13a,
        _sari._easse_grams,
        _sari._lens_tokens,
        _sari._lens_grams,
        _gleu._everygrams,
        _sari._easse_context,
        _sari._lens_context,
        _bleu._sentence_scorer,
    ):
        cached.cache_clear()
