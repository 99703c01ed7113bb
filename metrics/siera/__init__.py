"""SIERA (Yamanaka & Tokunaga, 2024): a pairwise "which is simpler" ranker, free of Django.

The ranker reads "s [SEP] s'" in both orders; a version holds one model per seed and scores an output by
the probability that it is simpler than its source (:class:`SieraScorer`).
"""

from metrics.siera.config import SieraConfig, SieraConfigError
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

__all__ = [
    "SieraConfig",
    "SieraConfigError",
    "SieraModel",
    "SieraScorer",
    "apply_edits",
    "intermediates",
    "rated_pairs",
    "silver_pairs",
    "silver_similarity",
    "token_edits",
    "train",
    "train_on_pairs",
    "training_pairs",
]
