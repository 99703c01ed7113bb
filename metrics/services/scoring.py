"""Serving learned metrics: a per-process cache of loaded versions, and LENS batch scoring with limits.

Workers (web or Celery) keep the last ``CACHE_SIZE`` loaded versions in memory, keyed by version id; the
active version is looked up per request, so a promotion takes effect on the next request without any
cache invalidation, and the previously active model keeps serving until the promotion commits.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

from core.errors import Conflict, ServiceError
from metrics.lens.types import Prediction, ScoreInput
from metrics.models import LearnedVersion
from metrics.selectors import VersionRef, learned_version_get
from metrics.services.learned import learned_kind

if TYPE_CHECKING:
    from metrics.learned.kinds import Scorer
    from metrics.lens.scorer import LensScorer

logger = logging.getLogger(__name__)

MAX_ITEMS = 64
MAX_TEXT_CHARS = 2000
MAX_REFERENCES = 20
CACHE_SIZE = 2


# --- Which version serves -------------------------------------------------------------------------------


def lens_version_for_scoring(ref: VersionRef = "active") -> LearnedVersion:
    """The version ``ref`` names (it must have succeeded); by default the active one."""
    version = learned_version_get(ref)
    if version is None:
        if ref == "latest":
            raise Conflict("no LENS version has succeeded yet; train one first", field="version")
        raise Conflict("no LENS version is active; promote one first (or pass ?version=<id>)")
    if version.kind != LearnedVersion.Kind.LENS:
        raise Conflict(f"v{version.pk} is a {version.label} version, not LENS; score it as the metric "
                       f"{version.kind}:{version.pk}", field="version")
    if version.status != LearnedVersion.Status.SUCCEEDED:
        raise Conflict(f"LENS v{version.pk} is {version.status}; only succeeded versions can score", field="version")
    return version


# --- Process-level model cache --------------------------------------------------------------------------


class _ScorerCache:
    """LRU of loaded scorers of every learned kind, keyed by version id (a loaded MiniLM is ~100 MB,
    RoBERTa-large ~1.4 GB); the kind registry (``metrics.services.learned``) says how each kind loads.

    The checkpoint path is part of the key, so a recreated database reusing an id never serves a stale model,
    and so is the serving precision, which the scores' signature names.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[int, str, str], Scorer] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, version: LearnedVersion) -> LensScorer:
        from metrics.lens.scorer import LensScorer

        scorer = self.get_loaded(version)
        assert isinstance(scorer, LensScorer), f"{version.label} v{version.pk} is not a LENS version"
        return scorer

    def get_loaded(self, version: LearnedVersion) -> Scorer:
        """The loaded scorer of ``version``, whatever its kind."""
        with self._lock:
            key = (version.pk, version.checkpoint_path, settings.LEARNED_SERVING_PRECISION)
            scorer = self._items.get(key)
            if scorer is not None:
                self._items.move_to_end(key)
                return scorer
            device = settings.LEARNED_SERVING_DEVICE or None
            from metrics.learned.checkpoint import CheckpointError

            try:
                scorer = learned_kind(version.kind).load(Path(version.checkpoint_path), device=device,
                                                         precision=settings.LEARNED_SERVING_PRECISION)
            except CheckpointError as error:  # moved or deleted on disk: the path stays in the server's log
                logger.warning("learned version %s: checkpoint not loaded: %s", version.pk, error)
                raise Conflict(f"{version.label} v{version.pk}: its checkpoint cannot be loaded (moved or removed "
                               "on the server); choose another version or ask an admin", field="version") from None
            self._items[key] = scorer
            while len(self._items) > self.size:
                self._items.popitem(last=False)
            return scorer

    def loaded(self) -> list[int]:
        return [pk for pk, *_ in self._items]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


scorer_cache = _ScorerCache(CACHE_SIZE)


def lens_scorer(version: LearnedVersion) -> LensScorer:
    return scorer_cache.get(version)


def learned_scorer(version: LearnedVersion) -> Scorer:
    """The loaded scorer of a learned version of any kind (kept per version in the process cache)."""
    return scorer_cache.get_loaded(version)


# --- Scoring a batch ------------------------------------------------------------------------------------


def _validate(items: Sequence[ScoreInput]) -> None:
    if not items:
        raise ServiceError("send at least one item", field="items")
    if len(items) > MAX_ITEMS:
        raise ServiceError(f"at most {MAX_ITEMS} items per request (got {len(items)}); split the batch",
                           field="items")
    for i, item in enumerate(items):
        if not item.references:
            raise ServiceError(f"items[{i}]: at least one reference is required", field="items")
        if len(item.references) > MAX_REFERENCES:
            raise ServiceError(f"items[{i}]: at most {MAX_REFERENCES} references", field="items")
        texts = [("complex", item.complex), ("output", item.output)]
        texts += [(f"references[{j}]", r) for j, r in enumerate(item.references)]
        for label, text in texts:
            if not text or not text.strip():
                raise ServiceError(f"items[{i}].{label}: empty text", field="items")
            if len(text) > MAX_TEXT_CHARS:
                raise ServiceError(
                    f"items[{i}].{label}: {len(text)} characters, the limit is {MAX_TEXT_CHARS}", field="items"
                )


def lens_score_items(
    *, items: Sequence[ScoreInput], version: LearnedVersion | None = None, batch_size: int = 32
) -> tuple[LearnedVersion, list[Prediction]]:
    """Score (complex, output, references) triples with ``version`` (default: the active one).

    Raises:
        ServiceError: Too many items, too long or empty texts, missing references (400); no active or
            unusable version (409).
    """
    items = [ScoreInput(i.complex, i.output, tuple(i.references)) for i in items]
    _validate(items)
    version = version or lens_version_for_scoring()
    return version, lens_scorer(version).predict(items, batch_size=batch_size)
