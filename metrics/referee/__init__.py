"""REFEREE (Huang & Kochmar, 2024): a reference-free simplification metric, free of Django.

An encoder reads "complex [SEP] output"; one linear head per supervision signal sits on the two
sides' pooled states and their difference. Trained in three stages (:func:`train`), served by
:class:`RefereeScorer` with the human head.
"""

from metrics.referee.config import (
    ALL_SIGNALS,
    HUMAN_SIGNAL,
    REFERENCE_BASED_SIGNALS,
    REFERENCE_FREE_SIGNALS,
    RefereeConfig,
    RefereeConfigError,
)
from metrics.referee.model import RefereeModel, masked_multihead_loss
from metrics.referee.scorer import RefereeScorer
from metrics.referee.training import train

__all__ = [
    "ALL_SIGNALS",
    "HUMAN_SIGNAL",
    "REFERENCE_BASED_SIGNALS",
    "REFERENCE_FREE_SIGNALS",
    "RefereeConfig",
    "RefereeConfigError",
    "RefereeModel",
    "RefereeScorer",
    "masked_multihead_loss",
    "train",
]
