"""SIERA (Yamanaka & Tokunaga, 2024): a pairwise "which is simpler" ranker, free of Django.

The ranker reads "s [SEP] s'" in both orders; a version holds one model per seed and scores an output by
the probability that it is simpler than its source (:class:`SieraScorer`).

The names below are loaded on first use (PEP 562): importing ``metrics.siera`` or its ``config`` and
``kind`` modules does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metrics.learned.lazy import lazy_exports

if TYPE_CHECKING:
    from metrics.siera.config import SieraConfig
    from metrics.siera.data import (
        apply_edits,
        intermediates,
        rated_pairs,
        silver_pairs,
        silver_similarity,
        token_edits,
        training_pairs,
    )
    from metrics.siera.model import SieraModel
    from metrics.siera.scorer import SieraScorer
    from metrics.siera.training import train, train_on_pairs

_HOMES = {
    "metrics.siera.config": ("SieraConfig",),
    "metrics.siera.data": ("apply_edits", "intermediates", "rated_pairs", "silver_pairs", "silver_similarity",
                           "token_edits", "training_pairs"),
    "metrics.siera.model": ("SieraModel",),
    "metrics.siera.scorer": ("SieraScorer",),
    "metrics.siera.training": ("train", "train_on_pairs"),
}
__all__ = [
    "SieraConfig", "SieraModel", "SieraScorer", "apply_edits", "intermediates", "rated_pairs", "silver_pairs",
    "silver_similarity", "token_edits", "train", "train_on_pairs", "training_pairs",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
