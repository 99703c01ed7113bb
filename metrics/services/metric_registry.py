"""The one place the product turns a metric name into a suite metric: the command, the API and the page.

``metric_get("sari")``, ``metric_get("lens:latest")``... return a :class:`metrics.suite.Metric`; every
bad name (unknown metric, unknown variant, unknown or unusable LENS version) is a ``ServiceError`` naming
the field.  Trained LENS versions enter the suite's registry through the ``lens`` provider registered
here (``MetricsConfig.ready``): ``lens`` = the active version, ``lens:latest`` = the newest succeeded one,
``lens:<id>`` = that version; each is stored and shown under its concrete name ``lens:<id>``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings

from core.errors import ServiceError
from metrics.models import LearnedVersion
from metrics.suite import (
    SUITE_VERSION,
    Item,
    Metric,
    MetricError,
    Score,
    UnknownMetricError,
    available_metrics,
    create_metric,
    register_provider,
)

PRODUCT_METRICS = ("fkgl", "bleu", "gleu", "sari", "sari:lens", "bertscore", "self-bertscore")
"""What ``all`` means in the product: one entry per family (BERTScore as F1), and every succeeded LENS."""

ACCELERATED_FAMILIES = frozenset({"bertscore", "self-bertscore", "lens", "referee", "siera"})
"""Families whose scoring runs on the ``gpu`` queue when one is configured."""
LEARNED_FAMILIES = ("referee", "siera")
"""Reference-free learned metrics served like LENS (``referee[:active|latest|<id>]``, ``siera[:...]``)."""


@lru_cache(maxsize=32)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _weights_sha256(files: Sequence[Path]) -> list[str]:
    """sha256 of each weight file that exists (cached on its path, mtime and size)."""
    digests = []
    for weights in files:
        try:
            stat = weights.stat()
        except OSError:
            continue
        digests.append(_file_sha256(str(weights), stat.st_mtime_ns, stat.st_size))
    return digests


def checkpoint_sha256(checkpoint_path: str) -> str:
    """sha256 of a LENS checkpoint's weights (``model.safetensors``); ``"missing"`` when the file is gone."""
    from metrics.lens.checkpoint import WEIGHTS_FILE

    digests = _weights_sha256([Path(checkpoint_path) / WEIGHTS_FILE])
    return digests[0] if digests else "missing"


class LensMetric(Metric):
    """A trained LENS version as a suite metric; the value is the raw prediction z (max over references).

    Components: ``score`` (100 * Phi(z)) and ``truncated`` (1 when a text was cut to the encoder's limit).
    """

    needs_references = True
    higher_is_better = True
    needs_complex = True
    scores_empty_outputs = False

    def __init__(self, version: LearnedVersion) -> None:
        self.version = version
        self.name = f"lens:{version.pk}"

    @property
    def signature(self) -> str:
        v = self.version
        encoder = (v.encoder_identity or {}).get("name") or v.encoder
        sha = checkpoint_sha256(v.checkpoint_path)[:12]
        # bf16 and int8 serving scores differ slightly from fp32 ones: they must not share a signature
        precision = settings.LEARNED_SERVING_PRECISION
        return (f"lens:v{v.pk}|enc:{encoder}|k:{v.k}|loss:{lens_loss_name(v.hyperparameters)}|seed:{v.seed}|"
                f"ckpt:{sha}|{precision}|value:z|version:{SUITE_VERSION}")

    def _score(self, items: Sequence[Item]) -> list[Score]:
        from metrics.lens import ScoreInput
        from metrics.services.scoring import lens_scorer

        predictions = lens_scorer(self.version).predict(
            [ScoreInput(i.complex, i.output, i.references) for i in items]
        )
        return [Score(p.z, {"score": p.score, "truncated": float(p.truncated)}) for p in predictions]


def lens_loss_name(hyperparameters: dict[str, Any]) -> str:
    """The training loss a LENS version's ``TrainConfig`` names: ``topk`` (the paper's Eq. 1) or
    ``topk+rank<W>`` with the within-source ranking term. A version trained before the term existed has no
    ``rank_weight`` and was trained with Eq. 1 alone."""
    weight = float(hyperparameters.get("rank_weight") or 0.0)
    return f"topk+rank{weight:g}" if weight else "topk"


def _lens_version(which: str) -> LearnedVersion:
    from metrics.selectors import lens_active_version, lens_latest_version

    if which in ("", "active"):
        version = lens_active_version()
        if version is None:
            raise UnknownMetricError("lens: no LENS version is active (promote one, or use lens:latest / lens:<id>)")
    elif which == "latest":
        version = lens_latest_version()
        if version is None:
            raise UnknownMetricError("lens:latest: no LENS version has succeeded yet")
    elif which.isascii() and which.isdigit() and len(which) <= 18:
        version = LearnedVersion.objects.filter(pk=int(which), kind=LearnedVersion.Kind.LENS).first()
        if version is None:
            raise UnknownMetricError(f"lens:{which}: no LENS version {which}")
    else:
        raise UnknownMetricError(f"unknown variant {which!r} of 'lens'; variants: lens, lens:latest, lens:<version id>")
    if version.status != LearnedVersion.Status.SUCCEEDED:
        raise UnknownMetricError(
            f"lens:{version.pk}: LENS v{version.pk} is {version.status}; only succeeded versions score"
        )
    return version


def lens_provider(name: str, options: dict[str, Any]) -> Metric | None:
    """The suite provider of ``lens[:active|latest|<id>]`` (None for any other name)."""
    family, _, which = name.partition(":")
    if family != "lens":
        return None
    return LensMetric(_lens_version(which))


def lens_metric_names() -> list[str]:
    """``lens:<id>`` of every succeeded version, newest first."""
    from metrics.selectors import learned_succeeded_ids

    return [f"lens:{pk}" for pk in learned_succeeded_ids("lens")]


class LearnedMetric(Metric):
    """A trained REFEREE or SIERA version as a suite metric. Reference-free: it reads the complex sentence
    and the output only. REFEREE's value is the predicted z-scored rating, SIERA's the probability that the
    output is simpler than its source. Component: ``truncated`` (1 when "complex [SEP] output" is longer
    than the version reads, so the end of the output was not read)."""

    needs_references = False
    higher_is_better = True
    needs_complex = True
    scores_empty_outputs = False

    def __init__(self, version: LearnedVersion) -> None:
        self.version = version
        self.name = f"{version.kind}:{version.pk}"

    @property
    def signature(self) -> str:
        v = self.version
        encoder = (v.encoder_identity or {}).get("name_or_path") or v.encoder
        sha = learned_checkpoint_sha256(v.checkpoint_path)[:12]
        value = "p_simpler" if v.kind == "siera" else "z"
        aspect = (v.hyperparameters or {}).get("aspect")  # REFEREE fine-tuned on one aspect of the ratings
        trained_on = f"aspect:{aspect}|" if aspect else ""
        return f"{v.kind}:v{v.pk}|enc:{Path(str(encoder)).name}|seed:{v.seed}|ckpt:{sha}|value:{value}|" \
               f"{trained_on}version:{SUITE_VERSION}"

    def _score(self, items: Sequence[Item]) -> list[Score]:
        from metrics.services.learned import learned_kind
        from metrics.services.scoring import learned_scorer

        kind = learned_kind(self.version.kind)
        return [Score(value, parts) for value, parts in kind.score(learned_scorer(self.version), items)]


def learned_checkpoint_sha256(checkpoint_path: str) -> str:
    """sha256 of a REFEREE or SIERA checkpoint's weight files (all ``*.safetensors``, in name order)."""
    digests = _weights_sha256(sorted(Path(checkpoint_path).glob("*.safetensors")))
    return hashlib.sha256("|".join(digests).encode()).hexdigest() if digests else "missing"


def _learned_version(family: str, which: str) -> LearnedVersion:
    from metrics.models import KIND_LABELS
    from metrics.selectors import learned_active_version, learned_latest_version

    label = KIND_LABELS[family]
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
    """The suite provider of ``referee[:...]`` and ``siera[:...]`` (None for any other name)."""
    family, _, which = name.partition(":")
    if family not in LEARNED_FAMILIES:
        return None
    return LearnedMetric(_learned_version(family, which))


def learned_metric_names() -> list[str]:
    """``referee:<id>`` and ``siera:<id>`` of every succeeded version, newest first."""
    from metrics.selectors import learned_succeeded_ids

    return [f"{family}:{pk}" for family in LEARNED_FAMILIES for pk in learned_succeeded_ids(family)]


def register_lens_provider() -> None:
    """Registered without a name list: the suite's own ``available_metrics`` stays free of database reads
    (the pure tests and the JSONL command use it); the product's ``all`` adds the versions itself."""
    register_provider("lens", lens_provider)
    register_provider("learned", learned_provider)


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
            message += ", lens, lens:latest, lens:<version id>, referee[:<id>], siera[:<id>]"
        raise ServiceError(message, field=field) from None
    except MetricError as exc:
        raise ServiceError(str(exc), field=field) from None


def metric_names(spec: str | Sequence[str], *, field: str = "metric") -> list[str]:
    """Metric names from ``"all"``, ``"sari,fkgl"`` or a list: ``all`` = the product set plus every LENS."""
    raw = [spec] if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for part in raw:
        for name in (p.strip() for p in part.split(",")):
            if not name:
                continue
            expanded = [*PRODUCT_METRICS, *lens_metric_names(), *learned_metric_names()] if name == "all" else [name]
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


def metric_is_accelerated(metric: Metric) -> bool:
    return metric.name.partition(":")[0] in ACCELERATED_FAMILIES


def metric_catalogue() -> list[str]:
    """Every name the registry accepts now (for forms and error messages)."""
    return available_metrics()
